import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { captureLogs } from '../helpers/logs.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { customer, customerToken, testLedger } from '../helpers/orders.ts';
import { chargeBody, paymentsOf } from '../resilience/fixtures.ts';
import { checkoutRequest } from '../sandbox/signing.ts';

/**
 * The ledger believes only what PayHere's own records show (issue "An order's state follows
 * PayHere's evidence"): each case a new user met against an independent PayHere stand-in, end to
 * end through the handlers.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');
/** The sandbox posts a checkout's notification here: nowhere (the tests post it themselves). */
const NOWHERE = 'https://notify.example.invalid/payhere';

const asCustomer = async (sub: string) => ({ Authorization: `Bearer ${await customerToken(sub)}` });
const orderOf = async (orderId: string) => (await call('getCheckout', { id: orderId })).body.data;

async function checkout(kind: string, fields: Record<string, unknown>, owner = alice): Promise<string> {
  const created = await call('createCheckout', {
    body: { kind, items: 'Evidence', currency: 'LKR', ...fields },
    headers: { 'On-Behalf-Of': owner },
  });
  expect(created.statusCode).toBe(201);
  return created.body.data.order_id;
}

describe('no notification reopens a charge that may have succeeded', () => {
  it('a signed failure for an unknown charge leaves it unknown, and a new charge of the order is refused', async () => {
    const body = chargeBody();
    // Processed by PayHere, its answer lost, and the search that would settle it fails.
    sandbox.faults.inject('charge', { kind: 'reset' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
    const lost = await call('charge', { body });
    sandbox.faults.clear();

    // A late failure of an earlier declined attempt, or one the owner produced with a declining card.
    const late = await notify(
      signed({
        order_id: body.order_id,
        payhere_amount: '120.50',
        status_code: '-2',
        payment_id: '320099999999',
      }),
    );
    const again = await call('charge', { body });

    expect(lost.statusCode).toBe(202);
    expect(late.statusCode).toBe(200);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('unknown');
    expect(again.statusCode).toBe(409);
    expect(again.body.data.code).toBe('order_conflict');
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('a signed cancel after a declined charge leaves the order as the charge left it, audited as not acted on', async () => {
    const body = { ...chargeBody(), customer_token: SEED.customerTokens.declined };
    const declined = await call('charge', { body });
    const lines = captureLogs('info');

    await notify(signed({ order_id: body.order_id, payhere_amount: '120.50', status_code: '-1' }));

    expect(declined.statusCode).toBe(402);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('failed');
    expect(lines).toContainEqual(
      expect.objectContaining({
        message: 'audit',
        outcome: 'unchanged',
        why: 'charged',
        orderId: body.order_id,
      }),
    );
  });
});

describe('a charge’s own answer and other evidence', () => {
  it('a charge answered after its notification settled the order frees its slot: the order shows succeeded, not pending', async () => {
    const body = chargeBody();
    // Processed at once; its answer takes half a second to come back.
    sandbox.faults.inject('charge', { kind: 'latency', ms: 1_500, afterProcessing: true });
    const charging = call('charge', { body });
    // The charge holds the order's slot, and PayHere processed it: its payment is in the records.
    for (let waited = 0; !(await ledger.getOrder(body.order_id))?.charge?.inflight; waited += 20) {
      if (waited > 1_000) throw new Error('the charge never took the order');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The charge's notification comes first; PayHere's records show its payment.
    await notify(signed({ order_id: body.order_id, payhere_amount: '120.50', status_code: '2' }));
    const meanwhile = await ledger.getOrder(body.order_id);

    const charged = await charging;

    expect(meanwhile).toMatchObject({ state: 'succeeded', charge: { inflight: true } });
    expect(charged.statusCode).toBe(200);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'succeeded',
      paymentId: String(charged.body.data.payment_id),
      charge: { inflight: false },
    });
    expect((await orderOf(body.order_id)).status).toBe('succeeded');
  });
});

describe('no order is paid without a payment', () => {
  it('a payment order of 100,000 LKR is not paid by a signed success of another flow (a pre-approval’s)', async () => {
    const orderId = await checkout('payment', { amount: 100_000 });
    // The owner pre-approved a card in the SDK under this order's id and amount: signed, no payment.
    const preapproval = await sandbox.completeCheckout(
      checkoutRequest(NOWHERE, {
        kind: 'preapproval',
        order_id: orderId,
        items: 'Evidence',
        amount: 100_000,
      }),
    );

    const answer = await notify(
      signed({
        order_id: orderId,
        payhere_amount: '100000.00',
        status_code: '2',
        payment_id: String(preapproval.payment_id),
        customer_token: preapproval.customer_token ?? undefined,
      }),
    );

    expect(answer.statusCode).toBe(200);
    expect(await orderOf(orderId)).toMatchObject({
      status: 'created',
      payment_id: null,
      customer_token: null,
    });
    expect(await ledger.unmatched(orderId)).toEqual([expect.objectContaining({ reason: 'flow_mismatch' })]);
    expect(await paymentsOf(sandbox, orderId)).toBe(0);
  });

  it('a signed success PayHere’s search does not show leaves a payment order pending, never succeeded', async () => {
    const orderId = await checkout('payment', { amount: 100_000 });

    await notify(
      signed({
        order_id: orderId,
        payhere_amount: '100000.00',
        status_code: '2',
        payment_id: '320012345678',
      }),
    );

    expect(await orderOf(orderId)).toMatchObject({ status: 'pending', payment_id: null });
    expect(await ledger.getOrder(orderId)).toMatchObject({ reported: { paymentId: '320012345678' } });
  });

  it.each([
    ['the notification states them', { item_recurrence: '1 Year', item_duration: '1 Year' }],
    [
      'the notification was altered to the order’s, PayHere’s record states them',
      { item_recurrence: '1 Month', item_duration: '1 Year' },
    ],
  ])('a recurring order on other terms than its own is kept apart and alarmed: %s', async (_, terms) => {
    const orderId = await checkout('recurring', { amount: 2_500, recurrence: '1 Month', duration: '1 Year' });
    // The SDK's request is unsigned: the app asked PayHere for yearly installments instead.
    const yearly = await sandbox.completeCheckout(
      checkoutRequest(NOWHERE, {
        kind: 'recurring',
        order_id: orderId,
        items: 'Evidence',
        amount: 2_500,
        recurrence: '1 Year',
        duration: '1 Year',
      }),
    );
    const lines = captureLogs('warn');

    await notify(
      signed({
        order_id: orderId,
        payhere_amount: '2500.00',
        status_code: '2',
        payment_id: String(yearly.payment_id),
        subscription_id: String(yearly.subscription_id),
        message_type: 'AUTHORIZATION_SUCCESS',
        recurring: '1',
        ...terms,
      }),
    );

    expect(await orderOf(orderId)).toMatchObject({ status: 'created', subscription_id: null });
    expect(await ledger.subscriptionsOf(alice)).not.toContain(String(yearly.subscription_id));
    expect(await ledger.lookup('subscription', String(yearly.subscription_id))).toBeUndefined();
    expect(await ledger.unmatched(orderId)).toEqual([expect.objectContaining({ reason: 'terms_mismatch' })]);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 'error', message: 'notification kept apart for the operator' }),
    );
  });

  it('a recurring order on its own terms succeeds, and the subscription is the customer’s', async () => {
    const orderId = await checkout('recurring', { amount: 2_500, recurrence: '1 Month', duration: '1 Year' });
    const monthly = await sandbox.completeCheckout(
      checkoutRequest(NOWHERE, {
        kind: 'recurring',
        order_id: orderId,
        items: 'Evidence',
        amount: 2_500,
        recurrence: '1 Month',
        duration: '1 Year',
      }),
    );

    await notify(
      signed({
        order_id: orderId,
        payhere_amount: '2500.00',
        status_code: '2',
        payment_id: String(monthly.payment_id),
        subscription_id: String(monthly.subscription_id),
        message_type: 'AUTHORIZATION_SUCCESS',
        recurring: '1',
        item_recurrence: '1 Month',
        item_duration: '1 Year',
      }),
    );

    expect(await orderOf(orderId)).toMatchObject({
      status: 'succeeded',
      subscription_id: monthly.subscription_id,
    });
    expect(await ledger.subscriptionsOf(alice)).toContain(String(monthly.subscription_id));
  });

  it('a hold known only from its notification is unverified until a capture through the service proves it', async () => {
    const orderId = await checkout('authorize', { amount: 100 });
    const hold = await sandbox.completeCheckout(
      checkoutRequest(NOWHERE, { kind: 'authorize', order_id: orderId, items: 'Evidence', amount: 100 }),
    );
    await notify(
      signed({
        order_id: orderId,
        payhere_amount: '100.00',
        status_code: '3',
        authorization_token: hold.authorization_token ?? undefined,
        captured_amount: '0.00',
      }),
    );
    const notified = await orderOf(orderId);

    const captured = await call('capture', {
      body: { authorization_token: hold.authorization_token, amount: 100, deduction_details: 'Shipped' },
    });

    expect(notified).toMatchObject({
      status: 'succeeded',
      authorization_token: hold.authorization_token,
      verified: false,
    });
    expect(captured.statusCode).toBe(200);
    expect(await orderOf(orderId)).toMatchObject({ verified: true });
  });

  it('a hold placed through the charge route is verified: its token is PayHere’s own answer', async () => {
    const body = chargeBody(`Held-${randomUUID()}`, 'AUTHORIZE');

    const held = await call('charge', { body });

    expect(held.statusCode).toBe(200);
    expect(await orderOf(body.order_id)).toMatchObject({ status: 'succeeded', verified: true });
  });

  it('a forged token on a notified hold stays unverified: a capture with it proves nothing', async () => {
    const orderId = await checkout('authorize', { amount: 100 });
    const forged = randomUUID();
    await notify(
      signed({ order_id: orderId, payhere_amount: '100.00', status_code: '3', authorization_token: forged }),
    );

    const capture = await call('capture', {
      body: { authorization_token: forged, amount: 100, deduction_details: 'Shipped' },
      headers: await asCustomer(alice),
    });

    expect(capture.statusCode).toBe(422);
    expect(await orderOf(orderId)).toMatchObject({ verified: false });
  });
});

describe('a paid order paid again', () => {
  const gatewayApi = async () => {
    const { accessToken, apiClient } = await import('../sandbox/helpers.ts');
    return apiClient(sandbox, await accessToken(sandbox));
  };

  it('is recorded on the order for the merchant, counted, once PayHere’s records show the second payment', async () => {
    const body = chargeBody();
    const charged = await call('charge', { body });
    // The same order paid a second time at PayHere (through its SDK, say).
    const second = await (await gatewayApi()).post('payment/charge', body);
    const secondId = String(second.json.data.payment_id);
    const lines = captureLogs('info');

    const notified = await notify(
      signed({ order_id: body.order_id, payhere_amount: '120.50', status_code: '2', payment_id: secondId }),
    );

    expect(charged.statusCode).toBe(200);
    expect(notified.statusCode).toBe(200);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'succeeded',
      paymentId: String(charged.body.data.payment_id),
      duplicatePayments: [secondId],
    });
    expect((await orderOf(body.order_id)).duplicate_payment_ids).toEqual([secondId]);
    expect(lines).toContainEqual(
      expect.objectContaining({ message: 'audit', evidence: 'second_payment', paymentId: secondId }),
    );
  });

  it('is not recorded on a notification’s word alone: the payment id is not signed', async () => {
    const body = chargeBody();
    await call('charge', { body });

    await notify(
      signed({
        order_id: body.order_id,
        payhere_amount: '120.50',
        status_code: '2',
        payment_id: '320099999999',
      }),
    );

    expect((await ledger.getOrder(body.order_id))?.duplicatePayments).toEqual([]);
  });
});
