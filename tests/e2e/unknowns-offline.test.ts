import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, sandboxGatewayEnv, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { clearDynamoDbFaults, injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { signed } from '../helpers/notifications.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';
import { testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob } from '../helpers/settle.ts';
import { chargeBody, paymentsOf } from '../resilience/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * Every unknown ends in PayHere's truth through `npm start`'s stack (serverless-offline, the
 * functions in their workers, the sandbox and the local DynamoDB as real loopback servers, faults
 * injected over their control routes): a claim whose DynamoDB answer was lost, PayHere's clock
 * behind ours, a charge PayHere finishes late, a search that says pending, an outcome the ledger
 * failed to record, refunds whose outcome is unknown, two candidate payments, a pending charge
 * PayHere fails later, a paid order paid again in the SDK. The functions run with no settle delay
 * and no wait between looks, so a repeat of a key settles at once; the settle job runs in-process
 * over the same tables and sandbox.
 */
let sandbox: Sandbox;
let offline: Offline;
let api: string;
const ledger = testLedger();
/** The functions' idempotency table, this file's own (the settle job settles every record in it). */
const store = await ownIdempotencyTable();
/** How far the sandbox's clock is ahead of the service's: time passing at PayHere alone. */
let ahead = 0;
const MINUTE = 60_000;
/** Past the default settle delay (10 minutes) after a request's window: the in-process settle job's clock. */
const LATER = 12 * MINUTE;
/**
 * The functions' and the settle job's budget, as roomy as the sandbox (no rate limit): the settle
 * job takes only what live calls leave, and this file's requests fill PayHere's 20 per 10 s. The
 * fallback's too: on a loaded machine a slow state-table answer puts a container on its fallback
 * share, and this file is not about the budget.
 */
const ROOMY_BUDGET = '1000/10000';
/** The settle job with its clock `later` ms ahead. */
const settle = (later: number) =>
  settleJob(store, ledger, later, undefined, { rateLimit: { limit: 1_000, windowMs: 10_000 } }).run();

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false, now: () => Date.now() + ahead });
  // The in-process settle job talks to the same sandbox as the functions.
  Object.assign(process.env, sandboxGatewayEnv(sandbox.url));
  ({ offline, api } = await startOfflineAgainst(sandbox, {
    ...TEST_AUTH_ENV,
    ESBUILD_WORK_FOLDER: '.esbuild-unknowns-offline',
    SETTLE_DELAY_SECONDS: '0',
    SETTLE_SECOND_LOOK_SECONDS: '0',
    UNKNOWN_LOOK_AGAIN_SECONDS: '0',
    GATEWAY_RATE_LIMIT: ROOMY_BUDGET,
    GATEWAY_RATE_LIMIT_FALLBACK: ROOMY_BUDGET,
  }));
}, 180_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

async function post(route: string, body: object, key: string = randomUUID()) {
  const response = await fetch(`${api}/payments/${route}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${await tokenFor(MERCHANT_SCOPES)}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { data: any; msg: string } };
}

const charge = (body: object, key?: string) => post('charge', body, key);
const refund = (body: object, key?: string) => post('refund', body, key);

async function checkout(orderId: string) {
  const response = await fetch(`${api}/checkouts/${orderId}`, {
    headers: { authorization: `Bearer ${await tokenFor(MERCHANT_SCOPES)}` },
  });
  return (await response.json()) as { data: any };
}

/** A charge whose answer is lost (`fault` on PayHere's charge) with the search that would settle it down: 202. */
async function lostCharge(fault: Parameters<Sandbox['faults']['inject']>[1], body = chargeBody()) {
  const key = randomUUID();
  sandbox.faults.inject('charge', fault);
  sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
  const lost = await charge(body, key);
  sandbox.faults.clear();
  expect(lost.status).toBe(202);
  return { body, key };
}

/** A payment made through the service. */
async function paid(): Promise<number> {
  const charged = await charge(chargeBody());
  expect(charged.status).toBe(200);
  return charged.body.data.payment_id as number;
}

describe('through npm start’s stack', () => {
  it('a claim whose DynamoDB answer was lost is the charge’s own: paid once, the order succeeded', async () => {
    const body = chargeBody();
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'applyAndLose' },
    });

    const charged = await charge(body);

    expect(charged.status).toBe(200);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'succeeded',
      charge: { inflight: false },
    });
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('a token lease whose DynamoDB answer was lost is the container’s own: its charges go through, one token fetched', async () => {
    sandbox.expireTokens();
    const tokensBefore = sandbox.counters().token ?? 0;
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: process.env.STATE_TABLE!,
      keyPrefix: 'token',
      fault: { kind: 'applyAndLose' },
    });

    const first = await charge(chargeBody());
    const second = await charge(chargeBody());

    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect((sandbox.counters().token ?? 0) - tokensBefore).toBe(1);
  });

  it('with PayHere’s clock 3 s behind, a lost charge’s repeat adopts its payment; a new key is refused', async () => {
    sandbox.setClockOffset(-3_000);
    try {
      const body = chargeBody();
      const key = randomUUID();
      sandbox.faults.inject('charge', { kind: 'reset' });
      sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
      const lost = await charge(body, key);
      sandbox.faults.clear();

      const repeat = await charge(body, key);
      const another = await charge(body);

      expect(lost.status).toBe(202);
      expect(repeat.status).toBe(200);
      expect(another.status).toBe(409);
      expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
    } finally {
      sandbox.setClockOffset(0);
    }
  });

  it('a pending charge PayHere fails later, signed, for its payment: the order may be charged again', async () => {
    const body = { ...chargeBody(), customer_token: SEED.customerTokens.pending };
    const pending = await charge(body);

    await sandbox.decidePending(body.order_id, 'failure', {
      notify_url: `${offline.baseUrl}/gateway/notify`,
    });
    const failed = await ledger.getOrder(body.order_id);
    const again = await charge({ ...body, customer_token: SEED.customerTokens.success });

    expect(pending.status).toBe(202);
    expect(failed?.state).toBe('failed');
    expect(again.status).toBe(200);
  });

  it('finished by PayHere 26 s after it arrived: the repeat adopts it once it shows; a new key is refused', async () => {
    const { body, key } = await lostCharge({ kind: 'processLate', ms: 26_000 });
    ahead += 27_000;

    const repeat = await charge(body, key);
    const another = await charge(body);

    expect(repeat.status).toBe(200);
    expect(another.status).toBe(409);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('a search answering pending leaves the charge unknown; "not done" only at two looks at real answers', async () => {
    const { body, key } = await lostCharge({ kind: 'resetBeforeProcessing' });
    sandbox.faults.inject('search', { kind: 'searchPending' }, Number.POSITIVE_INFINITY);

    const held = await charge(body, key);
    await settle(LATER);
    const order = await ledger.getOrder(body.order_id);
    sandbox.faults.clear();
    await settle(LATER + 3 * MINUTE);
    await settle(LATER + 6 * MINUTE);
    const repeat = await charge(body, key);
    const again = await charge(body);

    expect(held.status).toBe(202);
    expect(order?.state).toBe('unknown');
    expect(repeat.status).toBe(402);
    expect(again.status).toBe(200);
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('an outcome the ledger failed to record keeps the order open until the settle job records PayHere’s', async () => {
    const body = chargeBody();
    // The claim goes through; every later write of the order fails.
    const order = {
      operation: 'UpdateItem' as const,
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${body.order_id}`,
    };
    await injectDynamoDbFault({ ...order, fault: { kind: 'slow', ms: 0 } });
    await injectDynamoDbFault({ ...order, fault: { kind: 'status500' }, times: Number.POSITIVE_INFINITY });

    const charged = await charge(body);
    const open = await ledger.getOrder(body.order_id);
    await clearDynamoDbFaults(undefined, process.env.LEDGER_TABLE);
    await settle(MINUTE);
    const shown = await checkout(body.order_id);

    expect(charged.status).toBe(200);
    expect(open?.charge?.inflight).toBe(true);
    expect(shown.data).toMatchObject({ status: 'succeeded', payment_id: charged.body.data.payment_id });
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('two payments of a lost charge’s order: paid, flagged as a possible duplicate for the merchant, out of the queue', async () => {
    const { body, key } = await lostCharge({ kind: 'reset' });
    // The same order charged again outside the service: two payments no charge of the service owns.
    await apiClient(sandbox, await accessToken(sandbox)).post('payment/charge', body);

    const repeat = await charge(body, key);
    const shown = await checkout(body.order_id);
    const run = await settle(60 * MINUTE);

    expect(repeat.status).toBe(200);
    expect(repeat.body.msg).toMatch(/possible duplicate/);
    expect(shown.data.status).toBe('succeeded');
    expect(shown.data.duplicate_payment_ids).toHaveLength(1);
    expect(shown.data.duplicate_payment_ids).not.toContain(repeat.body.data.payment_id);
    expect(run.settled).toBe(0);
    expect(await ledger.chargesDue(Date.now() + 365 * 24 * 60 * MINUTE, 100)).not.toContain(body.order_id);
  });

  it('a refund whose outcome is unknown blocks another with a new key (naming its key); its repeat settles it: refunded once', async () => {
    const paymentId = await paid();
    const first = randomUUID();
    const partial = { payment_id: paymentId, description: 'Partial', amount: 10 };
    sandbox.faults.inject('refund', { kind: 'reset' });
    const lost = await refund(partial, first);
    sandbox.faults.clear();

    const blocked = await refund(partial);
    const settled = await refund(partial, first);

    expect(lost.status).toBe(202);
    expect(blocked.status).toBe(409);
    expect(blocked.body.data).toEqual({ code: 'conflict', idempotency_key: first });
    expect(settled.status).toBe(200);
    expect(sandbox.refunds(paymentId).refunds).toHaveLength(1);
  });

  it('a never-made partial refund of a payment refunded in part before is never answered done', async () => {
    const paymentId = await paid();
    const earlier = await refund({ payment_id: paymentId, description: 'First', amount: 10 });
    const key = randomUUID();
    const lostBody = { payment_id: paymentId, description: 'Second', amount: 20 };
    sandbox.faults.inject('refund', { kind: 'resetBeforeProcessing' });
    const lost = await refund(lostBody, key);
    sandbox.faults.clear();

    const repeat = await refund(lostBody, key);
    await settle(LATER);
    const final = await refund(lostBody, key);

    expect(earlier.status).toBe(200);
    expect(lost.status).toBe(202);
    expect(repeat.status).toBe(202);
    expect(final.status).toBe(409);
    expect(final.body.data.code).toBe('outcome_undeterminable');
    expect(final.body.msg).toMatch(/cannot be determined/);
    expect(sandbox.refunds(paymentId).refunds).toHaveLength(1);
  });

  it('a paid order paid again in PayHere’s SDK is recorded on the order for the merchant', async () => {
    const body = chargeBody();
    const charged = await charge(body);
    // The same order paid a second time at PayHere; PayHere notifies the service of it, signed.
    const second = await apiClient(sandbox, await accessToken(sandbox)).post('payment/charge', body);
    const secondId = String(second.json.data.payment_id);
    const fields = signed({
      order_id: body.order_id,
      payhere_amount: '120.50',
      status_code: '2',
      payment_id: secondId,
    });

    const notified = await fetch(`${offline.baseUrl}/gateway/notify`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    const shown = await checkout(body.order_id);

    expect(charged.status).toBe(200);
    expect(notified.status).toBe(200);
    expect(shown.data).toMatchObject({
      status: 'succeeded',
      payment_id: charged.body.data.payment_id,
      duplicate_payment_ids: [secondId],
    });
  });
});
