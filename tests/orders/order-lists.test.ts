import { beforeAll, describe, expect, it } from 'vitest';
import { type DynamoDBClient, UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import type { OrderKind, OrderState } from '../../lib/ledger/model.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import { testToken } from '../helpers/auth.ts';
import { call } from '../helpers/gateway.ts';
import { customer, newOrder } from '../helpers/orders.ts';
import { localClient } from '../idempotency/fixtures.ts';

/**
 * GET /gateway/api/orders (docs/contract.md "Order lists") in-process against this file's ledger:
 * 120 orders of 6 customers over every kind and several states, created a minute apart (and two in
 * the same millisecond), listed page by page with each filter; a customer sees only its own.
 */
const CUSTOMERS = Array.from({ length: 6 }, (_, i) => customer(`lister${i}`));
const KINDS: OrderKind[] = ['payment', 'preapproval', 'authorize', 'recurring', 'charge'];
const STATES: OrderState[] = ['created', 'succeeded', 'failed', 'pending', 'unknown'];
const START = Date.parse('2026-11-20T00:00:00Z');

interface Fixture {
  orderId: string;
  owner: string;
  kind: OrderKind;
  state: OrderState;
  createdAt: number;
}
const fixtures: Fixture[] = Array.from({ length: 120 }, (_, i) => ({
  orderId: `LIST-${String(i).padStart(3, '0')}-${CUSTOMERS[0]!.slice(-8)}`,
  owner: CUSTOMERS[i % 6]!,
  kind: KINDS[i % 5]!,
  state: STATES[(i * 7) % 5]!,
  // Orders 40 and 41 are created in the same millisecond.
  createdAt: START + (i === 41 ? 40 : i) * 60_000,
}));
/** What the newest order keeps for a back office (docs/contract.md "What an order keeps"). */
const NEWEST_DETAILS = {
  custom1: 'ride-88',
  custom2: null,
  lineItems: [{ name: 'Hire', number: 'H-1', quantity: 1, unit_amount: 345.67 }],
  customerDetails: { first_name: 'Nimali', email: 'nimali@example.com', phone: '+94771234567' },
  metadata: { crm_id: 'C-119', channel: 'app' },
};
const newestFirst = (list: Fixture[]) =>
  [...list]
    .sort((a, b) => b.createdAt - a.createdAt || (a.orderId < b.orderId ? 1 : -1))
    .map((f) => f.orderId);

beforeAll(async () => {
  const client = localClient();
  for (const fixture of fixtures) {
    const ledger = new LedgerStore({
      client,
      table: process.env.LEDGER_TABLE!,
      now: () => fixture.createdAt,
    });
    await ledger.createOrder(
      newOrder({
        orderId: fixture.orderId,
        owner: fixture.owner,
        kind: fixture.kind,
        ...(fixture === fixtures[119] ? NEWEST_DETAILS : {}),
      }),
    );
    if (fixture.state !== 'created') {
      await client.send(
        new UpdateItemCommand({
          TableName: process.env.LEDGER_TABLE!,
          Key: { pk: { S: `order#${fixture.orderId}` } },
          UpdateExpression: 'SET #state = :state',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':state': { S: fixture.state } },
        }),
      );
    }
  }
}, 60_000);

async function customerHeaders(sub: string): Promise<Record<string, string>> {
  return { Authorization: `Bearer ${await testToken({ scope: 'payments:read', sub })}` };
}

/** Every page of a list: the order ids in the order they came, and how many pages. */
async function listAll(query: Record<string, string>, headers?: Record<string, string>) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const answer = await call('listOrders', {
      query: { ...query, ...(cursor ? { cursor } : {}) },
      ...(headers ? { headers } : {}),
    });
    expect(answer.statusCode, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.msg).toBe(`Found ${answer.body.data.orders.length} orders`);
    ids.push(...answer.body.data.orders.map((order: { order_id: string }) => order.order_id));
    cursor = answer.body.data.next_cursor;
    pages += 1;
  } while (cursor !== null && pages < 50);
  return { ids, pages };
}

describe('the merchant’s order list', () => {
  it('shows every order once, newest first, page by page', async () => {
    const { ids, pages } = await listAll({ limit: '25' });

    expect(ids).toEqual(newestFirst(fixtures));
    expect(pages).toBe(5);
  });

  it('holds 20 orders a page unless told, and an order as the ledger has it', async () => {
    const answer = await call('listOrders');
    const newest = fixtures[119]!;

    expect(answer.body.data.orders).toHaveLength(20);
    expect(answer.body.data.orders[0]).toEqual({
      order_id: newest.orderId,
      kind: newest.kind,
      status: newest.state,
      charge_in_flight: false,
      customer: newest.owner,
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      payment_id: null,
      subscription_id: null,
      // What it keeps for a back office, but its line items (getCheckout shows those).
      custom_1: 'ride-88',
      custom_2: null,
      customer_details: NEWEST_DETAILS.customerDetails,
      metadata: NEWEST_DETAILS.metadata,
      startup_fee: null,
      next_installment: null,
      created_at: new Date(newest.createdAt).toISOString(),
      updated_at: new Date(newest.createdAt).toISOString(),
    });
  });

  it.each([
    ['status', { status: 'succeeded' }, (f: Fixture) => f.state === 'succeeded'],
    ['kind', { kind: 'recurring' }, (f: Fixture) => f.kind === 'recurring'],
    ['customer', { customer: CUSTOMERS[2]! }, (f: Fixture) => f.owner === CUSTOMERS[2]],
    [
      'created_from and created_to',
      {
        created_from: new Date(START + 30 * 60_000).toISOString(),
        created_to: new Date(START + 90 * 60_000).toISOString(),
      },
      (f: Fixture) => f.createdAt >= START + 30 * 60_000 && f.createdAt < START + 90 * 60_000,
    ],
    [
      'every filter at once',
      {
        status: 'failed',
        customer: CUSTOMERS[1]!,
        kind: 'payment',
        created_from: new Date(START).toISOString(),
        created_to: new Date(START + 200 * 60_000).toISOString(),
      },
      (f: Fixture) => f.state === 'failed' && f.owner === CUSTOMERS[1] && f.kind === 'payment',
    ],
    [
      'status and kind',
      { status: 'unknown', kind: 'authorize' },
      (f: Fixture) => f.state === 'unknown' && f.kind === 'authorize',
    ],
  ] as const)('filters by %s, each matching order once, newest first', async (_, query, matches) => {
    const expected = newestFirst(fixtures.filter(matches));
    const { ids } = await listAll({ ...query, limit: '7' });

    expect(ids).toEqual(expected);
  });

  it('refuses a cursor made for other filters, or not made by this list, and a page above 100', async () => {
    const first = await call('listOrders', { query: { limit: '5', status: 'created' } });
    const cursor = first.body.data.next_cursor as string;
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { p: string; b: string };
    const altered = Buffer.from(
      JSON.stringify({ ...decoded, p: `000000000000001#${fixtures[0]!.orderId}` }),
    ).toString('base64url');

    const answers = await Promise.all([
      call('listOrders', { query: { limit: '5', status: 'failed', cursor } }),
      call('listOrders', { query: { limit: '5', status: 'created', cursor: 'not-a-cursor' } }),
      call('listOrders', { query: { limit: '5', cursor: altered } }),
      call('listOrders', { query: { limit: '101' } }),
      call('listOrders', { query: { sort: 'oldest' } }),
    ]);

    expect(answers.map((answer) => [answer.statusCode, answer.body.data.code])).toEqual(
      Array(5).fill([400, 'invalid_request']),
    );
    expect(answers[0]!.body.data.errors).toEqual([
      { path: 'query.cursor', message: expect.stringContaining('next_cursor') },
    ]);
    expect(answers[3]!.body.data.errors[0].path).toBe('query.limit');
    expect(answers[4]!.body.data.errors[0].path).toBe('query.sort');
  });
});

describe('a customer’s order list', () => {
  it('shows only its own orders, whatever it asks', async () => {
    const own = CUSTOMERS[3]!;
    const headers = await customerHeaders(own);

    const all = await listAll({ limit: '6' }, headers);
    const filtered = await listAll({ status: 'succeeded', limit: '3' }, headers);
    const named = await listAll({ customer: own }, headers);
    const other = await listAll({ customer: CUSTOMERS[4]! }, headers);

    expect(all.ids).toEqual(newestFirst(fixtures.filter((f) => f.owner === own)));
    expect(filtered.ids).toEqual(
      newestFirst(fixtures.filter((f) => f.owner === own && f.state === 'succeeded')),
    );
    expect(named.ids).toEqual(all.ids);
    // Another customer's orders: an empty list, as for a customer with none.
    expect(other.ids).toEqual([]);
  });

  it('shows its own order’s details but the merchant’s metadata; another customer never sees them', async () => {
    const newest = fixtures[119]!;
    const other = CUSTOMERS.find((sub) => sub !== newest.owner)!;

    const own = await call('listOrders', {
      query: { limit: '1' },
      headers: await customerHeaders(newest.owner),
    });
    const others = await listAll({ customer: newest.owner }, await customerHeaders(other));

    expect(own.body.data.orders[0]).toMatchObject({
      order_id: newest.orderId,
      custom_1: 'ride-88',
      customer_details: NEWEST_DETAILS.customerDetails,
      metadata: null,
    });
    expect(others.ids).not.toContain(newest.orderId);
  });

  it('cannot use the merchant’s cursor, nor another customer’s', async () => {
    const merchantPage = await call('listOrders', { query: { limit: '3' } });
    const otherPage = await call('listOrders', {
      query: { limit: '3' },
      headers: await customerHeaders(CUSTOMERS[0]!),
    });
    const headers = await customerHeaders(CUSTOMERS[5]!);

    const answers = await Promise.all(
      [merchantPage, otherPage].map((page) =>
        call('listOrders', { query: { limit: '3', cursor: page.body.data.next_cursor }, headers }),
      ),
    );

    expect(answers.map((answer) => answer.statusCode)).toEqual([400, 400]);
  });

  it('follows a cursor made by hand only within its own list', async () => {
    // A cursor's digest binds it to its caller and filters, but it is no signature: the customer
    // puts another customer's order's position in its own cursor.
    const own = CUSTOMERS[2]!;
    const headers = await customerHeaders(own);
    const first = await call('listOrders', { query: { limit: '2' }, headers });
    const { b } = JSON.parse(Buffer.from(first.body.data.next_cursor, 'base64url').toString()) as {
      b: string;
    };
    const stranger = fixtures[60]!;
    expect(stranger.owner).not.toBe(own);
    const position = `${String(stranger.createdAt).padStart(15, '0')}#${stranger.orderId}`;
    const forged = Buffer.from(JSON.stringify({ p: position, b })).toString('base64url');

    const answer = await call('listOrders', { query: { limit: '100', cursor: forged }, headers });

    // The page starts after that position in the customer's own list, and shows nothing else.
    expect(answer.statusCode).toBe(200);
    expect(answer.body.data.orders.map((order: { order_id: string }) => order.order_id)).toEqual(
      newestFirst(fixtures.filter((f) => f.owner === own && f.createdAt < stranger.createdAt)),
    );
  });
});

describe('a page of the ledger’s order lists', () => {
  function counting(): { client: DynamoDBClient; sent: string[] } {
    const client = localClient();
    const sent: string[] = [];
    const send = client.send.bind(client);
    client.send = ((command: { constructor: { name: string } }) => {
      sent.push(command.constructor.name);
      return send(command as never);
    }) as typeof client.send;
    return { client, sent };
  }

  it.each([
    ['every order', { source: { all: true } } as const],
    [
      'one state, of one kind (a filter that drops most)',
      { source: { state: 'succeeded' }, kind: 'charge' } as const,
    ],
    ['one customer, in one state', { source: { owner: CUSTOMERS[0]! }, state: 'failed' } as const],
  ])('of 100 is answered in at most 2 DynamoDB round trips, Queries only: %s', async (_, query) => {
    const { client, sent } = counting();
    const ledger = new LedgerStore({ client, table: process.env.LEDGER_TABLE! });

    await ledger.listOrders({ ...query, limit: 100 });

    expect(sent.length).toBeLessThanOrEqual(2);
    expect(new Set(sent)).toEqual(new Set(['QueryCommand']));
  });
});

describe('an order with a charge in flight', () => {
  it('is listed in its ledger state, and said to have a charge in flight', async () => {
    const orderId = fixtures[118]!.orderId;
    await localClient().send(
      new UpdateItemCommand({
        TableName: process.env.LEDGER_TABLE!,
        Key: { pk: { S: `order#${orderId}` } },
        UpdateExpression: 'SET #inflight = :key',
        ExpressionAttributeNames: { '#inflight': 'inflight' },
        ExpressionAttributeValues: { ':key': { S: 'charge#caller#key' } },
      }),
    );

    const answer = await call('listOrders', { query: { status: fixtures[118]!.state, limit: '1' } });

    expect(answer.body.data.orders[0]).toMatchObject({
      order_id: orderId,
      status: fixtures[118]!.state,
      charge_in_flight: true,
    });
  });
});
