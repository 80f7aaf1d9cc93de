import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';
import { customer, customerToken, testLedger } from '../helpers/orders.ts';

/**
 * Every flow of docs/contract.md "Checkouts and notifications" through serverless-offline, driven by the
 * sandbox's notifications as PayHere would send them: a checkout created by the API, completed in
 * the sandbox (the customer's part in the SDK), notified to the notify_url the checkout named (the
 * API's own base URL here: no PUBLIC_BASE_URL), then seen by its owner through getCheckout.
 */
let sandbox: Sandbox;
let offline: Offline;
let api: string;
const ledger = testLedger();
const alice = customer('alice');
const bob = customer('bob');

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline, api } = await startOfflineAgainst(sandbox, TEST_AUTH_ENV));
}, 120_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

async function request(
  who: 'merchant' | string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const bearer = who === 'merchant' ? await tokenFor(MERCHANT_SCOPES) : await customerToken(who);
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${bearer}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(method === 'POST' && path.startsWith('/payments') ? { 'idempotency-key': randomUUID() } : {}),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: (await response.json()) as { status: number; msg: string; data: any },
  };
}

/** A checkout created through the API, for Alice: her own pre-approval, or one the merchant priced for her. */
async function checkout(kind: string, fields: Record<string, unknown> = {}) {
  const body = {
    kind,
    items: 'Door bell',
    currency: 'LKR',
    ...(kind === 'preapproval' ? {} : { amount: 1500 }),
    ...fields,
  };
  const created =
    kind === 'preapproval'
      ? await request(alice, 'POST', '/checkouts', body)
      : await request('merchant', 'POST', '/checkouts', body, { 'on-behalf-of': alice });
  expect(created.status).toBe(201);
  expect(created.body.data.notify_url).toBe(`${api.replace('/gateway/api', '')}/gateway/notify`);
  return created.body.data;
}

const view = async (orderId: string, who = alice) => request(who, 'GET', `/checkouts/${orderId}`);

describe('each flow ends where the app can see it', () => {
  it('a pre-approval: the saved card’s token, which only its owner can charge', async () => {
    const data = await checkout('preapproval');

    const completed = await sandbox.completeCheckout({ ...data, outcome: 'success' });
    const hers = await view(data.order_id);
    const priced = await checkout('charge', { amount: 200 });
    const charge = {
      type: 'PAYMENT',
      order_id: priced.order_id,
      items: 'Door bell',
      currency: 'LKR',
      amount: 200,
      customer_token: completed.customer_token,
    };
    const bobs = await request(bob, 'POST', '/payments/charge', charge);
    const paid = await request(alice, 'POST', '/payments/charge', charge);

    expect(completed.deliveries).toEqual([expect.objectContaining({ status: 200 })]);
    expect(hers.body.data).toMatchObject({
      status: 'succeeded',
      customer_token: completed.customer_token,
      card: { method: 'VISA', card_no: '************1234', card_expiry: expect.any(String) },
    });
    expect((await view(data.order_id, bob)).status).toBe(404);
    expect(bobs.status).toBe(404);
    expect(paid.status).toBe(200);
  });

  it('a payment in the app: its payment id, confirmed by PayHere’s records', async () => {
    const data = await checkout('payment');

    const completed = await sandbox.completeCheckout({ ...data, outcome: 'success' });

    expect((await view(data.order_id)).body.data).toMatchObject({
      status: 'succeeded',
      payment_id: completed.payment_id,
    });
  });

  it.each([
    ['decline', 'failed'],
    ['cancel', 'cancelled'],
    ['pending', 'pending'],
  ])('a payment the customer’s %s ends: %s', async (outcome, status) => {
    const data = await checkout('payment');

    await sandbox.completeCheckout({ ...data, outcome });

    expect((await view(data.order_id)).body.data.status).toBe(status);
  });

  it('a hold: its authorization token', async () => {
    const data = await checkout('authorize');

    const completed = await sandbox.completeCheckout({ ...data, outcome: 'success' });

    expect((await view(data.order_id)).body.data).toMatchObject({
      status: 'succeeded',
      authorization_token: completed.authorization_token,
    });
  });

  it('a subscription: its id, then the customer’s in listSubscriptions, and its installments confirmed', async () => {
    const data = await checkout('recurring', { recurrence: '1 Month', duration: '1 Year' });

    expect(data).toMatchObject({ recurrence: '1 Month', duration: '1 Year' });
    const completed = await sandbox.completeCheckout({ ...data, outcome: 'success' });
    const id = completed.subscription_id!;
    await sandbox.chargeInstallment(id, { outcome: 'success', notify_url: data.notify_url });
    const order = await view(data.order_id);
    const hers = await request(alice, 'GET', '/subscriptions');
    const payments = await request(alice, 'GET', `/subscriptions/${id}/payments`);
    const bobs = await request(bob, 'GET', `/subscriptions/${id}`);

    expect(order.body.data).toMatchObject({ status: 'succeeded', subscription_id: id });
    expect(hers.body.data.map((s: any) => s.subscription_id)).toEqual([id]);
    expect(payments.body.data).toHaveLength(2);
    expect((await ledger.getOrder(data.order_id))?.installmentsPaid).toBe(2);
    expect(bobs.status).toBe(404);
  });
});

describe('what PayHere’s deliveries can do wrong changes nothing', () => {
  it('a duplicate delivery', async () => {
    const data = await checkout('preapproval');

    const completed = await sandbox.completeCheckout({
      ...data,
      outcome: 'success',
      delivery: { duplicate: true },
    });

    expect(completed.deliveries.map((delivery) => delivery.status)).toEqual([200, 200]);
    expect((await view(data.order_id)).body.data.customer_token).toBe(completed.customer_token);
  });

  it('a bad signature: 401, nothing recorded; the order learns its payment from PayHere’s own records', async () => {
    const data = await checkout('payment');

    const completed = await sandbox.completeCheckout({
      ...data,
      outcome: 'success',
      delivery: { badSignature: true },
    });
    const recorded = await ledger.getOrder(data.order_id);
    const read = await view(data.order_id);

    expect(completed.deliveries.map((delivery) => delivery.status)).toEqual([401]);
    expect(recorded).toMatchObject({ state: 'created', paymentId: null });
    // getCheckout refreshes an order that is not final from the order's payments at PayHere.
    expect(read.body.data).toMatchObject({ status: 'succeeded', payment_id: completed.payment_id });
  });

  it('a replay with a tampered customer token, after the genuine one', async () => {
    const data = await checkout('preapproval');
    const genuine = await sandbox.completeCheckout({ ...data, outcome: 'success' });

    const [replayed] = await sandbox.replayNotification(genuine.deliveries[0]!.id);
    await sandbox.completeCheckout({ ...(await checkout('preapproval')), outcome: 'success', delivery: {} });
    const tampered = { ...genuine.deliveries[0]!.fields, customer_token: 'E'.repeat(32) };
    const forged = await fetch(genuine.deliveries[0]!.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(tampered).toString(),
    });

    expect(replayed?.status).toBe(200);
    expect(forged.status).toBe(200);
    expect((await view(data.order_id)).body.data.customer_token).toBe(genuine.customer_token);
    expect(await ledger.lookup('customer_token', 'E'.repeat(32))).toBeUndefined();
  });

  it('a late delivery is still recorded when it comes', async () => {
    // A pre-approval: PayHere's records show no saved card, so only the notification can tell.
    const data = await checkout('preapproval');

    await sandbox.completeCheckout({ ...data, outcome: 'success', delivery: { delayMs: 300 } });
    const before = (await view(data.order_id)).body.data.status;
    await sandbox.deliveriesSettled();

    expect(before).toBe('created');
    expect((await view(data.order_id)).body.data.status).toBe('succeeded');
  });
});
