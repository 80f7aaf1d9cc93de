/**
 * vitest setupFiles of the unit tier (`npm run test:unit`, vitest.config.ts): the environment
 * tests/setup/environment.ts gives the other tests, with the tables named but no DynamoDB behind
 * them, and a guard that keeps the tier what it promises: a test that starts a server (the sandbox,
 * any listener) or a child process (node, osls, esbuild's service, a browser) fails, saying so.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import { LOCAL_AWS_ENVIRONMENT, LOCAL_TABLES_ENVIRONMENT } from '../../scripts/local-dynamodb.ts';
import { GENEROUS_SHARES, LOOK_AGAIN_AT_ONCE } from '../helpers/test-environment.ts';

Object.assign(
  process.env,
  LOCAL_AWS_ENVIRONMENT,
  LOCAL_TABLES_ENVIRONMENT,
  GENEROUS_SHARES,
  LOOK_AGAIN_AT_ONCE,
  {
    // The discard port: nothing listens, so a table read fails at once rather than hanging.
    DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
  },
);

function refuse(what: string): never {
  throw new Error(
    `${what} in the unit tier: this test belongs with the integration tests (vitest.config.ts, UNIT)`,
  );
}

net.Server.prototype.listen = () => refuse('a server');
for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
  Object.defineProperty(childProcess, name, { value: () => refuse(`a child process (${name})`) });
}
// ESM imports of node:child_process see the replacements too.
syncBuiltinESMExports();
