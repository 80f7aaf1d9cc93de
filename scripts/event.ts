/**
 * `npm run -s event -- <function> [--scope "<scopes>"] [--sub <subject>]`: prints events/<function>.json
 * with a fresh token from the local issuer `npm start` runs (as `npm run token` makes them: by
 * default the merchant's, with every scope), for `sls invoke local --data`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ALL_SCOPES, readIssuerFile, signToken } from './issuer.ts';

const root = path.resolve(import.meta.dirname, '..');
const USAGE = 'Usage: npm run -s event -- <function> [--scope "payments:read payments:charge"] [--sub me]';

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      scope: { type: 'string', default: ALL_SCOPES },
      sub: { type: 'string', default: 'local-developer' },
    },
  });
  const [name] = positionals;
  if (!name || !/^[A-Za-z]+$/.test(name)) throw new Error(USAGE);
  const file = path.join(root, 'events', `${name}.json`);
  const event = JSON.parse(
    await readFile(file, 'utf8').catch(() => {
      throw new Error(`No sample event ${path.relative(root, file)}.\n${USAGE}`);
    }),
  ) as { headers: Record<string, string> };
  // PayHere's notification has no token: its body is signed.
  if (event.headers.Authorization !== undefined) {
    const token = await signToken(await readIssuerFile(), { scope: values.scope.trim(), sub: values.sub });
    event.headers.Authorization = `Bearer ${token}`;
  }
  console.log(JSON.stringify(event));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
