import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { Pool } from 'undici';
import { SANDBOX_CREDENTIALS } from '../sandbox/server.ts';
import { IDEMPOTENT_ROUTES, type RouteName } from '../tests/helpers/routes.ts';
import { OUT, ROOT } from './build.ts';
import type { BenchEnvironment, Prepared, UpstreamCall } from './environment.ts';

const run = promisify(execFile);
const CHILD = path.join(ROOT, 'bench', 'warm-child.ts');

/** What the warm runner needs: requests prepared ahead, and where the floor sends its own. */
export interface WarmPlan {
  route: RouteName;
  bundle: string;
  warmUp: number;
  requests: Array<{ ours: Prepared['event']; bare: UpstreamCall }>;
  /** Retry and cancel change a subscription's state: the seeded data is restored before each. */
  resetStateFirst: boolean;
  sandboxUrl: string;
  dynamodbEndpoint: string;
  table: string;
}

export interface WarmSamples {
  /** The whole handler: our code plus its upstream round trips. */
  handlerMs: number[];
  /** The same upstream work done bare. */
  floorMs: number[];
  statusCodes: number[];
}

/**
 * What the least code could do for the same request: one bare undici request to the same
 * sandbox endpoint with a cached token, plus, on money routes, the two conditional writes an
 * idempotency record needs at least (claim the key, store the answer) on the same table.
 */
export function bareFloor(plan: Pick<WarmPlan, 'sandboxUrl' | 'dynamodbEndpoint' | 'table'>) {
  const pool = new Pool(plan.sandboxUrl, { connections: 4 });
  const dynamodb = new DynamoDBClient({ endpoint: plan.dynamodbEndpoint, region: 'ap-south-1' });
  let token: Promise<string> | undefined;

  async function accessToken(): Promise<string> {
    const basic = Buffer.from(`${SANDBOX_CREDENTIALS.appId}:${SANDBOX_CREDENTIALS.appSecret}`).toString(
      'base64',
    );
    const response = await pool.request({
      method: 'POST',
      path: '/merchant/v1/oauth/token',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    });
    return ((await response.body.json()) as { access_token: string }).access_token;
  }

  async function idempotencyWrites(): Promise<void> {
    const pk = { S: `bench#${crypto.randomUUID()}` };
    await dynamodb.send(
      new PutItemCommand({
        TableName: plan.table,
        Item: { pk, state: { S: 'in_progress' } },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: plan.table,
        Key: { pk },
        UpdateExpression: 'SET #s = :s, #r = :r',
        ExpressionAttributeNames: { '#s': 'state', '#r': 'response' },
        ExpressionAttributeValues: { ':s': { S: 'complete' }, ':r': { S: '{"statusCode":200}' } },
      }),
    );
  }

  return {
    async send(route: RouteName, call: UpstreamCall): Promise<void> {
      token ??= accessToken();
      if (IDEMPOTENT_ROUTES.includes(route)) await idempotencyWrites();
      const response = await pool.request({
        method: call.method,
        path: call.path,
        headers: {
          authorization: `Bearer ${await token}`,
          ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: call.body ?? null,
      });
      await response.body.text();
    },
    resetState: async () => {
      const response = await pool.request({ method: 'POST', path: '/__sandbox/reset-state' });
      await response.body.text();
    },
    close: () => Promise.all([pool.close(), dynamodb.destroy()]),
  };
}

/**
 * Prepare `warmUp + count` requests for `route` (fresh orders, holds to capture...), then run them
 * in a process of their own holding only the function's bundle: the sandbox and DynamoDB stay in
 * this one, so their work and garbage never land in the handler's timings.
 */
export async function measureWarm(
  route: RouteName,
  bundle: string,
  environment: BenchEnvironment,
  count: number,
  warmUp: number,
): Promise<WarmSamples> {
  const requests: WarmPlan['requests'] = [];
  for (let i = 0; i < warmUp + count; i++) {
    requests.push({
      ours: (await environment.prepare(route)).event,
      bare: (await environment.prepare(route)).upstream,
    });
  }
  const plan: WarmPlan = {
    route,
    bundle,
    warmUp,
    requests,
    resetStateFirst: route === 'retrySubscription' || route === 'cancelSubscription',
    sandboxUrl: environment.sandbox.url,
    dynamodbEndpoint: environment.dynamodb.endpoint,
    table: environment.env.IDEMPOTENCY_TABLE!,
  };
  const planFile = path.join(OUT, `warm-${route}.json`);
  await writeFile(planFile, JSON.stringify(plan));
  const { stdout } = await run(process.execPath, ['--enable-source-maps', CHILD, planFile], {
    env: { ...process.env, ...environment.env },
    maxBuffer: 16 * 1024 * 1024,
    timeout: 300_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as WarmSamples;
}
