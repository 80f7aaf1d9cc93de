import { randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type AttributeValue, DeleteItemCommand, ScanCommand } from '../../lib/dynamodb/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { checkoutHash, SANDBOX_CREDENTIALS } from '../../sandbox/server.ts';
import { testToken } from '../helpers/auth.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, giveSubscription, testLedger } from '../helpers/orders.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * GET /gateway/api/subscriptions a page at a time (docs/contract.md "Subscription lists"),
 * in-process against a sandbox holding over a thousand subscriptions (a list too large for the
 * shared reads to keep whole): each is listed once across the pages, newest first, and every page
 * of one listing is cut from one PayHere call. tests/net/answer-size.test.ts reads a list of
 * 10,000's size.
 */
// A loaded test machine: a page is read from the table, not fetched from PayHere, whatever else runs.
process.env.STATE_TABLE_TIMEOUT_MS = '3000';
const sandbox = useTestGateway({ beforeEachTest: 'nothing' });
const ledger = testLedger();
const owner = customer('pager');
const other = customer('other');
const NOWHERE = 'https://notify.example.invalid/payhere';
const EXTRA = 1_030;
const ITEMS = 'Gym membership';

/** Every subscription id PayHere holds, newest (largest) first, and the size of its answer. */
let allIds: number[] = [];
let listBytes = 0;
/** The customer's own: seven of them, spread over the list. */
let ownIds: number[] = [];

beforeAll(async () => {
  for (let i = 0; i < EXTRA; i++) {
    const orderId = `Page-${i}-${randomUUID().slice(0, 8)}`;
    await sandbox.completeCheckout({
      kind: 'recurring',
      outcome: 'success',
      merchant_id: SANDBOX_CREDENTIALS.merchantId,
      order_id: orderId,
      items: ITEMS,
      currency: 'LKR',
      amount: 2500,
      recurrence: '1 Month',
      duration: '1 Year',
      hash: checkoutHash({
        merchantId: SANDBOX_CREDENTIALS.merchantId,
        orderId,
        amount: '2500.00',
        currency: 'LKR',
        merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
      }),
      notify_url: NOWHERE,
    });
  }
  // The ids as PayHere answers them, read here without the route under test.
  const every = await everyId();
  allIds = every.ids.sort((a, b) => b - a);
  listBytes = every.bytes;
  ownIds = [0, 3, 150, 151, 400, 777, allIds.length - 1].map((i) => allIds[i]!);
  for (const id of ownIds) await giveSubscription(ledger, owner, id);
  await giveSubscription(ledger, other, allIds[5]!);
}, 120_000);

beforeEach(async () => {
  await forgetSharedReads();
  sandbox.resetCounters();
});

/** PayHere's own list, asked of the sandbox directly. */
async function everyId(): Promise<{ ids: number[]; bytes: number }> {
  const api = apiClient(sandbox, await accessToken(sandbox));
  const list = await api.get('subscription');
  sandbox.resetCounters();
  return {
    ids: list.json.data.map((record: { subscription_id: number }) => record.subscription_id),
    bytes: Buffer.byteLength(list.text, 'utf8'),
  };
}

const asCustomer = async (sub: string) => ({
  Authorization: `Bearer ${await testToken({ scope: 'subscriptions:read', sub })}`,
});

/** Every page of a listing: the ids in the order they came, the pages, and each page's answer. */
async function listAll(
  query: Record<string, string>,
  headers?: Record<string, string>,
  between?: () => Promise<void>,
) {
  const ids: number[] = [];
  const answers = [];
  let cursor: string | null = null;
  do {
    if (cursor !== null && between) await between();
    const answer = await call('listSubscriptions', {
      query: { ...query, ...(cursor ? { cursor } : {}) },
      ...(headers ? { headers } : {}),
    });
    expect(answer.statusCode, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
    expect(answer.body.msg).toBe(`Found ${answer.body.data.subscriptions.length} subscriptions`);
    ids.push(...answer.body.data.subscriptions.map((s: { subscription_id: number }) => s.subscription_id));
    answers.push(answer);
    cursor = answer.body.data.next_cursor;
  } while (cursor !== null && answers.length < 50);
  return { ids, answers };
}

// Each listing reads and pages a list of a thousand subscriptions: a loaded machine takes its time.
describe('the merchant’s subscription list, page by page', { timeout: 60_000 }, () => {
  it('lists every subscription once, newest first, all its pages cut from one PayHere call', async () => {
    const { ids, answers } = await listAll({ limit: '100' });

    expect(allIds.length).toBeGreaterThan(EXTRA);
    // Over what the shared reads keep as one answer (300 KB): a snapshot in parts is kept.
    expect(listBytes).toBeGreaterThan(300_000);
    expect(ids).toEqual(allIds);
    expect(answers).toHaveLength(Math.ceil(allIds.length / 100));
    expect(sandbox.counters().listSubscriptions).toBe(1);
    // The pages after the first are read from the shared snapshot: they say how old it is.
    for (const answer of answers.slice(1)) expect(answer.headers?.Age).toMatch(/^[0-9]+$/);
  });

  it('holds 100 a page when only a cursor is given, and pages of another size as well', async () => {
    const start = await call('listSubscriptions', { query: { limit: '1' } });
    const next = await call('listSubscriptions', { query: { cursor: start.body.data.next_cursor } });
    const { ids } = await listAll({ limit: '37' });

    expect(next.body.data.subscriptions).toHaveLength(100);
    expect(next.body.data.next_cursor).toEqual(expect.any(String));
    expect(ids).toEqual(allIds);
  });

  it('answers every subscription as an array without limit or cursor, as before it paged, from the same one fetch', async () => {
    const whole = await call('listSubscriptions');
    const { ids } = await listAll({ limit: '100' });

    expect(whole.body.msg).toBe(`Found ${allIds.length} subscriptions`);
    expect(whole.body.data.map((s: { subscription_id: number }) => s.subscription_id)).toEqual(allIds);
    expect(ids).toEqual(allIds);
    expect(sandbox.counters().listSubscriptions).toBe(1);
  });

  it('goes on after the last one shown when the snapshot a cursor names is gone: each still once', async () => {
    let dropped = 0;
    // After the third page, the table loses the snapshot (its window over): the next page fetches anew.
    const { ids } = await listAll({ limit: '100' }, undefined, async () => {
      dropped += 1;
      if (dropped === 3) await dropSnapshotIndexes();
    });

    expect(ids).toEqual(allIds);
    expect(sandbox.counters().listSubscriptions).toBe(2);
  });

  it('refuses an altered cursor and a page above 100', async () => {
    const page = await call('listSubscriptions', { query: { limit: '2' } });
    const altered = `${page.body.data.next_cursor}x`;

    const refused = await call('listSubscriptions', { query: { cursor: altered } });
    const tooMany = await call('listSubscriptions', { query: { limit: '101' } });

    expect(refused.statusCode).toBe(400);
    expect(refused.body.data.errors[0].path).toBe('query.cursor');
    expect(tooMany.statusCode).toBe(400);
  });
});

describe('a customer’s subscription list', { timeout: 60_000 }, () => {
  it('pages only its own, each once, newest first', async () => {
    const headers = await asCustomer(owner);

    const { ids, answers } = await listAll({ limit: '3' }, headers);

    expect(ids).toEqual(ownIds);
    expect(answers).toHaveLength(3);
    expect(sandbox.counters().listSubscriptions).toBe(1);
  });

  it('cannot use another caller’s cursor', async () => {
    const merchants = await call('listSubscriptions', { query: { limit: '1' } });
    const others = await call('listSubscriptions', {
      query: { limit: '1' },
      headers: await asCustomer(other),
    });

    const withMerchants = await call('listSubscriptions', {
      query: { cursor: merchants.body.data.next_cursor },
      headers: await asCustomer(owner),
    });

    expect(others.body.data).toEqual({
      subscriptions: [expect.objectContaining({ subscription_id: allIds[5] })],
      next_cursor: null,
    });
    expect(withMerchants.statusCode).toBe(400);
  });
});

/**
 * The table loses the snapshots' indexes and the pointer to the latest (as when their window ends):
 * no page can find a snapshot's parts any more.
 */
async function dropSnapshotIndexes(): Promise<void> {
  await backgroundSettled();
  const client = localClient();
  const table = process.env.STATE_TABLE!;
  let from: Record<string, AttributeValue> | undefined;
  const keys: string[] = [];
  do {
    // A scan reads at most 1 MB a call: the parts are large.
    const { Items = [], LastEvaluatedKey } = await client.send(
      new ScanCommand({
        TableName: table,
        ProjectionExpression: 'pk',
        FilterExpression: 'begins_with(pk, :list)',
        ExpressionAttributeValues: { ':list': { S: 'read#subscriptions' } },
        ...(from ? { ExclusiveStartKey: from } : {}),
      }),
    );
    keys.push(...Items.map((item) => item.pk!.S!).filter((key) => !/#[0-9]+$/.test(key)));
    from = LastEvaluatedKey;
  } while (from);
  for (const key of keys)
    await client.send(new DeleteItemCommand({ TableName: table, Key: { pk: { S: key } } }));
}
