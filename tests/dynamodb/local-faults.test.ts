import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isRetryableAwsError } from '../../lib/aws/retry.ts';
import { dynamoDbClient } from '../../lib/config/dynamodb.ts';
import { type DynamoDBClient, GetItemCommand, PutItemCommand } from '../../lib/dynamodb/index.ts';
import {
  createTable,
  LOCAL_AWS_ENVIRONMENT,
  type LocalDynamoDB,
  startLocalDynamoDB,
} from '../../scripts/local-dynamodb.ts';
import {
  clearDynamoDbFaults,
  injectDynamoDbFault,
  pendingDynamoDbFaults,
} from '../helpers/dynamodb-faults.ts';
import { dynamoDbAt } from '../helpers/state-table.ts';

/**
 * The local DynamoDB's faults (scripts/dynamodb-faults.ts), each seen through the service's own
 * client (lib/config/dynamodb.ts: three tries, lib/aws/retry.ts's rules) or a one-try client that
 * shows what a single try got.
 */
let local: LocalDynamoDB;
let service: DynamoDBClient;
let oneTry: DynamoDBClient;
const table = `faults-${randomUUID()}`;
const other = `faults-other-${randomUUID()}`;

beforeAll(async () => {
  local = await startLocalDynamoDB();
  await Promise.all([createTable(local.endpoint, table), createTable(local.endpoint, other)]);
  service = dynamoDbClient({ region: LOCAL_AWS_ENVIRONMENT.AWS_REGION, endpoint: local.endpoint });
  oneTry = dynamoDbAt(local.endpoint);
});
afterEach(() => local.faults.clear());
afterAll(() => local.close());

/** A first write of `pk`, as the ledger writes an order: only if it is not there yet. */
const put = (pk: string, tableName = table, ask?: 'ALL_OLD') =>
  new PutItemCommand({
    TableName: tableName,
    Item: { pk: { S: pk }, n: { N: '1' } },
    ConditionExpression: 'attribute_not_exists(pk)',
    ...(ask ? { ReturnValuesOnConditionCheckFailure: ask } : {}),
  });

async function stored(pk: string, tableName = table): Promise<unknown> {
  const { Item } = await oneTry.send(
    new GetItemCommand({ TableName: tableName, Key: { pk: { S: pk } }, ConsistentRead: true }),
  );
  return Item;
}

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the local DynamoDB, failing as scripted', () => {
  it("applyAndLose: the write lands, its answer is lost, and the client's retry meets its own write", async () => {
    // Prepare
    const pk = `order#${randomUUID()}`;
    local.faults.inject('PutItem', { kind: 'applyAndLose' });

    // Act
    const error = await failureOf(service.send(put(pk)));

    // Assess
    expect(error).toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(await stored(pk)).toEqual({ pk: { S: pk }, n: { N: '1' } });
    expect(local.faults.pending()).toBe(0);
  });

  it('applyAndLose: a single try sees the connection reset', async () => {
    const pk = `order#${randomUUID()}`;
    local.faults.inject('PutItem', { kind: 'applyAndLose' });

    const error = await failureOf(oneTry.send(put(pk)));

    expect(error).toMatchObject({ name: 'ConnectionError', code: 'ECONNRESET' });
    expect(await stored(pk)).toBeDefined();
  });

  it('applyThen500: applied, then answered 500 InternalFailure', async () => {
    const pk = `order#${randomUUID()}`;
    local.faults.inject('PutItem', { kind: 'applyThen500' });

    const error = await failureOf(oneTry.send(put(pk)));

    expect(error).toMatchObject({ name: 'InternalFailure', statusCode: 500 });
    expect(await stored(pk)).toBeDefined();
  });

  it('status500: not applied; every try refused surfaces the error', async () => {
    // Prepare
    const pk = `order#${randomUUID()}`;
    local.faults.inject('PutItem', { kind: 'status500' }, 5);

    // Act
    const error = await failureOf(service.send(put(pk)));

    // Assess: the service's three tries took three of the five.
    expect(error).toMatchObject({ name: 'InternalFailure', statusCode: 500 });
    expect(isRetryableAwsError(error)).toBe(true);
    expect(local.faults.pending()).toBe(2);
    expect(await stored(pk)).toBeUndefined();
  });

  it('throttle: refused as DynamoDB throttles, unapplied, and retried by the client as throttling', async () => {
    // Prepare
    const [once, tried] = [`order#${randomUUID()}`, `order#${randomUUID()}`];
    local.faults.inject('PutItem', { kind: 'throttle' });

    // Act
    const error = await failureOf(oneTry.send(put(once)));
    local.faults.inject('PutItem', { kind: 'throttle' });
    await service.send(put(tried));

    // Assess
    expect(error).toMatchObject({ name: 'ProvisionedThroughputExceededException', statusCode: 400 });
    expect(isRetryableAwsError(error)).toBe(true);
    expect(await stored(once)).toBeUndefined();
    expect(await stored(tried)).toBeDefined();
    expect(local.faults.pending()).toBe(0);
  });

  it('slow: applied at once, answered ms later', async () => {
    // Prepare
    const pk = `order#${randomUUID()}`;
    local.faults.inject('PutItem', { kind: 'slow', ms: 400 });
    const started = performance.now();

    // Act
    const answered = service.send(put(pk)).then(() => performance.now() - started);
    await sleep(150);
    const meanwhile = await stored(pk);

    // Assess
    expect(meanwhile).toBeDefined();
    expect(await answered).toBeGreaterThanOrEqual(390);
  });

  it('slow, beforeApplying: applied only after ms', async () => {
    const pk = `order#${randomUUID()}`;
    local.faults.inject('PutItem', { kind: 'slow', ms: 400, beforeApplying: true });
    const started = performance.now();

    const answered = service.send(put(pk)).then(() => performance.now() - started);
    await sleep(150);
    const meanwhile = await stored(pk);

    expect(meanwhile).toBeUndefined();
    expect(await answered).toBeGreaterThanOrEqual(390);
    expect(await stored(pk)).toBeDefined();
  });

  it('faults only the operation, table and key prefix it names', async () => {
    // Prepare
    local.faults.inject({ operation: 'PutItem', table, keyPrefix: 'order#' }, { kind: 'throttle' });
    const order = `order#${randomUUID()}`;

    // Act: another table, another prefix, another operation on the very key.
    await oneTry.send(put(`order#${randomUUID()}`, other));
    await oneTry.send(put(`payment#${randomUUID()}`));
    await stored(order);
    const pendingBefore = local.faults.pending();
    const error = await failureOf(oneTry.send(put(order)));

    // Assess
    expect(pendingBefore).toBe(1);
    expect(error).toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(local.faults.pending()).toBe(0);
  });

  it('matches any operation with *, and uses faults in the order injected', async () => {
    local.faults.inject({ operation: '*', table: other }, { kind: 'status500' });
    local.faults.inject({ operation: '*', table: other }, { kind: 'throttle' });

    const first = await failureOf(
      oneTry.send(new GetItemCommand({ TableName: other, Key: { pk: { S: 'x' } } })),
    );
    const second = await failureOf(oneTry.send(put(`order#${randomUUID()}`, other)));

    expect(first).toMatchObject({ name: 'InternalFailure' });
    expect(second).toMatchObject({ name: 'ProvisionedThroughputExceededException' });
  });

  it("never faults the local DynamoDB's own read of a refused write's item", async () => {
    // Prepare
    const pk = `order#${randomUUID()}`;
    await oneTry.send(put(pk));
    local.faults.inject({ operation: 'GetItem', table }, { kind: 'status500' });

    // Act
    const error = await failureOf(oneTry.send(put(pk, table, 'ALL_OLD')));

    // Assess
    expect(error).toMatchObject({ name: 'ConditionalCheckFailedException', Item: { pk: { S: pk } } });
    expect(local.faults.pending()).toBe(1);
  });

  it('refuses times that are not a positive integer or Infinity', () => {
    for (const times of [0, -1, 1.5, Number.NaN]) {
      expect(() => local.faults.inject('*', { kind: 'throttle' }, times)).toThrow(RangeError);
    }
    expect(local.faults.pending()).toBe(0);
  });
});

describe('the fault controls over HTTP', () => {
  const faultsUrl = () => `${local.endpoint}/__dynamodb/faults`;
  const post = (body: string) => fetch(faultsUrl(), { method: 'POST', body });

  it.each([
    ['not JSON', '{"operation":'],
    ['no object', '[]'],
    ['an unknown operation', '{"operation":"Updateitem","fault":{"kind":"throttle"}}'],
    ['an unknown fault', '{"operation":"PutItem","fault":{"kind":"reset"}}'],
    ['slow without ms', '{"operation":"PutItem","fault":{"kind":"slow"}}'],
    ['a negative ms', '{"operation":"PutItem","fault":{"kind":"slow","ms":-1}}'],
    ['times 0', '{"operation":"PutItem","fault":{"kind":"throttle"},"times":0}'],
    ['times 1.5', '{"operation":"PutItem","fault":{"kind":"throttle"},"times":1.5}'],
    ['an empty key prefix', '{"operation":"PutItem","keyPrefix":"","fault":{"kind":"throttle"}}'],
    ['an unknown field', '{"operation":"PutItem","tabel":"t","fault":{"kind":"throttle"}}'],
  ])('answers 400 to an injection with %s, and injects nothing', async (_, body) => {
    const answer = await post(body);

    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { message: string }).message).toMatch(/^Invalid fault injection: /);
    expect(local.faults.pending()).toBe(0);
  });

  it('names the field that is wrong', async () => {
    const answer = await post('{"operation":"PutItem","tabel":"t","fault":{"kind":"throttle"}}');

    expect(await answer.json()).toEqual({ message: 'Invalid fault injection: tabel' });
  });

  it('injects, counts (Infinity in words) and clears', async () => {
    const injected = await post(
      `{"operation":"UpdateItem","table":"${table}","keyPrefix":"order#","fault":{"kind":"applyAndLose"},"times":2}`,
    );
    const unlimited = await post('{"operation":"Query","fault":{"kind":"slow","ms":5},"times":"Infinity"}');
    const counted = await fetch(faultsUrl());
    const cleared = await fetch(faultsUrl(), { method: 'DELETE' });

    expect([injected.status, unlimited.status, counted.status, cleared.status]).toEqual([200, 200, 200, 200]);
    expect(await injected.json()).toEqual({ pending: 2 });
    expect(await unlimited.json()).toEqual({ pending: 'Infinity' });
    expect(await counted.json()).toEqual({ pending: 'Infinity' });
    expect(await cleared.json()).toEqual({ pending: 0 });
    expect(local.faults.pending()).toBe(0);
  });

  it('answers 404 elsewhere under /__dynamodb/ and 405 to another method', async () => {
    const elsewhere = await fetch(`${local.endpoint}/__dynamodb/other`);
    const put = await fetch(faultsUrl(), { method: 'PUT', body: '{}' });

    expect(elsewhere.status).toBe(404);
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST, DELETE');
  });

  it("faults the test run's DynamoDB through the helper, as a service in serverless-offline sees it", async () => {
    // Prepare: this file's ledger table in the run's dynalite, and an order only this test writes.
    const endpoint = process.env.DYNAMODB_ENDPOINT!;
    const ledger = process.env.LEDGER_TABLE!;
    const prefix = `order#${randomUUID()}`;
    await injectDynamoDbFault({
      operation: 'PutItem',
      table: ledger,
      keyPrefix: prefix,
      fault: { kind: 'applyAndLose' },
    });
    const client = dynamoDbClient({ region: LOCAL_AWS_ENVIRONMENT.AWS_REGION, endpoint });

    // Act
    const error = await failureOf(client.send(put(`${prefix}-1`, ledger)));

    // Assess
    expect(error).toMatchObject({ name: 'ConditionalCheckFailedException' });
    const { Item } = await dynamoDbAt(endpoint).send(
      new GetItemCommand({ TableName: ledger, Key: { pk: { S: `${prefix}-1` } }, ConsistentRead: true }),
    );
    expect(Item).toBeDefined();
    // Used once: the prefix's next write goes through.
    await client.send(put(`${prefix}-2`, ledger));
  });

  it('the helper reaches a server given by its endpoint, and clears it', async () => {
    await injectDynamoDbFault(
      { operation: 'GetItem', fault: { kind: 'throttle' }, times: Infinity },
      local.endpoint,
    );
    const pending = await pendingDynamoDbFaults(local.endpoint);

    await clearDynamoDbFaults(local.endpoint);

    expect(pending).toBe('Infinity');
    expect(local.faults.pending()).toBe(0);
  });

  it('counts and clears one table’s faults, leaving another’s, which a file running beside it injected', async () => {
    await injectDynamoDbFault(
      { operation: 'UpdateItem', table: 'ours', fault: { kind: 'status500' }, times: Infinity },
      local.endpoint,
    );
    await injectDynamoDbFault(
      { operation: 'UpdateItem', table: 'theirs', fault: { kind: 'status500' }, times: 2 },
      local.endpoint,
    );

    const ours = await pendingDynamoDbFaults(local.endpoint, 'ours');
    await clearDynamoDbFaults(local.endpoint, 'ours');

    expect(ours).toBe('Infinity');
    expect(await pendingDynamoDbFaults(local.endpoint, 'ours')).toBe(0);
    expect(await pendingDynamoDbFaults(local.endpoint)).toBe(2);
    await clearDynamoDbFaults(local.endpoint);
  });
});
