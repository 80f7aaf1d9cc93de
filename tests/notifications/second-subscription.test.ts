import { describe, expect, it } from 'vitest';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, customerToken, testLedger } from '../helpers/orders.ts';
import { NOWHERE, recurringCheckout } from '../helpers/subscriptions.ts';

/**
 * PayHere does not check order ids: the app's checkout run twice for one recurring order (a double
 * tap in PayHere's SDK) makes two subscriptions, each charging the card every month. The second's
 * notification is checked against PayHere's records and, shown there as the order's, flagged for
 * the merchant (duplicate_payment_ids, order.possible_duplicate) and given to the order's owner,
 * who can then cancel it through the service.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');

describe('a recurring order paid twice in PayHere’s SDK (two subscriptions of one order)', () => {
  it('flags the second subscription’s payment for the merchant and lets the customer cancel it', async () => {
    const created = await recurringCheckout(alice);
    const orderId = created.order_id;
    const checkout = { ...created, outcome: 'success' as const, notify_url: NOWHERE };
    const one = await sandbox.completeCheckout(checkout);
    const two = await sandbox.completeCheckout(checkout);
    expect(two.subscription_id).not.toBe(one.subscription_id);

    expect((await notify(one.deliveries[0]!.fields)).statusCode).toBe(200);
    await checkedSecondsAgo(orderId, 'notification', 60);
    const second = await notify(two.deliveries[0]!.fields);
    const order = (await ledger.getOrder(orderId))!;
    const both = await call('listSubscriptions');
    const asAlice = {
      Authorization: `Bearer ${await customerToken(alice, 'subscriptions:read subscriptions:write')}`,
    };
    const cancelled = await call('cancelSubscription', { id: String(two.subscription_id), headers: asAlice });
    const replayed = await notify(two.deliveries[0]!.fields);
    const after = (await ledger.getOrder(orderId))!;

    expect(second.statusCode).toBe(200);
    // PayHere's records hold both subscriptions of the order.
    const ofOrder = both.body.data.filter((s: { order_id: string }) => s.order_id === orderId);
    expect(ofOrder).toHaveLength(2);
    expect(order.subscriptionId).toBe(String(one.subscription_id));
    expect(order.duplicatePayments).toEqual([String(two.payment_id)]);
    expect(cancelled.statusCode).toBe(200);
    expect(replayed.statusCode).toBe(200);
    expect(after.duplicatePayments).toEqual([String(two.payment_id)]);
  });

  it('fails unnoted when it cannot be checked now, and costs PayHere nothing once noted', async () => {
    // Prepare: the order paid twice; its first notification checked it just now.
    const created = await recurringCheckout(alice);
    const orderId = created.order_id;
    const checkout = { ...created, outcome: 'success' as const, notify_url: NOWHERE };
    const one = await sandbox.completeCheckout(checkout);
    const two = await sandbox.completeCheckout(checkout);
    await notify(one.deliveries[0]!.fields);

    // Act: the second's notification at once, again once the order may be checked, and a copy.
    const soon = await notify(two.deliveries[0]!.fields);
    const notedSoon = (await ledger.getOrder(orderId))!.duplicatePayments;
    await checkedSecondsAgo(orderId, 'notification', 60);
    const later = await notify(two.deliveries[0]!.fields);
    await checkedSecondsAgo(orderId, 'notification', 60);
    sandbox.resetCounters();
    // (A copy differing in an unsigned field the receiver reads: not a replay of one received.)
    const resent = await notify({ ...two.deliveries[0]!.fields, card_no: '************0000' });

    // Assess: 429 for PayHere to send it again, nothing noted; then noted; then no PayHere call.
    expect(soon.statusCode).toBe(429);
    expect(notedSoon).toEqual([]);
    expect(later.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))!.duplicatePayments).toEqual([String(two.payment_id)]);
    expect(resent.statusCode).toBe(200);
    expect(sandbox.counters().getSubscription ?? 0).toBe(0);
    expect(sandbox.counters().subscriptionPayments ?? 0).toBe(0);
  });

  it('notes nothing for a subscription PayHere’s records do not show as the order’s', async () => {
    const mine = await recurringCheckout(alice);
    const orderId = mine.order_id;
    const one = await sandbox.completeCheckout({ ...mine, outcome: 'success', notify_url: NOWHERE });
    const theirs = await recurringCheckout(alice);
    const other = await sandbox.completeCheckout({ ...theirs, outcome: 'success', notify_url: NOWHERE });
    await notify(one.deliveries[0]!.fields);
    await checkedSecondsAgo(orderId, 'notification', 60);

    // The order's own notification, its unsigned subscription and payment ids another order's.
    const altered = await notify({
      ...one.deliveries[0]!.fields,
      subscription_id: String(other.subscription_id),
      payment_id: String(other.payment_id),
    });

    expect(altered.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))!.duplicatePayments).toEqual([]);
    expect(await ledger.lookup('subscription', String(other.subscription_id))).toBeUndefined();
  });
});
