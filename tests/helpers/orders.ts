/**
 * The ledger of the running test file (tests/setup/environment.ts gives each file a table of its
 * own), and what PayHere's notifications will write there: a customer's saved card, a customer's
 * subscription. Until the notification receiver exists these are written straight to the ledger.
 */
import { randomUUID } from 'node:crypto';
import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import type { NewOrder } from '../../lib/ledger/model.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import type { Sandbox } from '../../sandbox/server.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { checkoutRequest } from '../sandbox/signing.ts';
import { testToken } from './auth.ts';

export function testLedger(): LedgerStore {
  return new LedgerStore({ client: localClient(), table: process.env.LEDGER_TABLE! });
}

/**
 * The order's last check with PayHere (`by` a view of it, or a notification) was `seconds` ago, as
 * if that long had passed: lib/ledger/store.ts claimCheck allows one per window.
 */
export async function checkedSecondsAgo(
  orderId: string,
  by: 'view' | 'notification',
  seconds: number,
): Promise<void> {
  await localClient().send(
    new UpdateItemCommand({
      TableName: process.env.LEDGER_TABLE!,
      Key: { pk: { S: `order#${orderId}` } },
      UpdateExpression: 'SET #at = :at',
      ExpressionAttributeNames: { '#at': by === 'view' ? 'checkedAt' : 'confirmedAt' },
      ExpressionAttributeValues: { ':at': { N: String(Date.now() - seconds * 1000) } },
    }),
  );
}

/** A subject of its own for each test file, so no two files' customers are the same. */
export function customer(name: string): string {
  return `${name}-${randomUUID().slice(0, 8)}`;
}

/** A new order as a checkout or a charge records it: a charge of 345.67 LKR unless `fields` say otherwise. */
export function newOrder(fields: Partial<NewOrder> & Pick<NewOrder, 'orderId' | 'owner'>): NewOrder {
  return {
    kind: 'charge',
    items: 'Taxi Hire 123',
    currency: 'LKR',
    amountCents: 34_567,
    custom1: null,
    custom2: null,
    lineItems: null,
    customerDetails: null,
    metadata: null,
    recurrence: null,
    duration: null,
    startupFeeCents: null,
    customerToken: null,
    authorizationToken: null,
    subscriptionId: null,
    card: null,
    ...fields,
  };
}

/** Record `token` as the card `owner` saved through a pre-approval (what the pre-approval notification records). */
export async function saveCard(ledger: LedgerStore, owner: string, token: string): Promise<void> {
  const orderId = `PRE-${randomUUID()}`;
  await ledger.createOrder(
    newOrder({
      orderId,
      owner,
      kind: 'preapproval',
      items: 'Save my card',
      amountCents: null,
      customerToken: token,
    }),
  );
  if (!(await ledger.link('customer_token', token, { orderId, owner }))) {
    throw new Error('the card is already saved by another customer in this file');
  }
}

/** Record subscription `id` as `owner`'s (what a recurring checkout's notification records). */
export async function giveSubscription(
  ledger: LedgerStore,
  owner: string,
  id: number | string,
): Promise<void> {
  const orderId = `SUB-${randomUUID()}`;
  await ledger.link('subscription', String(id), { orderId, owner });
  await ledger.addSubscription(owner, String(id));
}

/** Every route scope, without `merchant`: a customer allowed everything its token can hold. */
export const CUSTOMER_SCOPES =
  'payments:read payments:charge payments:capture payments:refund subscriptions:read subscriptions:write';

export function customerToken(sub: string, scope = CUSTOMER_SCOPES): Promise<string> {
  return testToken({ scope, sub });
}

/** A customer of the app, with its own paid order and its own subscription. */
export interface PayingCustomer {
  sub: string;
  authorization: string;
  orderId: string;
  subscriptionId: string;
}

/** PayHere's notifications of these checkouts go nowhere: the ledger is written directly. */
const NOWHERE = 'https://notify.example.invalid/payhere';

/**
 * Customer `i` (named `${prefix}${i}`), whose order was paid and whose subscription was taken in
 * the app through PayHere's checkout, with what the checkouts' notifications leave on the ledger:
 * the order, paid (final), its payment, and the subscription as the customer's.
 */
export async function payingCustomer(
  sandbox: Pick<Sandbox, 'completeCheckout'>,
  ledger: LedgerStore,
  i: number,
  prefix = 'c',
): Promise<PayingCustomer> {
  const sub = customer(`${prefix}${i}`);
  const orderId = `Own-${i}-${randomUUID().slice(0, 8)}`;
  const amount = 500 + i;
  const paid = await sandbox.completeCheckout(
    checkoutRequest(NOWHERE, { kind: 'payment', order_id: orderId, items: 'Door bell', amount }),
  );
  const subscribed = await sandbox.completeCheckout(
    checkoutRequest(NOWHERE, {
      kind: 'recurring',
      order_id: `Sub-${i}-${randomUUID().slice(0, 8)}`,
      items: 'Gym',
      amount: 2_500,
      recurrence: '1 Month',
      duration: '1 Year',
    }),
  );
  await ledger.createOrder(
    newOrder({ orderId, owner: sub, kind: 'payment', items: 'Door bell', amountCents: amount * 100 }),
  );
  const paymentId = String(paid.payment_id);
  await ledger.link('payment', paymentId, { orderId, owner: sub });
  await ledger.moveOrder(orderId, {
    from: 'created',
    to: 'succeeded',
    seen: { charged: false, reported: false },
    paymentId,
  });
  const subscriptionId = String(subscribed.subscription_id);
  await giveSubscription(ledger, sub, subscriptionId);
  return { sub, authorization: `Bearer ${await customerToken(sub)}`, orderId, subscriptionId };
}
