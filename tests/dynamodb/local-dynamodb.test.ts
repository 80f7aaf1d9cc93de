import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PutItemCommand, UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import { createTable, type LocalDynamoDB, startLocalDynamoDB } from '../../scripts/local-dynamodb.ts';
import { dynamoDbAt } from '../helpers/state-table.ts';

/**
 * The local DynamoDB (dynalite) with what it adds of DynamoDB's own answers: a refused write that
 * asked `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` carries the item as it is; and, for the
 * bench, a distance.
 */
let local: LocalDynamoDB;
let far: LocalDynamoDB;
const table = `local-${randomUUID()}`;

beforeAll(async () => {
  [local, far] = await Promise.all([startLocalDynamoDB(), startLocalDynamoDB({ delayMs: 60 })]);
  await Promise.all([createTable(local.endpoint, table), createTable(far.endpoint, table)]);
});
afterAll(async () => {
  await Promise.all([local.close(), far.close()]);
});

const put = (pk: string, ask?: 'ALL_OLD') =>
  new PutItemCommand({
    TableName: table,
    Item: { pk: { S: pk }, n: { N: '2' } },
    ConditionExpression: 'attribute_not_exists(pk)',
    ...(ask ? { ReturnValuesOnConditionCheckFailure: ask } : {}),
  });

describe('the local DynamoDB', () => {
  it('sends the item with a refused write that asked for it (UpdateItem, PutItem), and only then', async () => {
    // Prepare
    const client = dynamoDbAt(local.endpoint);
    const pk = randomUUID();
    await client.send(put(pk));

    // Act
    const refusals = await Promise.all([
      client
        .send(
          new UpdateItemCommand({
            TableName: table,
            Key: { pk: { S: pk } },
            UpdateExpression: 'SET n = :n',
            ConditionExpression: 'n = :other',
            ExpressionAttributeValues: { ':n': { N: '3' }, ':other': { N: '9' } },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        )
        .catch((error: unknown) => error),
      client.send(put(pk, 'ALL_OLD')).catch((error: unknown) => error),
      client.send(put(pk)).catch((error: unknown) => error),
    ]);

    // Assess
    const item = { pk: { S: pk }, n: { N: '2' } };
    expect(refusals[0]).toMatchObject({ name: 'ConditionalCheckFailedException', Item: item });
    expect(refusals[1]).toMatchObject({ name: 'ConditionalCheckFailedException', Item: item });
    expect(refusals[2]).toMatchObject({ name: 'ConditionalCheckFailedException', Item: undefined });
  });

  it('answers every request its distance later when it has one', async () => {
    const near = dynamoDbAt(local.endpoint);
    const distant = dynamoDbAt(far.endpoint);
    await Promise.all([near.send(put(randomUUID())), distant.send(put(randomUUID()))]);

    const timed = async (client: typeof near) => {
      const started = performance.now();
      await client.send(put(randomUUID()));
      return performance.now() - started;
    };
    const [nearMs, farMs] = [await timed(near), await timed(distant)];

    expect(farMs).toBeGreaterThanOrEqual(60);
    expect(farMs - nearMs).toBeGreaterThan(40);
  });
});
