import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import { SEED } from '../../sandbox/server.ts';
import { clearDynamoDbFaults, injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, customerToken, testLedger } from '../helpers/orders.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { payAtPayHere } from '../sandbox/helpers.ts';

/**
 * A customer's own final order is answered from the copy of PayHere's answer kept on its ledger
 * item (lib/orders/payments.ts) while nothing the service cannot see may change it. A refund does
 * not change the order's state, so the copy also waits on the payment's refunds: none taken or
 * made. Without that, a copy kept after a refund froze the payment at `REFUND REQUESTED` while
 * PayHere moved on to `REFUNDED`, and a refund whose drop of the copy failed left the customer
 * seeing the payment unrefunded; and a second payment PayHere took was hidden behind the copy.
 */
const sandbox = useTestGateway();
const ledger = testLedger();
const LEDGER = () => process.env.LEDGER_TABLE!;

afterEach(async () => {
  await clearDynamoDbFaults(undefined, LEDGER());
});

async function paidOrder() {
  const sub = customer('copy');
  const orderId = `Copy-${randomUUID().slice(0, 12)}`;
  const charged = await call('charge', {
    body: {
      type: 'PAYMENT',
      order_id: orderId,
      items: 'Door bell',
      currency: 'LKR',
      amount: 1500,
      customer_token: SEED.customerTokens.success,
    },
    headers: { 'On-Behalf-Of': sub },
  });
  expect(charged.statusCode, charged.raw).toBe(200);
  const authorization = `Bearer ${await customerToken(sub)}`;
  const read = async () => {
    // Only the ledger copy can spare PayHere a call (shared answers forgotten, as past their 10 s).
    await forgetSharedReads();
    return call('retrievePayments', { id: orderId, headers: { Authorization: authorization } });
  };
  return { orderId, paymentId: charged.body.data.payment_id as number, read };
}

describe('a customer’s ledger copy of its order’s payments', () => {
  it('is not kept while a refund moves the payment’s status at PayHere (REFUND REQUESTED → REFUNDED)', async () => {
    // Prepare: a copy kept, then a refund through the service.
    const { orderId, paymentId, read } = await paidOrder();
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
    const { orderId, paymentId, read } = await paidOrder();
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
