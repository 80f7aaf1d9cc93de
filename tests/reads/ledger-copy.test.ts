import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import { SEED } from '../../sandbox/server.ts';
import { clearDynamoDbFaults, injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import {
  checkedSecondsAgo,
  customer,
  customerToken,
  giveSubscription,
  testLedger,
} from '../helpers/orders.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { payAtPayHere } from '../sandbox/helpers.ts';

/**
 * A customer's own order in a final state is answered from the copy of PayHere's answer kept on the
 * order's ledger item, without PayHere (docs/contract.md "PayHere's budget"), while the state stays the one
 * it was kept in. Each read here first forgets the table's shared answers, so that only the ledger
 * copy can spare PayHere a call.
 */
const sandbox = useTestGateway();
const ledger = testLedger();

const searches = () => sandbox.counters().search ?? 0;
const LEDGER = () => process.env.LEDGER_TABLE!;

afterEach(async () => {
  // This file's faults only: other files inject theirs on the same server at the same time.
  await clearDynamoDbFaults(undefined, LEDGER());
});

/** An order the merchant charged for a new customer (PAYMENT, succeeded), and that customer's reads. */
async function paidOrder(token: string = SEED.customerTokens.success) {
  const sub = customer('copy');
  const orderId = `Copy-${randomUUID().slice(0, 12)}`;
  const charged = await call('charge', {
    body: {
      type: 'PAYMENT',
      order_id: orderId,
      items: 'Door bell',
      currency: 'LKR',
      amount: 1500,
      customer_token: token,
    },
    headers: { 'On-Behalf-Of': sub },
  });
  const authorization = `Bearer ${await customerToken(sub)}`;
  const read = async () => {
    await forgetSharedReads();
    return call('retrievePayments', { id: orderId, headers: { Authorization: authorization } });
  };
  return { orderId, charged, read };
}

describe('a customer’s own final order', () => {
  it('is answered from its ledger copy, with Age, without PayHere', async () => {
    const { orderId, charged, read } = await paidOrder();

    const first = await read();
    const before = searches();
    const second = await read();

    expect(charged.statusCode, charged.raw).toBe(200);
    expect(first.statusCode).toBe(200);
    expect(first.headers.Age).toBeUndefined();
    expect(second.statusCode).toBe(200);
    expect(second.headers.Age).toMatch(/^\d+$/);
    expect(second.body).toEqual(first.body);
    expect(second.body.data[0]).not.toHaveProperty('amount_detail');
    expect(searches()).toBe(before);
    expect((await ledger.getOrder(orderId))?.paymentsCopy?.state).toBe('succeeded');
  });

  it('is asked of PayHere again after a chargeback changed its state, and kept again in the new one', async () => {
    const { orderId, read } = await paidOrder();
    await read();

    const chargeback = await notify(
      signed({ order_id: orderId, payhere_amount: '1500.00', status_code: '-3' }),
    );
    const before = searches();
    const after = await read();
    const again = await read();

    expect(chargeback.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))?.state).toBe('chargedback');
    expect(after.headers.Age).toBeUndefined();
    expect(again.headers.Age).toMatch(/^\d+$/);
    expect(searches()).toBe(before + 1);
  });

  it('is asked of PayHere again after a refund through the service', async () => {
    const { charged, read } = await paidOrder();
    await read();

    const refund = await call('refund', {
      body: { payment_id: charged.body.data.payment_id, description: 'Out of stock' },
    });
    const before = searches();
    const after = await read();

    expect(refund.statusCode, refund.raw).toBe(200);
    expect(after.headers.Age).toBeUndefined();
    expect(after.body.data[0].status).toBe('REFUND REQUESTED');
    expect(searches()).toBe(before + 1);
  });

  it('is asked of PayHere every time while its payment is not linked on the ledger, which a refund would not find', async () => {
    // Prepare: a notification that PayHere did not confirm in time leaves the order succeeded
    // with no payment id: a refund through the service could not find it to drop a copy.
    const { orderId, read } = await paidOrder();
    await localClient().send(
      new UpdateItemCommand({
        TableName: process.env.LEDGER_TABLE!,
        Key: { pk: { S: `order#${orderId}` } },
        UpdateExpression: 'REMOVE paymentId',
      }),
    );

    // Act
    const first = await read();
    const before = searches();
    const second = await read();

    // Assess
    expect(first.statusCode).toBe(200);
    expect(second.statusCode).toBe(200);
    expect(second.headers.Age).toBeUndefined();
    expect(searches()).toBe(before + 1);
    expect((await ledger.getOrder(orderId))?.state).toBe('succeeded');
    expect((await ledger.getOrder(orderId))?.paymentsCopy).toBeNull();
  });

  it('is not found by another customer, however warm the shared answer and the copy are', async () => {
    // Prepare: the owner's read kept a copy, the merchant's left the shared answer fresh.
    const { orderId, read } = await paidOrder();
    await read();
    const merchant = await call('retrievePayments', { id: orderId });
    const stranger = `Bearer ${await customerToken(customer('stranger'))}`;
    const before = searches();

    // Act
    const answer = await call('retrievePayments', { id: orderId, headers: { Authorization: stranger } });

    // Assess
    expect(merchant.statusCode).toBe(200);
    expect(answer.statusCode).toBe(404);
    expect(answer.headers.Age).toBeUndefined();
    expect(JSON.stringify(answer.body)).not.toContain('payment_id');
    expect(searches()).toBe(before);
  });

  it('keeps a subscription’s shared payments from another customer', async () => {
    // Prepare: the subscription is a customer's; the merchant's read left its payments shared.
    const id = String(SEED.subscriptions.active);
    await giveSubscription(ledger, customer('subscriber'), id);
    const merchant = await call('subscriptionPayments', { id });
    const stranger = `Bearer ${await customerToken(customer('stranger'))}`;
    const before = sandbox.counters().subscriptionPayments ?? 0;

    // Act
    const answer = await call('subscriptionPayments', { id, headers: { Authorization: stranger } });

    // Assess
    expect(merchant.statusCode).toBe(200);
    expect(answer.statusCode).toBe(404);
    expect(answer.headers.Age).toBeUndefined();
    expect(sandbox.counters().subscriptionPayments ?? 0).toBe(before);
  });

  it('keeps nothing for the merchant’s reads, nor for an order not final', async () => {
    const { orderId } = await paidOrder();
    const pending = await paidOrder(SEED.customerTokens.pending);

    await call('retrievePayments', { id: orderId });
    await pending.read();

    expect((await ledger.getOrder(orderId))?.paymentsCopy).toBeNull();
    expect((await ledger.getOrder(pending.orderId))?.state).toBe('pending');
    expect((await ledger.getOrder(pending.orderId))?.paymentsCopy).toBeNull();
  });
});

describe('a customer’s ledger copy of its order’s payments', () => {
  it('is not kept while a refund moves the payment’s status at PayHere (REFUND REQUESTED → REFUNDED)', async () => {
    // Prepare: a copy kept, then a refund through the service.
    const { orderId, charged, read } = await paidOrder();
    const paymentId = charged.body.data.payment_id as number;
    await read();
    const refund = await call('refund', { body: { payment_id: paymentId, description: 'Out of stock' } });
    // The customer reads a while after it: past the 1 s a copy read before the drop may still land.
    await localClient().send(
      new UpdateItemCommand({
        TableName: LEDGER(),
        Key: { pk: { S: `order#${orderId}` } },
        UpdateExpression: 'SET paymentsDroppedAt = :past',
        ExpressionAttributeValues: { ':past': { N: String(Date.now() - 5_000) } },
      }),
    );

    // Act: the customer reads, PayHere completes the refund, the customer reads again.
    const requested = await read();
    const kept = (await ledger.getOrder(orderId))?.paymentsCopy;
    sandbox.advanceRefunds(paymentId, { status: 'REFUNDED' });
    const completed = await read();

    // Assess
    expect(refund.statusCode).toBe(200);
    expect(requested.body.data[0].status).toBe('REFUND REQUESTED');
    expect(kept ?? null).toBeNull();
    expect(completed.body.data[0].status).toBe('REFUNDED');
  });

  it('is not served after a refund whose drop of the copy failed', async () => {
    // Prepare: a copy kept; the refund's one write of the order item (dropPayments) fails.
    const { orderId, charged, read } = await paidOrder();
    const paymentId = charged.body.data.payment_id as number;
    await read();
    expect((await ledger.getOrder(orderId))?.paymentsCopy).not.toBeNull();
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: LEDGER(),
      keyPrefix: `order#${orderId}`,
      fault: { kind: 'status500' },
      times: 3,
    });
    const refund = await call('refund', { body: { payment_id: paymentId, description: 'Out of stock' } });
    await clearDynamoDbFaults(undefined, LEDGER());

    // Act
    const after = await read();

    // Assess: the copy stayed on the order, but the payment's refund keeps it from being served.
    expect(refund.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))?.paymentsCopy).not.toBeNull();
    expect(after.body.data[0].status).toBe('REFUND REQUESTED');
  });

  it('is not served once a second payment of the order is noted', async () => {
    // Prepare: a copy kept; the customer pays the order again in PayHere's checkout.
    const { orderId, read } = await paidOrder();
    await read();
    const second = await payAtPayHere(sandbox, orderId, 1500);
    await checkedSecondsAgo(orderId, 'notification', 60);
    const notified = await notify(
      signed({ order_id: orderId, payhere_amount: '1500.00', status_code: '2', payment_id: String(second) }),
    );

    // Act
    const after = await read();

    // Assess
    expect(notified.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))?.duplicatePayments).toEqual([String(second)]);
    expect(after.body.data).toHaveLength(2);
  });
});
