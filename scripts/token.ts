/**
 * `npm run -s token -- [--scope "<scopes>"] [--expires-in <seconds>] [--sub <subject>]`: prints a
 * token that the API started by `npm start` accepts, signed with the local issuer's key
 * (.local/issuer.json, or LOCAL_ISSUER_FILE). Defaults: a merchant token (every scope and
 * `merchant`), one hour, subject `local-developer`; `--scope` without `merchant` makes a customer's.
 */
import { parseArgs } from 'node:util';
import { ALL_SCOPES, readIssuerFile, signToken } from './issuer.ts';

const USAGE =
  'Usage: npm run -s token -- [--scope "payments:read payments:charge"] [--expires-in 3600] [--sub me]\n' +
  'Without --scope: a merchant token with every scope. A customer token is one without `merchant`.';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scope: { type: 'string', default: ALL_SCOPES },
      'expires-in': { type: 'string', default: '3600' },
      sub: { type: 'string', default: 'local-developer' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const expiresInSeconds = Number(values['expires-in']);
  if (!Number.isSafeInteger(expiresInSeconds) || expiresInSeconds < 1) {
    throw new Error(`--expires-in must be a whole number of seconds (at least 1).\n${USAGE}`);
  }
  const identity = await readIssuerFile();
  console.log(await signToken(identity, { scope: values.scope.trim(), sub: values.sub, expiresInSeconds }));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
