import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slsRefusal } from '../helpers/package.ts';

/**
 * What a production deploy refuses (`osls package` and `osls deploy`, no AWS account): the
 * configuration that fails safe. tests/e2e/package-security.test.ts checks the default template.
 */
const DEPLOY_ENV = {
  GATEWAY_BASE_URL: 'https://www.payhere.lk',
  AUTH_ISSUER: 'https://issuer.example.com/',
  AUTH_AUDIENCE: 'payhere-payments-api',
  AUTH_JWKS_URL: 'https://issuer.example.com/.well-known/jwks.json',
};
let scratch: string;
const refusals = new Map<string, string>();

/**
 * Refusals stop osls before it builds anything: run them all at once.
 * Each plugin's other refusals are checked on the plugin itself (tests/unit/deploy-plugins.test.ts).
 */
const REFUSED: Array<[string, string[], Record<string, string>, RegExp]> = [
  [
    'a deployed stage without GATEWAY_BASE_URL',
    ['package', '--stage', 'prod'],
    { ...DEPLOY_ENV, GATEWAY_BASE_URL: '' },
    /GATEWAY_BASE_URL is not set: the stage "prod" must name its gateway, https:\/\/www\.payhere\.lk .* Only --stage local falls back to the sandbox\./,
  ],
  [
    'a gateway over plain http',
    ['package', '--stage', 'prod'],
    { ...DEPLOY_ENV, GATEWAY_BASE_URL: 'http://www.payhere.lk' },
    /GATEWAY_BASE_URL must be an absolute https URL \(http only on loopback\)\./,
  ],
  [
    'a deploy of the stage local',
    ['deploy', '--stage', 'local'],
    {},
    /The stage "local" is for npm start and the tests only and is never deployed/,
  ],
];

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'payhere-package-production-'));
  const artifacts = (i: number) => ['--package', path.join(scratch, `refused-${i}`)];
  const outputs = await Promise.all(
    REFUSED.map(([, args, env], i) =>
      slsRefusal(args[0] === 'package' ? [...args, ...artifacts(i)] : args, env),
    ),
  );
  REFUSED.forEach(([name], i) => {
    refusals.set(name, outputs[i]!);
  });
}, 180_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('configuration that fails safe', () => {
  it.each(REFUSED.map(([name, , , message]) => [name, message] as const))(
    'refuses %s, saying why',
    (name, message) => {
      expect(refusals.get(name)).toMatch(message);
    },
  );
});
