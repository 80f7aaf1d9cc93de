import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, testToken, tokenFor } from '../helpers/auth.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';
import { customer } from '../helpers/orders.ts';

/**
 * Issue 37's reconciliation through `npm start`'s stack (HTTP → serverless-offline → bundled
 * handler → the ledger's order list in dynalite, PayHere's sandbox): a day where the sandbox holds
 * one payment the ledger lacks (a checkout paid in PayHere's SDK whose notification never arrived)
 * and the ledger one that PayHere lacks (a charge PayHere's records no longer show): both reported,
 * with what to do, in JSON and in CSV, within the report's PayHere searches per request.
 */
const CHECKS = 5;
const NOWHERE = 'http://127.0.0.1:9/lost';
const erin = customer('erin');
const suffix = erin.slice(-8);
const charged = `Recon-Charged-${suffix}`;
const unnotified = `Recon-Unnotified-${suffix}`;

let sandbox: Sandbox;
let offline: Offline;
let api: string;
let authorization: string;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline, api } = await startOfflineAgainst(sandbox, TEST_AUTH_ENV));
  authorization = `Bearer ${await tokenFor(MERCHANT_SCOPES)}`;
}, 180_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${api}${path}`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { data: any } };
}

const today = new Date().toISOString().slice(0, 10);
const report = (headers: Record<string, string> = {}, query = '') =>
  fetch(`${api}/reports/reconciliation?from=${today}&to=${today}${query}`, {
    headers: { authorization, ...headers },
  });

describe('a day’s reconciliation through serverless-offline', () => {
  let paymentLedgerOnly: number;
  let paymentPayHereOnly: number;

  beforeAll(async () => {
    // The ledger's: the merchant charges Erin's saved card; PayHere then loses the payment
    // (the sandbox's payments set back to its seeded ones).
    const charge = await post(
      '/payments/charge',
      {
        type: 'PAYMENT',
        order_id: charged,
        items: 'Door bell',
        currency: 'LKR',
        amount: 700,
        customer_token: SEED.customerTokens.success,
      },
      { 'idempotency-key': `charge-${charged}`, 'on-behalf-of': erin },
    );
    expect(charge.status, JSON.stringify(charge.body)).toBe(200);
    paymentLedgerOnly = charge.body.data.payment_id;
    sandbox.resetState();
    // PayHere's: a checkout Erin pays in the SDK, whose notification goes astray.
    const checkout = await post(
      '/checkouts',
      { kind: 'payment', order_id: unnotified, items: 'Door chime', currency: 'LKR', amount: 900 },
      { 'on-behalf-of': erin },
    );
    expect(checkout.status, JSON.stringify(checkout.body)).toBe(201);
    const paid = await sandbox.completeCheckout({
      ...checkout.body.data,
      outcome: 'success',
      notify_url: NOWHERE,
    });
    paymentPayHereOnly = paid.payment_id!;
    sandbox.resetCounters();
  }, 60_000);

  it('reports both: the payment PayHere holds that the ledger lacks, and the one the ledger holds that PayHere lacks', async () => {
    const response = await report();
    const body = (await response.json()) as { status: number; msg: string; data: any };

    expect(response.status, JSON.stringify(body)).toBe(200);
    expect(body.msg).toBe(
      `Reconciliation of ${today} to ${today} (UTC): 2 differences, 0 orders not checked yet`,
    );
    expect(body.data).toMatchObject({ orders: 2, checked: 2, unchecked: 0, checked_now: 2, complete: true });
    const [day] = body.data.days;
    expect(day.date).toBe(today);
    expect(
      day.differences.map((d: { kind: string; order_id: string; payment_id: number }) => [
        d.kind,
        d.order_id,
        d.payment_id,
      ]),
    ).toEqual([
      ['payment_not_at_payhere', charged, paymentLedgerOnly],
      ['payment_not_in_ledger', unnotified, paymentPayHereOnly],
    ]);
    expect(day.differences[0].action).toMatch(/do not ship it until PayHere's portal shows the payment/);
    expect(day.differences[1].action).toMatch(`GET /gateway/api/checkouts/${unnotified} looks it up`);
    expect(day.orders_paid.map((o: { order_id: string }) => o.order_id)).toEqual([charged]);
    expect(day.payments).toEqual([
      expect.objectContaining({
        order_id: unnotified,
        payment_id: paymentPayHereOnly,
        gross: 900,
        fee: 26.1,
        net: 873.9,
        in_ledger: false,
        checked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      }),
    ]);
    // Two orders, two searches: each read once, within the report's searches per request.
    expect(sandbox.counters().search).toBe(2);
    expect(sandbox.counters().search).toBeLessThanOrEqual(CHECKS);
  });

  it('answers the same as CSV, asked by Accept, without reading PayHere again', async () => {
    sandbox.resetCounters();

    const response = await report({ accept: 'text/csv' });
    const csv = await response.text();

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe(
      `attachment; filename="reconciliation-${today}-${today}.csv"`,
    );
    const lines = csv.split('\r\n');
    expect(
      lines.filter((line) => line.includes(',difference,')).map((line) => line.split(',').slice(1, 5)),
    ).toEqual([
      ['difference', 'payment_not_at_payhere', charged, String(paymentLedgerOnly)],
      ['difference', 'payment_not_in_ledger', unnotified, String(paymentPayHereOnly)],
    ]);
    expect(sandbox.counters().search ?? 0).toBe(0);
  });

  it('is refused to a customer, with nothing read', async () => {
    sandbox.resetCounters();
    const token = await testToken({ scope: 'payments:read', sub: erin });

    const response = await fetch(`${api}/reports/reconciliation?from=${today}&to=${today}`, {
      headers: { authorization: `Bearer ${token}` },
    });

    expect(response.status).toBe(403);
    expect(((await response.json()) as { data: { code: string } }).data.code).toBe('forbidden');
    expect(sandbox.counters().search ?? 0).toBe(0);
  });
});
