import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { GetItemCommand, ScanCommand, UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { CLOCK_SKEW_MS } from '../../lib/reads/store.ts';
import { SEED } from '../../sandbox/server.ts';
import type { Answer } from '../helpers/events.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { customer, newOrder, testLedger } from '../helpers/orders.ts';
import { dynamoDbAt } from '../helpers/state-table.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';
import { checkoutRequest } from '../sandbox/signing.ts';

/**
 * The read routes share PayHere's answers, and the service's own money call on an object drops
 * them: read (PayHere +1), read again (no call, `Age`), the money call, read (PayHere +1, fresh).
 */
const sandbox = useTestGateway();
const ledger = testLedger();
/** PayHere's notifications of the checkouts made here go nowhere: the ledger is written directly. */
const NOWHERE = 'https://notify.example.invalid/payhere';

const orderId = () => `Drop-${randomUUID().slice(0, 12)}`;
const chargeBody = (order: string, type: 'PAYMENT' | 'AUTHORIZE' = 'PAYMENT') => ({
  type,
  order_id: order,
  items: 'Shared reads',
  currency: 'LKR',
  amount: 120.5,
  customer_token: SEED.customerTokens.success,
});

/** PayHere's answer count for `endpoint` so far (set-up calls straight to the sandbox included). */
const count = (endpoint: string) => sandbox.counters()[endpoint] ?? 0;

/** Read twice: the second is shared (no PayHere call, `Age`). What the first one cost, and the answers. */
async function readTwice(read: () => Promise<Answer>, endpoint: string) {
  const before = count(endpoint);
  const first = await read();
  const second = await read();
  expect(first.statusCode, first.raw).toBe(200);
  expect(first.headers.Age).toBeUndefined();
  expect(second.statusCode).toBe(200);
  expect(second.headers.Age).toMatch(/^\d+$/);
  expect(second.body).toEqual(first.body);
  expect(count(endpoint) - before).toBe(1);
  return first;
}

/** The read after the money call went to PayHere: one call, no `Age`. */
async function expectFresh(read: () => Promise<Answer>, endpoint: string): Promise<Answer> {
  const before = count(endpoint);
  const answer = await read();
  expect(answer.statusCode, answer.raw).toBe(200);
  expect(answer.headers.Age).toBeUndefined();
  expect(count(endpoint) - before).toBe(1);
  return answer;
}

/**
 * Answers whose request started within a second of a drop are not kept (clock skew between
 * containers). Instead of waiting that second out, the file's drops (tombstones, `droppedAt`, in its
 * STATE_TABLE) are moved that far back once the ones written after answers have landed: a read now
 * is kept, as after the wait.
 */
async function pastClockSkew(): Promise<void> {
  await backgroundSettled();
  const client = dynamoDbAt(inject('dynamodbEndpoint'));
  const table = process.env.STATE_TABLE!;
  const { Items = [], LastEvaluatedKey } = await client.send(
    new ScanCommand({
      TableName: table,
      FilterExpression: 'attribute_exists(droppedAt)',
      ConsistentRead: true,
    }),
  );
  if (LastEvaluatedKey) throw new Error('the state table holds more than one scan reads');
  await Promise.all(
    Items.map((item) =>
      client.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: item.pk! },
          UpdateExpression: 'SET droppedAt = :earlier',
          ConditionExpression: 'droppedAt = :at',
          ExpressionAttributeValues: {
            ':earlier': { N: String(Number(item.droppedAt!.N) - CLOCK_SKEW_MS) },
            ':at': item.droppedAt!,
          },
        }),
      ),
    ),
  );
}

describe('a money call drops the shared answer of its object', () => {
  it('a refund: the order’s payments', async () => {
    const order = orderId();
    const charged = await call('charge', { body: chargeBody(order) });
    await pastClockSkew();
    const payments = () => call('retrievePayments', { id: order });
    await readTwice(payments, 'search');

    const refund = await call('refund', {
      body: { payment_id: charged.body.data.payment_id, description: 'Shared reads' },
    });
    const after = await expectFresh(payments, 'search');

    expect(refund.statusCode, refund.raw).toBe(200);
    expect(after.body.data[0].status).toBe('REFUND REQUESTED');
  });

  it('a refund of an installment: its subscription’s payments too', async () => {
    // Prepare: a subscription taken through PayHere's checkout, on the ledger as its notification
    // leaves it: the recurring order, its subscription and its first installment's payment.
    const checkout = await sandbox.completeCheckout(
      checkoutRequest(NOWHERE, {
        kind: 'recurring',
        order_id: orderId(),
        items: 'Gym',
        amount: 2_500,
        recurrence: '1 Month',
        duration: '1 Year',
      }),
    );
    const id = String(checkout.subscription_id);
    const paymentId = String(checkout.payment_id);
    const owner = customer('installment');
    await ledger.createOrder(
      newOrder({ orderId: checkout.order_id, owner, kind: 'recurring', items: 'Gym', amountCents: 250_000 }),
    );
    await ledger.link('payment', paymentId, { orderId: checkout.order_id, owner });
    await ledger.link('subscription', id, { orderId: checkout.order_id, owner });
    await ledger.moveOrder(checkout.order_id, {
      from: 'created',
      to: 'succeeded',
      seen: { charged: false, reported: false },
      paymentId,
      subscriptionId: id,
    });
    await pastClockSkew();
    const payments = () => call('subscriptionPayments', { id });
    await readTwice(payments, 'subscriptionPayments');

    // Act
    const refund = await call('refund', { body: { payment_id: paymentId, description: 'Shared reads' } });

    // Assess
    expect(refund.statusCode, refund.raw).toBe(200);
    await expectFresh(payments, 'subscriptionPayments');
  });

  it('a charge: the order’s payments, also when PayHere already had one for it', async () => {
    const order = orderId();
    const api = apiClient(sandbox, await accessToken(sandbox));
    await api.post('payment/charge', chargeBody(order));
    const payments = () => call('retrievePayments', { id: order });
    await readTwice(payments, 'search');

    const charged = await call('charge', { body: chargeBody(order) });
    const after = await expectFresh(payments, 'search');

    expect(charged.statusCode, charged.raw).toBe(200);
    expect(after.body.data).toHaveLength(2);
  });

  it('a cancel: the subscription, its payments and the list', async () => {
    const id = String(SEED.subscriptions.active);
    await readTwice(() => call('getSubscription', { id }), 'getSubscription');
    await readTwice(() => call('subscriptionPayments', { id }), 'subscriptionPayments');
    // getSubscription's own item is fresh: the list is read for itself.
    await readTwice(() => call('listSubscriptions'), 'listSubscriptions');

    const cancelled = await call('cancelSubscription', { id });
    await pastClockSkew();
    const one = await expectFresh(() => call('getSubscription', { id }), 'getSubscription');
    await expectFresh(() => call('subscriptionPayments', { id }), 'subscriptionPayments');
    const list = await expectFresh(() => call('listSubscriptions'), 'listSubscriptions');

    expect(cancelled.statusCode, cancelled.raw).toBe(200);
    expect(one.body.data.status).toBe('CANCELLED');
    expect(
      list.body.data.find((s: { subscription_id: number }) => String(s.subscription_id) === id),
    ).toMatchObject({
      status: 'CANCELLED',
    });
  });

  it('a retry: the subscription’s payments', async () => {
    const id = String(SEED.subscriptions.failed);
    const before = await readTwice(() => call('subscriptionPayments', { id }), 'subscriptionPayments');

    const retried = await call('retrySubscription', { id });
    const after = await expectFresh(() => call('subscriptionPayments', { id }), 'subscriptionPayments');

    expect(retried.statusCode, retried.raw).toBe(200);
    expect(after.body.data).toHaveLength(before.body.data.length + 1);
  });

  it('a cancel PayHere refuses drops them all the same (cancelled in its portal since they were shared)', async () => {
    const id = String(SEED.subscriptions.active);
    await readTwice(() => call('getSubscription', { id }), 'getSubscription');
    const api = apiClient(sandbox, await accessToken(sandbox));
    await api.post('subscription/cancel', { subscription_id: Number(id) });

    const refused = await call('cancelSubscription', { id });
    const fresh = await expectFresh(() => call('getSubscription', { id }), 'getSubscription');

    expect(refused.statusCode).toBe(409);
    expect(fresh.body.data.status).toBe('CANCELLED');
  });

  it('a verified notification that changes an order: its payments', async () => {
    const order = orderId();
    await call('charge', { body: chargeBody(order) });
    await pastClockSkew();
    const payments = () => call('retrievePayments', { id: order });
    await readTwice(payments, 'search');

    const chargeback = await notify(signed({ order_id: order, payhere_amount: '120.50', status_code: '-3' }));
    await expectFresh(payments, 'search');

    expect(chargeback.statusCode).toBe(200);
  });

  it('a verified notification that records a subscription: its payments', async () => {
    // The sandbox's active subscription was made for order Order23451 (2,500.00 LKR).
    const order = 'Order23451';
    const id = String(SEED.subscriptions.active);
    const checkout = await call('createCheckout', {
      body: {
        kind: 'recurring',
        order_id: order,
        items: 'Gym',
        currency: 'LKR',
        amount: 2500,
        recurrence: '1 Month',
        duration: '1 Year',
      },
      headers: { 'On-Behalf-Of': customer('subscriber') },
    });
    const payments = () => call('subscriptionPayments', { id });
    await readTwice(payments, 'subscriptionPayments');

    const recorded = await notify(
      signed({
        order_id: order,
        payhere_amount: '2500.00',
        status_code: '2',
        subscription_id: id,
        message_type: 'RECURRING_INSTALLMENT_SUCCESS',
        item_rec_install_paid: '2',
      }),
    );
    await pastClockSkew();
    await expectFresh(payments, 'subscriptionPayments');

    expect(checkout.statusCode, checkout.raw).toBe(201);
    expect(recorded.statusCode).toBe(200);
    expect((await ledger.getOrder(order))?.subscriptionId).toBe(id);
  });

  it('a capture: the hold’s order, learnt from PayHere’s answer when the merchant did not name it', async () => {
    const order = orderId();
    const api = apiClient(sandbox, await accessToken(sandbox));
    const held = await api.post('payment/charge', chargeBody(order, 'AUTHORIZE'));

    const captured = await call('capture', {
      body: { authorization_token: held.json.data.authorization_token, amount: 100, deduction_details: 'x' },
    });
    const { Item } = await dynamoDbAt(inject('dynamodbEndpoint')).send(
      new GetItemCommand({
        TableName: process.env.STATE_TABLE!,
        Key: { pk: { S: `read#payments#${order}` } },
        ConsistentRead: true,
      }),
    );

    expect(captured.statusCode, captured.raw).toBe(200);
    expect(Number(Item?.droppedAt?.N)).toBeGreaterThan(Date.now() - 10_000);
  });
});
