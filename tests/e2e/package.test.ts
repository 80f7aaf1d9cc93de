import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readZip } from '../../bench/zip.ts';
import { ROUTES } from '../helpers/routes.ts';

const run = promisify(execFile);
const slsBin = createRequire(import.meta.url).resolve('osls/bin/serverless.js');

let out: string;
let template: { Resources: Record<string, { Type: string; Properties: any }> };

beforeAll(async () => {
  out = await mkdtemp(path.join(tmpdir(), 'payhere-package-'));
  // `npm run package` runs exactly this; no AWS credentials are needed to package.
  await run(process.execPath, [slsBin, 'package', '--stage', 'test', '--package', out], {
    cwd: path.resolve(import.meta.dirname, '../..'),
    // Deployed defaults: nothing in this environment may override them.
    env: {
      ...process.env,
      ESBUILD_WORK_FOLDER: '.esbuild-package-test',
      GATEWAY_RATE_LIMIT: undefined,
      IDEMPOTENCY_TTL_SECONDS: undefined,
    },
  });
  template = JSON.parse(await readFile(path.join(out, 'cloudformation-template-update-stack.json'), 'utf8'));
}, 120_000);

afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('osls package', () => {
  it('produces one artifact per function', async () => {
    const zips = (await readdir(out)).filter((file) => file.endsWith('.zip')).sort();

    expect(zips).toEqual(
      Object.keys(ROUTES)
        .map((name) => `${name}.zip`)
        .sort(),
    );
  });

  it('declares every function on nodejs24.x arm64 with its route', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    const methods = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::ApiGateway::Method' && r.Properties.HttpMethod !== 'OPTIONS')
      .map((r) => r.Properties.HttpMethod)
      .sort();

    expect(functions).toHaveLength(9);
    for (const fn of functions) {
      expect(fn.Properties.Runtime).toBe('nodejs24.x');
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.Timeout).toBeLessThan(29);
    }
    expect(methods).toEqual(
      Object.values(ROUTES)
        .map((r) => r.method)
        .sort(),
    );
  });
});

describe('the idempotency table in the packaged template', () => {
  const MONEY_FUNCTIONS = ['Charge', 'Capture', 'Refund', 'RetrySubscription'];
  const ITEM_ACTIONS = ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];

  const roleOf = (name: string) =>
    template.Resources[`${name}LambdaFunction`]!.Properties.Role['Fn::GetAtt'][0];
  const statementsOf = (role: string): any[] =>
    template.Resources[role]!.Properties.Policies.flatMap((policy: any) => policy.PolicyDocument.Statement);
  const touchesDynamoDB = (statement: any) =>
    [statement.Action].flat().some((action: string) => action.startsWith('dynamodb:'));

  it('is on-demand, keyed by pk, expires items by TTL and keeps point-in-time recovery', () => {
    const tables = Object.values(template.Resources).filter((r) => r.Type === 'AWS::DynamoDB::Table');

    expect(tables).toHaveLength(1);
    expect(tables[0]!.Properties).toMatchObject({
      TableName: 'payhere-payments-api-test-idempotency',
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
  });

  it('gives every function the table name, and no deployed function a local endpoint', () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables.IDEMPOTENCY_TABLE).toBe(
        'payhere-payments-api-test-idempotency',
      );
      expect(fn.Properties.Environment.Variables.DYNAMODB_ENDPOINT ?? '').toBe('');
    }
  });

  it('lets only the money functions use the table, with exactly the four item operations on it', () => {
    const moneyRoles = new Set(MONEY_FUNCTIONS.map(roleOf));
    const otherRoles = new Set(
      Object.keys(template.Resources)
        .filter((id) => id.endsWith('LambdaFunction'))
        .map((id) => id.replace(/LambdaFunction$/, ''))
        .filter((name) => !MONEY_FUNCTIONS.includes(name))
        .map(roleOf),
    );

    expect(moneyRoles.size).toBe(1);
    const [moneyRole] = moneyRoles;
    expect(otherRoles.has(moneyRole!)).toBe(false);
    const tableStatements = statementsOf(moneyRole!).filter(touchesDynamoDB);
    expect(tableStatements).toHaveLength(1);
    expect([tableStatements[0].Action].flat().sort()).toEqual(ITEM_ACTIONS);
    expect(tableStatements[0].Resource).toEqual([{ 'Fn::GetAtt': ['IdempotencyTable', 'Arn'] }]);
    for (const role of otherRoles) expect(statementsOf(role).filter(touchesDynamoDB)).toEqual([]);
  });

  it('gives the money role every permission the default role has (a provider-level statement must reach it too)', () => {
    const moneyRole = roleOf('Charge');
    const defaultStatements = statementsOf('IamRoleLambdaExecution');
    // The default role's log statements name the same log groups with a Fn::Sub; compare by action.
    const moneyActions = new Set(statementsOf(moneyRole).flatMap((statement) => [statement.Action].flat()));

    for (const statement of defaultStatements) {
      for (const action of [statement.Action].flat()) expect(moneyActions).toContain(action);
    }
  });
});

describe('deployed defaults', () => {
  it("keep every function under PayHere's 20 requests per 10 s and idempotent answers for 24 h", () => {
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

    for (const fn of functions) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        GATEWAY_RATE_LIMIT: '20/10000',
        IDEMPOTENCY_TTL_SECONDS: '86400',
      });
    }
  });
});

describe('stack traces of a packaged function', () => {
  /** Unpack charge's artifact and load it with no configuration, so its start-up throws. */
  async function crashAtStartUp(nodeFlags: string[]): Promise<string> {
    const dir = path.join(out, 'unpacked');
    for (const entry of readZip(await readFile(path.join(out, 'charge.zip')))) {
      if (entry.name.endsWith('/')) continue;
      await mkdir(path.dirname(path.join(dir, entry.name)), { recursive: true });
      await writeFile(path.join(dir, entry.name), entry.data());
    }
    const load = `await import(${JSON.stringify(path.join(dir, 'functions', 'charge.mjs'))})`;
    const failure = await run(process.execPath, [...nodeFlags, '--input-type=module', '-e', load], {
      env: { PATH: process.env.PATH },
    }).then(
      () => undefined,
      (error: { stderr: string }) => error,
    );
    expect(failure, 'the function started without its configuration').toBeDefined();
    return failure!.stderr;
  }

  it('point at the TypeScript sources under --enable-source-maps, as serverless.yml sets it', async () => {
    const stderr = await crashAtStartUp(['--enable-source-maps']);

    expect(stderr).toMatch(/Missing configuration/);
    expect(stderr).toMatch(/lib\/gateway\/index\.ts:\d+:\d+/);
    expect(stderr).toMatch(/functions\/charge\.ts:\d+:\d+/);
    const environment = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Function')!
      .Properties.Environment.Variables;
    expect(environment.NODE_OPTIONS).toMatch(/--enable-source-maps/);
  });

  it('point only at the minified bundle without it (what the source map buys)', async () => {
    const stderr = await crashAtStartUp([]);

    expect(stderr).toMatch(/charge\.mjs:\d+:\d+/);
    expect(stderr).not.toMatch(/\.ts:\d+/);
  });
});
