import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { CallerShares, callers, loadSharesConfig } from '../../lib/budget/caller-shares.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import type { OrderKind, OrderState } from '../../lib/ledger/model.ts';
import { LedgerReconciliationReads } from '../../lib/ledger/reconciliation.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { ReconciliationReports } from '../../lib/orders/reconciliation.ts';
import { PaymentSnapshots } from '../../lib/reads/snapshots.ts';
import { SEED, sandboxGatewayEnv } from '../../sandbox/server.ts';
import { createTable } from '../../scripts/local-dynamodb.ts';
import { testToken } from '../helpers/auth.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { customer, newOrder } from '../helpers/orders.ts';
import { dynamoDbAt } from '../helpers/state-table.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { checkoutRequest } from '../sandbox/signing.ts';

/**
 * Issue 37's reconciliation report (GET /gateway/api/reports/reconciliation) against the sandbox and
 * the test file's ledger: each kind of difference with its action, the report filled in over as
 * many requests as its budget needs (each request's PayHere searches counted and bounded), the CSV
 * form, and the merchant alone allowed. Each test reconciles a day of its own, in the past, whose
 * orders it writes to the ledger as created that day.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const owner = customer('recon');
/** PayHere's notifications of these checkouts go nowhere: the ledger is written by the test. */
const NOWHERE = 'https://notify.example.invalid/payhere';
/** RECONCILIATION_CHECKS' default: orders one request reads from PayHere. */
const CHECKS = 5;

interface LedgerOrder {
  orderId: string;
  day: string;
  state: OrderState;
  kind?: OrderKind;
  amount?: number;
  currency?: string;
  paymentId?: string;
}

let created = 0;
/** The order as the ledger holds it, created on `day` (UTC) and last changed then. */
async function inLedger(order: LedgerOrder): Promise<void> {
  const at = Date.parse(`${order.day}T06:00:00Z`) + ++created * 1000;
  const table = process.env.LEDGER_TABLE!;
  const ledger = new LedgerStore({ client: localClient(), table, now: () => at });
  await ledger.createOrder(
    newOrder({
      orderId: order.orderId,
      owner,
      kind: order.kind ?? 'payment',
      items: 'Door bell',
      ...(order.currency ? { currency: order.currency } : {}),
      amountCents: order.kind === 'preapproval' ? null : (order.amount ?? 1000) * 100,
    }),
  );
  if (order.state === 'created') return;
  await localClient().send(
    new UpdateItemCommand({
      TableName: table,
      Key: { pk: { S: `order#${order.orderId}` } },
      UpdateExpression: 'SET #state = :state, paymentId = :paymentId',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':state': { S: order.state },
        ':paymentId': order.paymentId ? { S: order.paymentId } : { NULL: true },
      },
    }),
  );
}

/** The ledger changed the order at `at`: a new state and payment. */
async function changeInLedger(orderId: string, change: { state: OrderState; paymentId: string }, at: number) {
  await localClient().send(
    new UpdateItemCommand({
      TableName: process.env.LEDGER_TABLE!,
      Key: { pk: { S: `order#${orderId}` } },
      UpdateExpression: 'SET #state = :state, paymentId = :paymentId, updatedAt = :at',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':state': { S: change.state },
        ':paymentId': { S: change.paymentId },
        ':at': { N: String(at) },
      },
    }),
  );
}

/** The report's last search for `orderId` was sent at `at` (lib/reads/snapshots.ts). */
async function setSnapshotCheckedAt(orderId: string, at: number) {
  await dynamoDbAt(inject('dynamodbEndpoint')).send(
    new UpdateItemCommand({
      TableName: process.env.STATE_TABLE!,
      Key: { pk: { S: `recon#${orderId}` } },
      UpdateExpression: 'SET checkedAt = :at',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':at': { N: String(at) } },
    }),
  );
}

/** A payment PayHere holds for `orderId` (a checkout completed in its SDK): its id. */
async function paidAtPayHere(orderId: string, amount = 1000): Promise<string> {
  const answer = await sandbox.completeCheckout(
    checkoutRequest(NOWHERE, { kind: 'payment', order_id: orderId, items: 'Door bell', amount }),
  );
  return String(answer.payment_id);
}

const reconcile = (
  day: string,
  options: { query?: Record<string, string>; headers?: Record<string, string> } = {},
) =>
  call('reconciliationReport', {
    query: { from: day, to: day, ...options.query },
    ...(options.headers ? { headers: options.headers } : {}),
  });

const ids = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

describe('the reconciliation report', () => {
  it('finds each kind of difference, with what to do, over as many requests as its budget needs', async () => {
    const day = '2026-03-02';
    const agreed = ids('Agreed');
    const agreedPayment = await paidAtPayHere(agreed);
    await inLedger({ orderId: agreed, day, state: 'succeeded', paymentId: agreedPayment });
    // The ledger shows it paid; PayHere has no payment of it.
    const lost = ids('Lost');
    await inLedger({ orderId: lost, day, state: 'succeeded', paymentId: '320099999991' });
    // PayHere holds a payment of an order whose notification never reached the service.
    const unnotified = ids('Unnotified');
    const unnotifiedPayment = await paidAtPayHere(unnotified, 1200);
    await inLedger({ orderId: unnotified, day, state: 'created', amount: 1200 });
    // The customer paid twice: the ledger knows the first payment only.
    const twice = ids('Twice');
    const first = await paidAtPayHere(twice);
    const second = await paidAtPayHere(twice);
    await inLedger({ orderId: twice, day, state: 'succeeded', paymentId: first });
    // PayHere took 900 for an order of 1,000.
    const short = ids('Short');
    const shortPayment = await paidAtPayHere(short, 900);
    await inLedger({ orderId: short, day, state: 'succeeded', paymentId: shortPayment });
    // A charge whose answer was lost: PayHere made it.
    const unknown = ids('Unknown');
    const unknownPayment = await paidAtPayHere(unknown);
    await inLedger({ orderId: unknown, day, state: 'unknown' });
    // A pre-approval has no payment to compare.
    await inLedger({ orderId: ids('Card'), day, state: 'succeeded', kind: 'preapproval' });
    sandbox.resetCounters();

    const firstRun = await reconcile(day);
    const searchesFirst = sandbox.counters().search!;
    const secondRun = await reconcile(day);
    const searchesSecond = sandbox.counters().search! - searchesFirst;

    expect(firstRun.statusCode, firstRun.raw).toBe(200);
    expect(firstRun.body.data).toMatchObject({ orders: 7, checked: CHECKS, unchecked: 1, complete: false });
    expect(firstRun.body.data.checked_now).toBe(CHECKS);
    expect([searchesFirst, searchesSecond]).toEqual([CHECKS, 1]);
    const report = secondRun.body.data;
    expect(secondRun.body.msg).toBe(
      `Reconciliation of ${day} to ${day} (UTC): 5 differences, 0 orders not checked yet`,
    );
    expect(report).toMatchObject({ orders: 7, checked: 6, unchecked: 0, checked_now: 1, complete: true });
    expect(report.days).toHaveLength(1);
    const [only] = report.days;
    expect(only.date).toBe(day);
    expect(only.unchecked).toEqual([]);
    const differences = Object.fromEntries(
      only.differences.map((d: { order_id: string; kind: string; payment_id: number }) => [
        `${d.order_id} ${d.payment_id}`,
        d.kind,
      ]),
    );
    expect(differences).toEqual({
      [`${lost} 320099999991`]: 'payment_not_at_payhere',
      [`${unnotified} ${unnotifiedPayment}`]: 'payment_not_in_ledger',
      [`${twice} ${second}`]: 'payment_not_in_ledger',
      [`${short} ${shortPayment}`]: 'amount_differs',
      [`${unknown} ${unknownPayment}`]: 'payment_not_in_ledger',
    });
    const action = (orderId: string) =>
      only.differences.find((d: { order_id: string }) => d.order_id === orderId).action as string;
    expect(action(lost)).toMatch(/do not ship it until PayHere's portal shows the payment/);
    expect(action(unnotified)).toMatch(new RegExp(`GET /gateway/api/checkouts/${unnotified} looks it up`));
    expect(action(twice)).toMatch(/paid twice.*refund it/);
    expect(action(short)).toMatch(
      /PayHere took 900\.00 LKR.*price of order .* is 1000\.00 LKR: collect the rest/,
    );
    expect(action(unknown)).toMatch(/settle job settles it/);
    expect(only.differences.find((d: { order_id: string }) => d.order_id === short)).toMatchObject({
      ledger_amount: 1000,
      payhere_amount: 900,
      ledger_status: 'succeeded',
    });
    // Gross, fee and net from PayHere's amount_detail: the sandbox's fee is 2.9 %.
    expect(only.payments.find((p: { order_id: string }) => p.order_id === agreed)).toMatchObject({
      payment_id: Number(agreedPayment),
      status: 'RECEIVED',
      amount: 1000,
      gross: 1000,
      fee: 29,
      net: 971,
      settlement_currency: 'LKR',
      in_ledger: true,
      checked_at: expect.any(String),
    });
    expect(only.orders_paid.map((order: { order_id: string }) => order.order_id).sort()).toEqual(
      [agreed, lost, twice, short].sort(),
    );
    // Six payments PayHere holds: agreed, unnotified, twice (two), short, unknown.
    expect(only.totals).toEqual([
      {
        currency: 'LKR',
        orders_paid: 4,
        ordered: 4000,
        payments: 6,
        gross: 6100,
        fee: 176.9,
        net: 5923.1,
        refunds: 0,
        refunded: 0,
      },
    ]);
  });

  it('reads PayHere at most RECONCILIATION_CHECKS orders a request, and not at all once every line is fresh', async () => {
    const day = '2026-03-03';
    const orders = Array.from({ length: 12 }, () => ids('Budget'));
    for (const orderId of orders) await inLedger({ orderId, day, state: 'created' });
    sandbox.resetCounters();

    const runs: { searches: number; unchecked: number; complete: boolean }[] = [];
    for (let run = 0; run < 4; run++) {
      const before = sandbox.counters().search!;
      const answer = await reconcile(day);
      expect(answer.statusCode, answer.raw).toBe(200);
      runs.push({
        searches: sandbox.counters().search! - before,
        unchecked: answer.body.data.unchecked,
        complete: answer.body.data.complete,
      });
    }

    expect(runs).toEqual([
      { searches: 5, unchecked: 7, complete: false },
      { searches: 5, unchecked: 2, complete: false },
      { searches: 2, unchecked: 0, complete: true },
      { searches: 0, unchecked: 0, complete: true },
    ]);
    // Every PayHere call of the report was a search (the token was warm): 12, one per order.
    const { search, ...others } = sandbox.counters();
    expect(search).toBe(12);
    expect(Object.values(others).reduce((sum, count) => sum + count, 0)).toBe(0);
  });

  it('leaves an order PayHere could not answer for unchecked, answering all the same, and reads it next time', async () => {
    const day = '2026-03-06';
    const failing = ids('Failing');
    const pending = ids('Pending');
    await paidAtPayHere(failing);
    await paidAtPayHere(pending);
    await inLedger({ orderId: failing, day, state: 'created' });
    await inLedger({ orderId: pending, day, state: 'created' });
    // One search fails (a refusal that is not "No payments found"), the other is answered pending.
    sandbox.faults.inject('search', { kind: 'searchFailed' });
    sandbox.faults.inject('search', { kind: 'searchPending' });

    const first = await reconcile(day);
    const second = await reconcile(day);

    expect(first.statusCode, first.raw).toBe(200);
    expect(first.body.data).toMatchObject({ checked: 0, unchecked: 2, checked_now: 0, complete: false });
    expect(first.body.data.days[0].unchecked).toEqual([
      { order_id: failing, status: 'created', reason: 'not_checked', checked_at: null },
      { order_id: pending, status: 'created', reason: 'not_checked', checked_at: null },
    ]);
    expect(first.body.data.days[0].differences).toEqual([]);
    expect(second.body.data).toMatchObject({ checked: 2, unchecked: 0, checked_now: 2, complete: true });
    expect(second.body.data.days[0].differences.map((d: { kind: string }) => d.kind)).toEqual([
      'payment_not_in_ledger',
      'payment_not_in_ledger',
    ]);
  });

  it('reads an order again once the ledger changed it since its last check', async () => {
    const day = '2026-03-04';
    const orderId = ids('Changed');
    const paymentId = await paidAtPayHere(orderId);
    await inLedger({ orderId, day, state: 'created' });
    const before = await reconcile(day);
    expect(before.body.data.days[0].differences.map((d: { kind: string }) => d.kind)).toEqual([
      'payment_not_in_ledger',
    ]);
    // Its notification arrives: the ledger records the payment.
    await changeInLedger(orderId, { state: 'succeeded', paymentId }, Date.now());
    sandbox.resetCounters();

    const after = await reconcile(day);

    expect(sandbox.counters().search).toBe(1);
    expect(after.body.data.days[0].differences).toEqual([]);
    expect(after.body.data.days[0].payments[0]).toMatchObject({ in_ledger: true });
  });

  it('reads a comparison again once older than RECONCILIATION_MAX_AGE_SECONDS, never-checked orders first', async () => {
    const day = '2026-03-08';
    const old = ids('Old');
    await paidAtPayHere(old);
    await inLedger({ orderId: old, day, state: 'created' });
    await reconcile(day);
    // That check was two days ago: the comparison is still shown, with when it was made, and read again.
    const twoDaysAgo = Date.now() - 2 * 86_400_000;
    await setSnapshotCheckedAt(old, twoDaysAgo);
    const fresh = Array.from({ length: CHECKS }, () => ids('Fresh'));
    for (const orderId of fresh) await inLedger({ orderId, day, state: 'created' });
    sandbox.resetCounters();

    const first = await reconcile(day);
    const second = await reconcile(day);

    // The first request reads the five never compared; the old comparison still counts, dated.
    expect(first.body.data).toMatchObject({ checked: 6, unchecked: 0, checked_now: CHECKS });
    expect(first.body.data.oldest_check).toBe(new Date(twoDaysAgo).toISOString());
    expect(first.body.data.days[0].differences[0]).toMatchObject({
      order_id: old,
      checked_at: new Date(twoDaysAgo).toISOString(),
    });
    // The second reads the old one again, and only it.
    expect(second.body.data.checked_now).toBe(1);
    expect(sandbox.counters().search).toBe(CHECKS + 1);
    expect(Date.parse(second.body.data.oldest_check)).toBeGreaterThan(twoDaysAgo);
  });

  it('shows the refunds sent through the service, and their totals; the refunded payment’s status at PayHere is kept from its search', async () => {
    const orderId = ids('Refunded');
    const charged = await call('charge', {
      body: {
        type: 'PAYMENT',
        order_id: orderId,
        items: 'Door bell',
        currency: 'LKR',
        amount: 1000,
        customer_token: SEED.customerTokens.success,
      },
    });
    expect(charged.statusCode, charged.raw).toBe(200);
    const paymentId = charged.body.data.payment_id as number;
    const refund = await call('refund', {
      body: { payment_id: paymentId, amount: 250, description: 'Returned' },
    });
    expect(refund.statusCode, refund.raw).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    sandbox.resetCounters();
    const sentFrom = Date.now();

    const answer = await reconcile(today);
    const answeredBy = Date.now();
    await backgroundSettled();
    const records = await call('paymentRefunds', { id: String(paymentId) });

    const day = answer.body.data.days.find((d: { date: string }) => d.date === today);
    // PayHere's status of the refunded payment, kept from the report's own search of its order.
    expect(records.body.data.payhere_status).toBe('REFUND REQUESTED');
    const statusAt = Date.parse(records.body.data.payhere_status_at);
    expect(statusAt).toBeGreaterThanOrEqual(sentFrom);
    expect(statusAt).toBeLessThanOrEqual(answeredBy);
    const searches = sandbox.arrivals().map((arrival) => arrival.endpoint);
    expect(searches.length).toBeLessThanOrEqual(CHECKS);
    expect(new Set(searches)).toEqual(new Set(['search']));
    expect(day.refunds).toEqual([
      {
        order_id: orderId,
        payment_id: paymentId,
        amount: 250,
        full: false,
        at: expect.any(String),
        refund_id: refund.body.data.refund_id,
        status: 'accepted',
      },
    ]);
    expect(day.totals[0]).toMatchObject({ currency: 'LKR', refunds: 1, refunded: 250, orders_paid: 1 });
    expect(day.differences).toEqual([]);
  });

  it('adds PayHere’s gross, fee and net in the currency they are in: a USD payment settled in LKR', async () => {
    // PayHere's record of a 10.00 USD payment whose amount_detail is in LKR, at 300 to the dollar.
    const day = '2026-03-12';
    const orderId = ids('Usd');
    const paymentId = 320099000777;
    await inLedger({
      orderId,
      day,
      state: 'succeeded',
      currency: 'USD',
      amount: 10,
      paymentId: String(paymentId),
    });
    const record = {
      payment_id: paymentId,
      order_id: orderId,
      date: '2026-03-12 12:00:00',
      description: 'Door bell',
      status: 'RECEIVED',
      currency: 'USD',
      amount: 10,
      customer: {
        fist_name: 'Saman',
        last_name: 'Perera',
        email: 'saman@example.com',
        phone: '+94771234567',
      },
      amount_detail: {
        currency: 'LKR',
        gross: 3000,
        fee: 87,
        net: 2913,
        exchange_rate: 300,
        exchange_from: 'USD',
        exchange_to: 'LKR',
      },
      payment_method: { method: 'VISA', card_customer_name: 'S Perera', card_no: '************1234' },
      items: null,
    };
    sandbox.faults.inject('search', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({ status: 1, msg: `Payments with order_id:${orderId}`, data: [record] }),
    });

    const answer = await reconcile(day);

    const [only] = answer.body.data.days;
    expect(only.payments).toEqual([
      expect.objectContaining({
        currency: 'USD',
        amount: 10,
        settlement_currency: 'LKR',
        gross: 3000,
        fee: 87,
        net: 2913,
      }),
    ]);
    // The USD total holds the order and its payment, no LKR amount; LKR's, PayHere's amounts.
    expect(only.totals).toEqual([
      {
        currency: 'LKR',
        orders_paid: 0,
        ordered: 0,
        payments: 0,
        gross: 3000,
        fee: 87,
        net: 2913,
        refunds: 0,
        refunded: 0,
      },
      {
        currency: 'USD',
        orders_paid: 1,
        ordered: 10,
        payments: 1,
        gross: 0,
        fee: 0,
        net: 0,
        refunds: 0,
        refunded: 0,
      },
    ]);
  });

  it('answers CSV with format=csv or Accept: text/csv, formulas kept out of its cells', async () => {
    const day = '2026-03-05';
    const formula = `=1+2-${randomUUID().slice(0, 6)}`;
    await paidAtPayHere(formula);
    await inLedger({ orderId: formula, day, state: 'failed' });

    const byFormat = await reconcile(day, { query: { format: 'csv' } });
    const byAccept = await reconcile(day, { headers: { Accept: 'text/csv' } });
    const jsonAsked = await reconcile(day, { query: { format: 'json' }, headers: { Accept: 'text/csv' } });
    const preferred = await reconcile(day, { headers: { Accept: 'application/json;q=0.5, text/csv' } });

    for (const csv of [byFormat, byAccept, preferred]) {
      expect(csv.statusCode).toBe(200);
      expect(csv.headers['Content-Type']).toBe('text/csv; charset=utf-8');
      expect(csv.headers['Content-Disposition']).toBe(
        `attachment; filename="reconciliation-${day}-${day}.csv"`,
      );
      expect(csv.headers['Cache-Control']).toBe('no-store');
      expect(csv.headers['X-Content-Type-Options']).toBe('nosniff');
    }
    expect(jsonAsked.headers['Content-Type']).toBe('application/json');
    const lines = byFormat.raw.split('\r\n');
    expect(lines[0]).toBe(
      'date,line,kind,order_id,payment_id,status,currency,ledger_amount,payhere_amount,settlement_currency,gross,fee,net,refunded,at,checked_at,action',
    );
    expect(lines.at(-1)).toBe('');
    const difference = lines.find((line) => line.includes(',difference,'))!;
    expect(difference.startsWith(`${day},difference,payment_not_in_ledger,'${formula},`)).toBe(true);
    expect(difference).toMatch(/,failed,LKR,1000\.00,1000\.00,,,,,,,[0-9T:.-]+Z,"?PayHere holds payment/);
    // The second request read nothing new: the same lines, the same freshness.
    expect(byAccept.raw).toBe(byFormat.raw);
  });

  it('is the merchant’s alone: a customer is refused with nothing read', async () => {
    const token = await testToken({ scope: 'payments:read', sub: owner });
    sandbox.resetCounters();

    const answer = await reconcile('2026-03-02', { headers: { Authorization: `Bearer ${token}` } });

    expect(answer.statusCode).toBe(403);
    expect(answer.body).toEqual({
      status: -2,
      msg: 'Only the merchant reads reconciliation reports.',
      data: { code: 'forbidden' },
    });
    expect(sandbox.counters().search).toBe(0);
  });

  it.each([
    [{ from: '2026-03-05', to: '2026-03-04' }, 'query.to', 'must be the same day as from or later'],
    [{ from: '2026-03-01', to: '2026-04-01' }, 'query.to', 'must be at most 30 days after from'],
    [{ from: '2026-02-30', to: '2026-03-01' }, 'query.from', 'must be a day that exists'],
    [{ from: '2026-03-01', to: '2026-03-01', format: 'xml' }, 'query.format', undefined],
  ])('refuses the range %o', async (query, path, message) => {
    const answer = await call('reconciliationReport', { query });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.code).toBe('invalid_request');
    expect(answer.body.data.errors[0].path).toBe(path);
    if (message) expect(answer.body.data.errors[0].message).toBe(message);
  });
});

describe('the report within the merchant’s share of PayHere’s budget', () => {
  it('searches only what the merchant’s share lets it, answers with the rest unchecked, and reads them once the window turns', async () => {
    const day = '2026-03-07';
    const orders = Array.from({ length: 5 }, () => ids('Share'));
    for (const orderId of orders) await inLedger({ orderId, day, state: 'created' });
    // The merchant's share made small: 2 calls per 10 s, 3 with spare ones, counted in a state table.
    const state = `state-${randomUUID()}`;
    await createTable(inject('dynamodbEndpoint'), state);
    const client = dynamoDbAt(inject('dynamodbEndpoint'));
    const clock = { now: Date.now() };
    const shares = new CallerShares({
      client,
      table: state,
      timeoutMs: 2_000,
      config: loadSharesConfig({ MERCHANT_RATE_LIMIT: '2/10000', MERCHANT_RATE_CAP: '3' }),
      now: () => clock.now,
    });
    const reports = new ReconciliationReports({
      ledger: new LedgerReconciliationReads({ client: localClient(), table: process.env.LEDGER_TABLE! }),
      snapshots: new PaymentSnapshots({ client, table: state, timeoutMs: 2_000 }),
      payhere: createPayHere(loadConfig(sandboxGatewayEnv(sandbox.url)), { shares }),
      checks: CHECKS,
      maxAgeMs: 86_400_000,
    });
    const asMerchant = () =>
      callers.run({ id: 'back-office', kind: 'merchant' }, () =>
        reports.report({ role: 'merchant', sub: 'back-office' }, { from: day, to: day }, Date.now() + 20_000),
      );
    sandbox.resetCounters();

    const first = await asMerchant();
    const searchesFirst = sandbox.counters().search!;
    const refusedAgain = await asMerchant();
    clock.now += 10_000;
    const next = await asMerchant();

    expect(searchesFirst).toBe(3);
    expect(first).toMatchObject({ checked: 3, unchecked: 2, checked_now: 3, complete: false });
    expect(refusedAgain).toMatchObject({ checked: 3, unchecked: 2, checked_now: 0 });
    expect(next).toMatchObject({ checked: 5, unchecked: 0, checked_now: 2, complete: true });
    expect(sandbox.counters().search).toBe(5);
  });
});
