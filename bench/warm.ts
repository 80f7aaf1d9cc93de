import { pathToFileURL } from 'node:url';
import { DynamoDBClient, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { Pool } from 'undici';
import { SANDBOX_CREDENTIALS } from '../sandbox/server.ts';
import { lambdaContext } from '../tests/helpers/events.ts';
import { IDEMPOTENT_ROUTES, type RouteName } from '../tests/helpers/routes.ts';
import type { BenchEnvironment, UpstreamCall } from './environment.ts';

type Handler = (event: unknown, context: unknown) => Promise<APIGatewayProxyResult>;

export interface WarmSamples {
  /** The whole handler: our code plus its upstream round trips. */
  handlerMs: number[];
  /** The same upstream work done bare: undici to the sandbox (and the idempotency writes). */
  floorMs: number[];
  statusCodes: Set<number>;
}

/** Import a function's bundle into this process, as a warm container holds it. */
export async function loadHandler(bundle: string): Promise<Handler> {
  return ((await import(pathToFileURL(bundle).href)) as { handler: Handler }).handler;
}

/**
 * What the least code could do for the same request: one bare undici request to the same
 * sandbox endpoint with a cached token, plus, on money routes, the two conditional writes an
 * idempotency record needs at least (claim the key, store the answer) on the same table.
 */
export function bareFloor(environment: BenchEnvironment) {
  const pool = new Pool(environment.sandbox.url, { connections: 4 });
  const dynamodb = new DynamoDBClient({ endpoint: environment.dynamodb.endpoint, region: 'ap-south-1' });
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
    const TableName = environment.env.IDEMPOTENCY_TABLE!;
    const pk = { S: `bench#${crypto.randomUUID()}` };
    await dynamodb.send(
      new PutItemCommand({
        TableName,
        Item: { pk, state: { S: 'in_progress' } },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    await dynamodb.send(
      new UpdateItemCommand({
        TableName,
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
      const money = IDEMPOTENT_ROUTES.includes(route);
      if (money) await idempotencyWrites();
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
    close: () => Promise.all([pool.close(), dynamodb.destroy()]),
  };
}

/**
 * `count` requests to a warm handler, each paired with the bare floor doing the same upstream
 * work; requests are prepared (fresh orders, holds...) outside the timed part.
 */
export async function measureWarm(
  route: RouteName,
  handler: Handler,
  floor: ReturnType<typeof bareFloor>,
  environment: BenchEnvironment,
  count: number,
  warmUp: number,
): Promise<WarmSamples> {
  const samples: WarmSamples = { handlerMs: [], floorMs: [], statusCodes: new Set() };
  for (let i = 0; i < warmUp + count; i++) {
    const ours = await environment.prepare(route);
    const started = performance.now();
    const result = await handler(ours.event, lambdaContext());
    const handlerMs = performance.now() - started;
    samples.statusCodes.add(result.statusCode);

    const bare = await environment.prepare(route);
    const floorStarted = performance.now();
    await floor.send(route, bare.upstream);
    const floorMs = performance.now() - floorStarted;
    if (i >= warmUp) {
      samples.handlerMs.push(handlerMs);
      samples.floorMs.push(floorMs);
    }
  }
  return samples;
}
