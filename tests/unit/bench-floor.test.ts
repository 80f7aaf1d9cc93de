import { describe, expect, it } from 'vitest';
import { ledgerWrites, storeWrites } from '../../bench/warm.ts';
import type { AttributeValue, DynamoDBClient } from '../../lib/dynamodb/index.ts';
import { IdempotencyStore } from '../../lib/idempotency/store.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import { CHARGEABLE, chargeMove } from '../../lib/orders/evidence.ts';

/** A write's shape: everything but the values themselves (keys, timestamps, ids differ by design). */
function shape(write: object) {
  const input = write as Record<string, unknown>;
  const types = (values: unknown) =>
    Object.fromEntries(
      Object.entries((values ?? {}) as Record<string, AttributeValue>).map(([name, value]) => [
        name,
        Object.keys(value),
      ]),
    );
  return {
    TableName: input.TableName,
    ConditionExpression: input.ConditionExpression,
    UpdateExpression: input.UpdateExpression,
    ExpressionAttributeNames: input.ExpressionAttributeNames,
    ExpressionAttributeValues: types(input.ExpressionAttributeValues),
    Item: types(input.Item),
    Key: types(input.Key),
  };
}

describe("the bench's warm floor", () => {
  it('sends the same two writes as the idempotency store for a first attempt that gets an answer', async () => {
    const sent: object[] = [];
    const client = {
      send: async (command: { input: object }) => {
        sent.push(command.input);
        return {};
      },
    } as unknown as DynamoDBClient;
    const store = new IdempotencyStore({ client, table: 'table', ttlSeconds: 86_400 });

    const begun = await store.begin('charge#caller#key', 'f'.repeat(64), Date.now() + 25_000, {
      subject: '{"operation":"charge"}',
      at: Date.now() + 625_000,
    });
    if (!('acquired' in begun)) throw new Error('the fake table refused the claim');
    const answer = { statusCode: 200, headers: { 'Content-Type': 'application/json' }, body: '{}' };
    await store.finish(begun.acquired, 'complete', answer);
    const floor = storeWrites('table', 'bench#key', 'attempt');

    expect(sent).toHaveLength(2);
    expect(shape(floor.claim(Date.now()))).toEqual(shape(sent[0]!));
    expect(shape(floor.answer(Date.now(), '{}'))).toEqual(shape(sent[1]!));
  });

  it('sends the same three ledger writes as the ledger for a merchant charge that gets an answer', async () => {
    const sent: object[] = [];
    const client = {
      send: async (command: { input: object }) => {
        sent.push(command.input);
        return {};
      },
    } as unknown as DynamoDBClient;
    const ledger = new LedgerStore({ client, table: 'ledger' });
    const price = { items: 'Taxi Hire 123', currency: 'LKR', amountCents: 34_567 };

    await ledger.claimCharge({
      orderId: 'Order-1',
      owner: 'merchant',
      kind: 'charge',
      price,
      custom1: null,
      custom2: null,
      slot: { key: 'charge#key', sentAt: Date.now(), until: Date.now() + 16_000 },
      chargeable: CHARGEABLE,
      attempts: { window: Math.floor(Date.now() / 3_600_000), limit: 3 },
      rule: 'merchant',
    });
    const succeeded = chargeMove('charge_succeeded');
    await ledger.finishCharge('Order-1', 'charge#key', {
      state: succeeded.to,
      from: succeeded.from,
      overReport: succeeded.overReport,
      paymentId: '320040000001',
      authorizationToken: null,
    });
    await ledger.link('payment', '320040000001', { orderId: 'Order-1', owner: 'merchant' }, 'charge#key');
    const floor = ledgerWrites('ledger', 'Bench-1', 'bench#key');

    expect(sent).toHaveLength(3);
    expect({ ...shape(floor.claim(Date.now(), price)), ReturnValues: 'ALL_NEW' }).toEqual({
      ...shape(sent[0]!),
      ReturnValues: (sent[0] as { ReturnValues?: string }).ReturnValues,
    });
    expect(shape(floor.outcome(Date.now(), '320040000001'))).toEqual(shape(sent[1]!));
    expect(shape(floor.payment('320040000001'))).toEqual(shape(sent[2]!));
  });
});
