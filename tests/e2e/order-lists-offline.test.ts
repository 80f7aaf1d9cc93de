import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import type { OrderKind, OrderState } from '../../lib/ledger/model.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';
import { customer, customerToken, newOrder } from '../helpers/orders.ts';
import { localClient } from '../idempotency/fixtures.ts';

/**
 * Issue 37's order lists through `npm start`'s stack (HTTP → serverless-offline → bundled handler →
 * the ledger's indexes in dynalite): the orders of several customers listed page by page by the
 * merchant, with every filter, and by each customer, each order once, newest first, a customer
 * never seeing another's, and PayHere never asked. 120 orders of 6 customers here; CI (CI=true)
 * lists the 1,000 orders of 50 customers.
 */
const ci = process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI);
const ORDERS = ci ? 1_000 : 120;
const CUSTOMER_COUNT = ci ? 50 : 6;
const CUSTOMERS = Array.from({ length: CUSTOMER_COUNT }, (_, i) => customer(`c${i}`));
const KINDS: OrderKind[] = ['payment', 'preapproval', 'authorize', 'recurring', 'charge'];
const STATES: OrderState[] = ['created', 'succeeded', 'failed', 'pending', 'unknown', 'cancelled'];
const START = Date.parse('2026-10-01T00:00:00Z');

interface Fixture {
  orderId: string;
  owner: string;
  kind: OrderKind;
  state: OrderState;
  createdAt: number;
}
const fixtures: Fixture[] = Array.from({ length: ORDERS }, (_, i) => ({
  orderId: `Offline-${String(i).padStart(4, '0')}`,
  owner: CUSTOMERS[(i * 7) % CUSTOMER_COUNT]!,
  kind: KINDS[i % KINDS.length]!,
  state: STATES[(i * 5) % STATES.length]!,
  createdAt: START + i * 37_000,
}));
const newestFirst = (list: Fixture[]) =>
  [...list].sort((a, b) => b.createdAt - a.createdAt).map((fixture) => fixture.orderId);

let sandbox: Sandbox;
let offline: Offline;
let api: string;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  const client = localClient();
  const table = process.env.LEDGER_TABLE!;
  const write = async (fixture: Fixture) => {
    const ledger = new LedgerStore({ client, table, now: () => fixture.createdAt });
    await ledger.createOrder(
      newOrder({ orderId: fixture.orderId, owner: fixture.owner, kind: fixture.kind }),
    );
    if (fixture.state === 'created') return;
    await client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: `order#${fixture.orderId}` } },
        UpdateExpression: 'SET #state = :state',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':state': { S: fixture.state } },
      }),
    );
  };
  for (let i = 0; i < fixtures.length; i += 20) await Promise.all(fixtures.slice(i, i + 20).map(write));
  ({ offline, api } = await startOfflineAgainst(sandbox, TEST_AUTH_ENV));
  sandbox.resetCounters();
}, 180_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

async function listAll(authorization: string, query: Record<string, string>) {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const search = new URLSearchParams({ ...query, ...(cursor ? { cursor } : {}) });
    const response = await fetch(`${api}/orders?${search}`, { headers: { authorization } });
    const body = (await response.json()) as {
      data: { orders: { order_id: string; customer: string }[]; next_cursor: string | null };
    };
    expect(response.status, JSON.stringify(body)).toBe(200);
    ids.push(...body.data.orders.map((order) => order.order_id));
    cursor = body.data.next_cursor;
    pages += 1;
  } while (cursor !== null && pages < 200);
  return { ids, pages };
}

const merchant = async () => `Bearer ${await tokenFor(MERCHANT_SCOPES)}`;

describe(`${ORDERS} orders of ${CUSTOMER_COUNT} customers, listed through serverless-offline`, () => {
  it('the merchant pages through every order once, newest first, 100 a page', async () => {
    const { ids, pages } = await listAll(await merchant(), { limit: '100' });

    expect(ids).toEqual(newestFirst(fixtures));
    expect(pages).toBe(Math.ceil(ORDERS / 100));
  });

  it('the merchant pages through each filter and all of them together, each matching order once', async () => {
    const from = START + ORDERS * 10_000;
    const to = START + ORDERS * 30_000;
    const cases: [Record<string, string>, (fixture: Fixture) => boolean][] = [
      [{ status: 'unknown' }, (f) => f.state === 'unknown'],
      [{ kind: 'authorize' }, (f) => f.kind === 'authorize'],
      [{ customer: CUSTOMERS[1]! }, (f) => f.owner === CUSTOMERS[1]],
      [
        { created_from: new Date(from).toISOString(), created_to: new Date(to).toISOString() },
        (f) => f.createdAt >= from && f.createdAt < to,
      ],
      [
        {
          status: 'succeeded',
          kind: 'charge',
          customer: CUSTOMERS[2]!,
          created_from: new Date(START).toISOString(),
          created_to: new Date(to).toISOString(),
        },
        (f) => f.state === 'succeeded' && f.kind === 'charge' && f.owner === CUSTOMERS[2] && f.createdAt < to,
      ],
    ];
    const authorization = await merchant();

    for (const [query, matches] of cases) {
      const { ids } = await listAll(authorization, { ...query, limit: '25' });
      expect(ids, JSON.stringify(query)).toEqual(newestFirst(fixtures.filter(matches)));
    }
  });

  it('each customer pages through its own orders only, whatever it names', async () => {
    const seen: string[] = [];
    for (const [i, sub] of CUSTOMERS.entries()) {
      const authorization = `Bearer ${await customerToken(sub, 'payments:read')}`;
      const own = await listAll(authorization, { limit: '9' });
      const other = await listAll(authorization, { customer: CUSTOMERS[(i + 1) % CUSTOMER_COUNT]! });

      expect(own.ids).toEqual(newestFirst(fixtures.filter((f) => f.owner === sub)));
      expect(other.ids).toEqual([]);
      seen.push(...own.ids);
    }

    expect(seen.sort()).toEqual(fixtures.map((f) => f.orderId).sort());
  });

  it('costs PayHere nothing', () => {
    expect(Object.values(sandbox.counters()).reduce((sum, count) => sum + count, 0)).toBe(0);
  });
});
