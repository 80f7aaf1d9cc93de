import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { ScanCommand } from '../../lib/dynamodb/index.ts';
import { METADATA_BOUNDS } from '../../lib/schemas/fields.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import {
  checkedSecondsAgo,
  customer,
  customerToken,
  newOrder,
  saveCard,
  testLedger,
} from '../helpers/orders.ts';
import { localClient } from '../idempotency/fixtures.ts';

/**
 * docs/contract.md "What an order keeps", in-process against the sandbox: what a back office needs
 * of an order is validated, kept, and shown to whom it may be; a subscription's startup fee is
 * checked where PayHere reports its first payment, and its next installment date kept.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');
const bob = customer('bob');
/** Carol saved the sandbox's card: her charges go through. */
const carol = customer('carol');

beforeAll(async () => {
  await saveCard(ledger, carol, SEED.customerTokens.success);
});

const asCustomer = async (sub: string) => ({ Authorization: `Bearer ${await customerToken(sub)}` });

/** PayHere's notifications of the sandbox's checkouts go nowhere: the tests post the forms themselves. */
const NOWHERE = 'https://notify.example.invalid/payhere';

const LINES = [
  { name: 'Door bell', number: 'DB-1', quantity: 2, unit_amount: 400 },
  { name: 'Fitting', number: 'FIT', quantity: 1, unit_amount: 200 },
];
const DETAILS = {
  first_name: 'Saman',
  last_name: 'Perera',
  email: 'saman@example.com',
  phone: '+94771234567',
  address: 'No. 1, Galle Road',
  city: 'Colombo',
  country: 'Sri Lanka',
};
const METADATA = { crm_id: 'C-1042', 'channel.app': 'android' };

const body = (fields: Record<string, unknown> = {}) => ({
  kind: 'charge',
  items: 'Door bell',
  currency: 'LKR',
  amount: 1000,
  ...fields,
});

describe('createCheckout refuses back-office fields beyond their bounds, and records nothing', () => {
  const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`key${i}`, 'v']));
  it.each([
    ['21 metadata keys', { metadata: tooMany }, 'metadata', /at most 20 keys/],
    [
      'a key of 41 characters',
      { metadata: { ['k'.repeat(41)]: 'v' } },
      `metadata.${'k'.repeat(41)}`,
      /1 to 40/,
    ],
    ['a key with a space', { metadata: { 'crm id': 'v' } }, 'metadata.crm id', /A-Za-z0-9/],
    ['a value of 256 characters', { metadata: { note: 'x'.repeat(256) } }, 'metadata.note', /at most 255/],
    ['a value that is not a string', { metadata: { count: 3 } }, 'metadata.count', /./],
    ['a startup fee on a one-off order', { startup_fee: 100 }, 'startup_fee', /only allowed for a recurring/],
    [
      'a startup fee with three decimals',
      { kind: 'recurring', recurrence: '1 Month', duration: '1 Year', startup_fee: 10.005 },
      'startup_fee',
      /2 decimals/,
    ],
    [
      'a startup fee of zero',
      { kind: 'recurring', recurrence: '1 Month', duration: '1 Year', startup_fee: 0 },
      'startup_fee',
      /./,
    ],
    [
      'an email that is not one',
      { customer_details: { email: 'saman at example' } },
      'customer_details.email',
      /./,
    ],
    [
      'a phone number of letters',
      { customer_details: { phone: 'call me' } },
      'customer_details.phone',
      /phone/,
    ],
    ['an unknown customer field', { customer_details: { nickname: 'S' } }, 'customer_details.nickname', /./],
    ['101 line items', { itemList: Array.from({ length: 101 }, () => LINES[0]) }, 'itemList', /./],
  ])('refuses %s with 400 naming the field', async (_, fields, path, message) => {
    const orderId = `Bounds-${randomUUID()}`;

    const answer = await call('createCheckout', { body: body({ order_id: orderId, ...fields }) });
    const order = await call('getCheckout', { id: orderId });

    expect(answer.statusCode, JSON.stringify(answer.body)).toBe(400);
    expect(answer.body.data.code).toBe('invalid_request');
    const error = answer.body.data.errors.find((e: { path: string }) => e.path === path);
    expect(error, JSON.stringify(answer.body.data.errors)).toBeDefined();
    expect(error.message).toMatch(message);
    expect(order.statusCode).toBe(404);
  });

  it('takes metadata at its bounds: 20 keys of 40 characters, values of 255', async () => {
    const metadata = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [
        `${String(i).padStart(2, '0')}${'k'.repeat(38)}`,
        'v'.repeat(255),
      ]),
    );

    const answer = await call('createCheckout', { body: body({ metadata }) });
    const order = await call('getCheckout', { id: answer.body.data.order_id });

    expect(answer.statusCode).toBe(201);
    expect(order.body.data.metadata).toEqual(metadata);
  });

  it('refuses metadata from a customer: it is the merchant’s own', async () => {
    const answer = await call('createCheckout', {
      body: { kind: 'preapproval', items: 'Save my card', currency: 'LKR', metadata: { crm_id: 'mine' } },
      headers: await asCustomer(alice),
    });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([
      { path: 'metadata', message: 'is the merchant’s own: leave it out' },
    ]);
  });
});

describe('an order keeps what a back office needs, and shows it to whom it may', () => {
  it('shows the lines, details and custom fields to the merchant and the order’s customer, the metadata to the merchant only', async () => {
    const created = await call('createCheckout', {
      body: body({ itemList: LINES, customer_details: DETAILS, custom_1: 'ride-88', metadata: METADATA }),
      headers: { 'On-Behalf-Of': alice },
    });
    const orderId = created.body.data.order_id;

    const merchants = await call('getCheckout', { id: orderId });
    const hers = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });
    const his = await call('getCheckout', { id: orderId, headers: await asCustomer(bob) });
    const bobsList = await call('listOrders', { query: { customer: alice }, headers: await asCustomer(bob) });
    const merchantsList = await call('listOrders', { query: { customer: alice, limit: '1' } });

    const kept = {
      item_list: LINES,
      customer_details: DETAILS,
      custom_1: 'ride-88',
      custom_2: null,
      startup_fee: null,
      next_installment: null,
    };
    expect(created.statusCode).toBe(201);
    // Nothing of it goes into the SDK's parameters (PayHere's form takes the app's own fields).
    expect(created.body.data).not.toHaveProperty('metadata');
    expect(merchants.body.data).toMatchObject({ ...kept, metadata: METADATA });
    expect(hers.body.data).toMatchObject({ ...kept, metadata: null });
    expect(his.statusCode).toBe(404);
    expect(JSON.stringify(his.body)).not.toContain('Saman');
    expect(bobsList.body.data.orders).toEqual([]);
    const { item_list: _lines, ...listed } = kept;
    expect(merchantsList.body.data.orders[0]).toMatchObject({
      order_id: orderId,
      ...listed,
      metadata: METADATA,
    });
    expect(merchantsList.body.data.orders[0]).not.toHaveProperty('item_list');
  });

  it('refuses the same order id created again with other details, naming them', async () => {
    const orderId = `Again-${randomUUID()}`;
    await call('createCheckout', { body: body({ order_id: orderId, metadata: METADATA }) });

    // The same metadata, its keys in another order: the same order.
    const reordered = Object.fromEntries(Object.entries(METADATA).reverse());
    const same = await call('createCheckout', { body: body({ order_id: orderId, metadata: reordered }) });
    const other = await call('createCheckout', {
      body: body({ order_id: orderId, metadata: { crm_id: 'C-9' }, customer_details: DETAILS }),
    });

    expect(same.statusCode).toBe(200);
    expect(other.statusCode).toBe(409);
    expect(other.body.data.errors.map((e: { path: string }) => e.path)).toEqual([
      'customer_details',
      'metadata',
    ]);
  });

  it('keeps a charge’s line items, custom fields, customer details and metadata, and sends PayHere neither of the last two', async () => {
    const orderId = `Charged-${randomUUID()}`;

    const charged = await call('charge', {
      body: {
        type: 'PAYMENT',
        order_id: orderId,
        items: 'Door bell',
        currency: 'LKR',
        amount: 1000,
        customer_token: SEED.customerTokens.success,
        custom_1: 'till-4',
        itemList: LINES,
        customer_details: DETAILS,
        metadata: METADATA,
      },
      headers: { 'On-Behalf-Of': carol },
    });
    const order = await call('getCheckout', { id: orderId });

    // The sandbox's charge refuses unknown fields (sandbox/validate.ts): had `metadata` or
    // `customer_details` been sent, PayHere would have refused the charge.
    expect(charged.statusCode, JSON.stringify(charged.body)).toBe(200);
    expect(charged.body.data.status_code).toBe(2);
    expect(order.body.data).toMatchObject({
      item_list: LINES,
      custom_1: 'till-4',
      customer_details: DETAILS,
      metadata: METADATA,
    });
  });

  it('refuses a customer’s charge carrying metadata before anything is sent', async () => {
    const before = sandbox.counters().charge ?? 0;

    const answer = await call('charge', {
      body: {
        type: 'PAYMENT',
        order_id: `Mine-${randomUUID()}`,
        items: 'Door bell',
        currency: 'LKR',
        amount: 1000,
        customer_token: SEED.customerTokens.success,
        metadata: { crm_id: 'mine' },
      },
      headers: await asCustomer(carol),
    });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([
      { path: 'metadata', message: 'is the merchant’s own: leave it out' },
    ]);
    expect(sandbox.counters().charge ?? 0).toBe(before);
  });
});

describe('an order list page with every order’s details at their bounds', () => {
  it('holds 100 orders in one DynamoDB query: the bounds keep a page under its 1 MB', async () => {
    const owner = customer('bounded');
    const at = (length: number, i: number) => `${String(i).padStart(2, '0')}${'x'.repeat(length - 2)}`;
    const metadata = Object.fromEntries(
      Array.from({ length: METADATA_BOUNDS.keys }, (_, i) => [
        at(METADATA_BOUNDS.keyLength, i),
        'v'.repeat(METADATA_BOUNDS.valueLength),
      ]),
    );
    const customerDetails = {
      first_name: 'f'.repeat(100),
      last_name: 'l'.repeat(100),
      email: `${'e'.repeat(64)}@${'d'.repeat(63)}.example.com`,
      phone: `+${'9'.repeat(31)}`,
      address: 'a'.repeat(255),
      city: 'c'.repeat(100),
      country: 'k'.repeat(100),
    };
    for (let i = 0; i < 101; i++) {
      await ledger.createOrder(
        newOrder({
          orderId: `Bounded-${i}-${randomUUID()}`,
          owner,
          items: 'i'.repeat(255),
          custom1: '1'.repeat(255),
          custom2: '2'.repeat(255),
          customerDetails,
          metadata,
        }),
      );
    }

    const page = await call('listOrders', { query: { customer: owner, limit: '100' } });

    expect(page.statusCode).toBe(200);
    expect(page.body.data.orders).toHaveLength(100);
    expect(page.body.data.orders[0].metadata).toEqual(metadata);
    expect(page.body.data.next_cursor).toEqual(expect.any(String));
  });
});

describe('a subscription’s startup fee and next installment (docs/contract.md "What an order keeps")', () => {
  const recurring = (orderId: string) =>
    body({
      kind: 'recurring',
      order_id: orderId,
      items: 'Gym membership',
      amount: 2500,
      recurrence: '1 Month',
      duration: '1 Year',
      startup_fee: 1000,
    });

  /** The merchant's checkout for Alice, completed in the SDK as the sandbox plays it: the notification PayHere signs. */
  async function subscribe(orderId: string, fee?: number) {
    const created = await call('createCheckout', {
      body: recurring(orderId),
      headers: { 'On-Behalf-Of': alice },
    });
    expect(created.statusCode).toBe(201);
    const parameters = { ...created.body.data, ...(fee === undefined ? {} : { startup_fee: fee }) };
    const completed = await sandbox.completeCheckout({
      ...parameters,
      outcome: 'success',
      notify_url: NOWHERE,
    });
    return { created, completed, form: completed.deliveries[0]!.fields };
  }

  it('answers the fee for PayHere’s form, and takes the first payment of amount + fee as the subscription', async () => {
    const orderId = `Gym-${randomUUID()}`;
    const { created, completed, form } = await subscribe(orderId);

    await notify(form);
    const order = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });

    expect(created.body.data).toMatchObject({ startup_fee: 1000, amount: 2500 });
    expect(form.payhere_amount).toBe('3500.00');
    expect(order.body.data).toMatchObject({
      status: 'succeeded',
      subscription_id: completed.subscription_id,
      startup_fee: 1000,
      next_installment: form.item_rec_date_next,
    });
    expect(form.item_rec_date_next).toMatch(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/);
  });

  it('takes the next installment date when PayHere’s records confirm a subscription later than its notification came', async () => {
    const orderId = `Gym-${randomUUID()}`;
    const { completed, form } = await subscribe(orderId);
    // The order was confirmed a moment ago: the notification may not ask PayHere now, and is kept as reported.
    await checkedSecondsAgo(orderId, 'notification', 0);
    await notify(form);
    const reported = await ledger.getOrder(orderId);
    // The customer's view asks PayHere's records, which show the subscription.
    const viewed = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });

    expect(reported).toMatchObject({ state: 'pending', nextInstallment: null });
    expect(reported?.reported).toMatchObject({ subscriptionId: String(completed.subscription_id) });
    expect(viewed.body.data).toMatchObject({
      status: 'succeeded',
      subscription_id: completed.subscription_id,
      next_installment: form.item_rec_date_next,
    });
  });

  it('keeps apart a first payment without the fee (dropped in the SDK): never the customer’s subscription', async () => {
    const orderId = `Gym-${randomUUID()}`;
    // The app's user removed startup_fee from the unsigned form: PayHere charged 2,500 only.
    const { form } = await subscribe(orderId, undefined);
    const unsigned = signed({ ...form, payhere_amount: '2500.00' } as never);

    await notify(unsigned);
    const order = await ledger.getOrder(orderId);
    const { Items = [] } = await localClient().send(
      new ScanCommand({ TableName: process.env.LEDGER_TABLE!, ConsistentRead: true }),
    );

    expect(order).toMatchObject({ state: 'created', subscriptionId: null });
    expect(await ledger.subscriptionsOf(alice)).not.toContain(String(form.subscription_id));
    expect(Items.some((item) => item.reason?.S === 'amount_mismatch' && item.orderId?.S === orderId)).toBe(
      true,
    );
  });

  it('moves the next installment date with each installment PayHere confirms, and not with a replay that changes only it', async () => {
    const orderId = `Gym-${randomUUID()}`;
    const { completed, form } = await subscribe(orderId);
    await notify(form);
    const subscriptionId = completed.subscription_id!;

    await checkedSecondsAgo(orderId, 'notification', 60);
    const installment = await sandbox.chargeInstallment(subscriptionId, {
      outcome: 'success',
      notify_url: NOWHERE,
    });
    const second = installment.deliveries[0]!.fields;
    await notify(second);
    const afterSecond = await ledger.getOrder(orderId);

    await checkedSecondsAgo(orderId, 'notification', 60);
    await notify(signed({ ...second, item_rec_date_next: '2099-01-01' } as never));
    const afterReplay = await ledger.getOrder(orderId);

    // An installment is the amount alone, without the fee.
    expect(second.payhere_amount).toBe('2500.00');
    expect(second.item_rec_date_next).not.toBe(form.item_rec_date_next);
    expect(afterSecond).toMatchObject({ installmentsPaid: 2, nextInstallment: second.item_rec_date_next });
    expect(afterReplay?.nextInstallment).toBe(second.item_rec_date_next);
  });
});
