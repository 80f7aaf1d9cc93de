import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { ScanCommand } from '../../lib/dynamodb/index.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { type NotificationFields, notify, signed } from '../helpers/notifications.ts';
import { checkedSecondsAgo, customer, customerToken, testLedger } from '../helpers/orders.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { payAtPayHere } from '../sandbox/helpers.ts';

/**
 * docs/contract.md "notify", in-process against the sandbox (which PayHere's records are read from):
 * nothing unsigned is trusted on its own; each flow ends where the app can see it.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const alice = customer('alice');
const bob = customer('bob');

// Read when the handler loads: the app's own merchant secret, which PayHere signs SDK payments with.
process.env.GATEWAY_APP_MERCHANT_SECRETS = 'APP-SECRET-FOR-THE-SDK';

const asCustomer = async (sub: string) => ({ Authorization: `Bearer ${await customerToken(sub)}` });

async function checkout(kind: string, fields: Record<string, unknown> = {}, owner = alice): Promise<string> {
  const created = await call('createCheckout', {
    body: {
      kind,
      items: 'Door bell',
      currency: 'LKR',
      ...(kind === 'preapproval' ? {} : { amount: 1000 }),
      ...fields,
    },
    headers: { 'On-Behalf-Of': owner },
  });
  expect(created.statusCode).toBe(201);
  return created.body.data.order_id;
}

const orderOf = async (orderId: string) => (await call('getCheckout', { id: orderId })).body.data;

/** How many items the ledger table holds (orders, notifications' identities, what is kept apart). */
async function ledgerItems(): Promise<number> {
  const { Items = [] } = await localClient().send(
    new ScanCommand({ TableName: process.env.LEDGER_TABLE!, ConsistentRead: true }),
  );
  return Items.length;
}

const success = (orderId: string, extra: Partial<NotificationFields> = {}) =>
  signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '2', ...extra });

describe('the signature', () => {
  it('is required: a bad one answers 401 invalid_signature and records nothing', async () => {
    const orderId = await checkout('payment');
    const form = { ...success(orderId), md5sig: '0'.repeat(32) };

    const answer = await notify(form);

    expect(answer.statusCode).toBe(401);
    expect(answer.body).toEqual({
      status: -2,
      msg: 'The notification signature does not verify.',
      data: { code: 'invalid_signature' },
    });
    expect((await orderOf(orderId)).status).toBe('created');
  });

  it('must name this merchant', async () => {
    const orderId = await checkout('payment');

    const answer = await notify(
      signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '2', merchant_id: '9999999' }),
    );

    expect(answer.statusCode).toBe(401);
  });

  it('may be the app’s own merchant secret (PayHere signs SDK payments with it)', async () => {
    const orderId = await checkout('payment');

    const answer = await notify(
      signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '0' }, 'APP-SECRET-FOR-THE-SDK'),
    );

    expect(answer.statusCode).toBe(200);
    expect((await orderOf(orderId)).status).toBe('pending');
  });
});

describe('bad input changes nothing', () => {
  it.each([
    [
      'a missing signed field',
      (form: Record<string, string>) =>
        new URLSearchParams({ ...form, payhere_amount: '' }).toString().replace('payhere_amount=&', ''),
      400,
      'invalid_request',
    ],
    [
      'an amount without two decimals',
      (form: Record<string, string>) => new URLSearchParams({ ...form, payhere_amount: '1000' }).toString(),
      400,
      'invalid_request',
    ],
    [
      'a field sent twice',
      (form: Record<string, string>) => `${new URLSearchParams(form).toString()}&status_code=2`,
      400,
      'invalid_request',
    ],
  ])('%s: %i %s', async (_, body, status, code) => {
    const orderId = await checkout('payment');

    const answer = await notify(body(success(orderId)));

    expect(answer.statusCode).toBe(status);
    expect(answer.body.data.code).toBe(code);
    expect((await orderOf(orderId)).status).toBe('created');
  });

  it('a JSON body: 415', async () => {
    const answer = await notify(JSON.stringify(success('x')), { 'Content-Type': 'application/json' });

    expect(answer.statusCode).toBe(415);
    expect(answer.body.msg).toMatch(/application\/x-www-form-urlencoded/);
  });

  it('no content type: 415', async () => {
    expect((await notify(success('x'), {})).statusCode).toBe(415);
  });

  it('10 KB or more: 413', async () => {
    const answer = await notify({ ...success('x'), custom_1: 'x'.repeat(10 * 1024) });

    expect(answer.statusCode).toBe(413);
  });
});

describe('nothing unsigned is trusted on its own', () => {
  it('an unknown order answers 200 and is kept apart for the operator', async () => {
    const orderId = `Unknown-${randomUUID()}`;

    const answer = await notify(success(orderId, { customer_token: 'F'.repeat(32) }));

    expect(answer.statusCode).toBe(200);
    expect(answer.body).toEqual({ status: 1, msg: 'Notification recorded', data: null });
    const kept = await ledger.unmatched(orderId);
    expect(kept).toEqual([
      expect.objectContaining({ reason: 'unknown_order', orderId, statusCode: '2', amount: '1000.00' }),
    ]);
    expect(JSON.stringify(kept)).not.toContain('F'.repeat(32));
  });

  it.each([
    ['another amount', { payhere_amount: '1.00' }],
    ['another currency', { payhere_currency: 'USD' }],
  ])(
    'a signed notification with %s than the order’s changes nothing and is kept apart',
    async (_, change) => {
      const orderId = await checkout('payment');

      const answer = await notify(
        signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '2', ...change }),
      );

      expect(answer.statusCode).toBe(200);
      expect((await orderOf(orderId)).status).toBe('created');
      expect(await ledger.unmatched(orderId)).toEqual([
        expect.objectContaining({ reason: 'amount_mismatch' }),
      ]);
    },
  );

  it('a status code the service does not know is kept apart, not acted on', async () => {
    const orderId = await checkout('payment');

    await notify(signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '7' }));

    expect((await orderOf(orderId)).status).toBe('created');
    expect(await ledger.unmatched(orderId)).toEqual([expect.objectContaining({ reason: 'unknown_status' })]);
  });

  it('moves state only forward: an older notification after a newer one changes nothing', async () => {
    const orderId = await checkout('payment');
    await payAtPayHere(sandbox, orderId);

    await notify(signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '2' }));
    await notify(signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '0' }));
    await notify(signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '-2' }));

    expect((await orderOf(orderId)).status).toBe('succeeded');
  });

  it('takes a chargeback only after a success', async () => {
    const paid = await checkout('payment');
    const unpaid = await checkout('payment');
    await payAtPayHere(sandbox, paid);

    await notify(signed({ order_id: paid, payhere_amount: '1000.00', status_code: '2' }));
    await notify(signed({ order_id: paid, payhere_amount: '1000.00', status_code: '-3' }));
    await notify(signed({ order_id: unpaid, payhere_amount: '1000.00', status_code: '-3' }));

    expect((await orderOf(paid)).status).toBe('chargedback');
    expect((await orderOf(unpaid)).status).toBe('created');
  });

  it('records a payment id only as the order’s payments at PayHere show it', async () => {
    const orderId = await checkout('payment');
    // The customer paid in PayHere's SDK: a payment of this order at PayHere.
    const paymentId = await payAtPayHere(sandbox, orderId);
    const other = await checkout('payment');

    await notify(success(other, { payment_id: String(paymentId) }));
    await notify(success(orderId, { payment_id: String(paymentId) }));

    // PayHere's records show no payment of `other`: reported, not confirmed.
    expect(await orderOf(other)).toMatchObject({ status: 'pending', payment_id: null });
    expect(await orderOf(orderId)).toMatchObject({ status: 'succeeded', payment_id: paymentId });
  });

  it('keeps a success PayHere cannot confirm right now as reported (pending), and confirms it on the next read', async () => {
    const orderId = await checkout('payment');
    const paymentId = await payAtPayHere(sandbox, orderId);
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);

    const answer = await notify(success(orderId, { payment_id: String(paymentId) }));
    const stored = await ledger.getOrder(orderId);
    const read = await orderOf(orderId);

    expect(answer.statusCode).toBe(200);
    expect(stored).toMatchObject({
      state: 'pending',
      paymentId: null,
      reported: { paymentId: String(paymentId) },
      reportedAt: expect.any(Number),
    });
    expect(read).toMatchObject({ status: 'succeeded', payment_id: paymentId });
    expect(await ledger.getOrder(orderId)).toMatchObject({ reportedAt: null, reported: { paymentId: null } });
  });
});

describe('a failure PayHere notifies before it answers the charge', () => {
  it('is not noted while the charge is in flight (503, sent again), then fails the charge it names', async () => {
    // A charge PayHere leaves pending, whose answer comes 3 s after PayHere processed it (time
    // enough, on a loaded machine, for the notification to be handled meanwhile).
    const orderId = await checkout('charge');
    sandbox.faults.inject('charge', { kind: 'latency', ms: 3_000, afterProcessing: true });
    const charging = call('charge', {
      body: {
        type: 'PAYMENT',
        order_id: orderId,
        items: 'Door bell',
        currency: 'LKR',
        amount: 1000,
        customer_token: SEED.customerTokens.pending,
      },
      headers: { 'On-Behalf-Of': alice },
    });
    let pending = sandbox.pendingCharges().find((charge) => charge.order_id === orderId);
    for (let i = 0; i < 500 && !pending; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      pending = sandbox.pendingCharges().find((charge) => charge.order_id === orderId);
    }
    const failure = signed({
      order_id: orderId,
      payhere_amount: '1000.00',
      status_code: '-2',
      payment_id: String(pending!.payment_id),
    });

    // Act: PayHere's failure of that payment, before its answer; then again, as PayHere resends it.
    const early = await notify(failure);
    const charged = await charging;
    const again = await notify(failure);

    // Assess
    expect(early.statusCode).toBe(503);
    expect(charged.statusCode).toBe(202);
    expect(again.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))?.state).toBe('failed');
  });
});

describe('what is received is bounded', () => {
  it('a replay of a notification already received is answered from the ledger: no PayHere read, nothing new kept', async () => {
    const orderId = await checkout('payment');
    const unknown = success(`Unknown-${randomUUID()}`);
    const form = success(orderId, { payment_id: '320011112222' });
    await notify(form);
    await notify(unknown);
    sandbox.resetCounters();

    const replays = await Promise.all([notify(form), notify(form), notify(unknown)]);

    expect(replays.map((answer) => answer.statusCode)).toEqual([200, 200, 200]);
    expect(replays[0]!.body).toEqual({ status: 1, msg: 'Notification recorded', data: null });
    expect(Object.values(sandbox.counters()).every((count) => count === 0)).toBe(true);
    expect(await ledger.unmatched(unknown.order_id)).toHaveLength(1);
  });

  it('1,000 variants of one recorded notification (unsigned extras, md5sig’s case) are replays: nothing written, no PayHere call', async () => {
    // Prepare: a paid order's notification and an unknown order's, both recorded.
    const orderId = await checkout('payment');
    const paymentId = String(await payAtPayHere(sandbox, orderId));
    const form = success(orderId, {
      payment_id: paymentId,
      custom_1: 'a',
      status_message: 'Successfully completed',
    });
    const unknown = success(`Unknown-${randomUUID()}`);
    expect((await notify(form)).statusCode).toBe(200);
    expect((await notify(unknown)).statusCode).toBe(200);
    const itemsBefore = await ledgerItems();
    sandbox.resetCounters();
    const variant = (base: Record<string, string>, i: number) => ({
      ...base,
      md5sig: i % 2 === 0 ? base.md5sig!.toLowerCase() : base.md5sig!,
      custom_1: `variant ${i}`,
      custom_2: String(i),
      status_message: `message ${i}`,
      [`extra_${i % 7}`]: 'x'.repeat(i % 50),
    });

    // Act: 1,000 variants, 20 at a time, one in ten of the unknown order's.
    const statuses: number[] = [];
    for (let batch = 0; batch < 50; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, j) => {
          const i = batch * 20 + j;
          return notify(variant(i % 10 === 0 ? unknown : form, i));
        }),
      );
      statuses.push(...answers.map((answer) => answer.statusCode));
    }

    // Assess: every one answered as the recorded one was; no item written; PayHere never asked.
    expect(statuses).toEqual(Array(1_000).fill(200));
    expect(await ledgerItems()).toBe(itemsBefore);
    expect(Object.values(sandbox.counters()).every((count) => count === 0)).toBe(true);
    expect(await ledger.unmatched(unknown.order_id!)).toHaveLength(1);
    expect((await orderOf(orderId)).status).toBe('succeeded');
  }, 60_000);

  it('a notification that differs in an unsigned field is no replay: it is acted on, PayHere asked at most once per order per 10 s', async () => {
    const orderId = await checkout('payment');
    await notify(success(orderId, { payment_id: '320011113333' }));
    sandbox.resetCounters();

    const soon = await notify(success(orderId, { payment_id: '320011114444' }));
    const searchesSoon = sandbox.counters().search ?? 0;
    await checkedSecondsAgo(orderId, 'notification', 10);
    await notify(success(orderId, { payment_id: '320011115555' }));

    // Within the window: kept as reported, without a PayHere read. After it: asked again, still
    // nothing to show, so the order stays reported, pending.
    expect(soon.statusCode).toBe(200);
    expect(searchesSoon).toBe(0);
    expect(sandbox.counters().search).toBe(1);
    expect((await orderOf(orderId)).status).toBe('pending');
  });

  it('what is kept apart expires, is capped in size, and never holds a card number unmasked', async () => {
    const orderId = `Unknown-${randomUUID()}`;
    const before = Math.floor(Date.now() / 1000);

    await notify(
      success(orderId, {
        custom_1: '4111 1111 1111 1111',
        note: `card 4111111111111111 ${'x'.repeat(3000)}`,
        ...Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`extra_${i}`, 'y'])),
      }),
    );
    const [kept] = await ledger.unmatched(orderId);

    expect(kept!.expiresAt).toBeGreaterThanOrEqual(before + 90 * 86_400);
    expect(kept!.expiresAt).toBeLessThanOrEqual(before + 90 * 86_400 + 60);
    expect(Object.keys(kept!.fields).length).toBeLessThanOrEqual(32);
    expect(Object.values(kept!.fields).every((value) => value.length <= 255)).toBe(true);
    expect(kept!.fields.custom_1).toBe('************1111');
    expect(JSON.stringify(kept)).not.toMatch(/4111 ?1111 ?1111 ?1111/);
  });
});

describe('each flow ends where the app can see it', () => {
  it('a pre-approval: the owner reads its customer token and masked card, charges it, and nobody else can', async () => {
    const created = await call('createCheckout', {
      body: { kind: 'preapproval', items: 'Save my card', currency: 'LKR' },
      headers: await asCustomer(alice),
    });
    const orderId = created.body.data.order_id;
    const token = SEED.customerTokens.successMaster;

    await notify(
      signed({
        order_id: orderId,
        payhere_amount: '100.00',
        status_code: '2',
        customer_token: token,
        method: 'MASTER',
        card_no: '5123456789014444',
        card_expiry: '12/29',
      }),
    );
    const hers = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });
    const his = await call('getCheckout', { id: orderId, headers: await asCustomer(bob) });
    const priced = await checkout('charge', { amount: 250 });
    const charge = {
      type: 'PAYMENT',
      order_id: priced,
      items: 'Door bell',
      currency: 'LKR',
      amount: 250,
      customer_token: token,
    };
    const bobsTry = await call('charge', { body: charge, headers: await asCustomer(bob) });
    const alicesCharge = await call('charge', { body: charge, headers: await asCustomer(alice) });

    expect(hers.body.data).toMatchObject({
      kind: 'preapproval',
      status: 'succeeded',
      customer_token: token,
      card: { method: 'MASTER', card_no: '************4444', card_expiry: '12/29' },
    });
    expect(his.statusCode).toBe(404);
    expect(bobsTry.statusCode).toBe(404);
    expect(alicesCharge.statusCode).toBe(200);
  });

  it('a second, different customer token for one pre-approval changes nothing, and is alerted', async () => {
    const orderId = await checkout('preapproval');
    const first = randomUUID().replaceAll('-', '').toUpperCase();
    const errors: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((line) => {
      errors.push(String(line));
      return true;
    });
    process.env.LOG_LEVEL = 'error';

    await notify(
      signed({ order_id: orderId, payhere_amount: '0.00', status_code: '2', customer_token: first }),
    );
    await notify(
      signed({ order_id: orderId, payhere_amount: '0.00', status_code: '2', customer_token: 'B'.repeat(32) }),
    ).finally(() => {
      process.env.LOG_LEVEL = 'silent';
    });

    expect((await orderOf(orderId)).customer_token).toBe(first);
    expect(await ledger.lookup('customer_token', 'B'.repeat(32))).toBeUndefined();
    expect(errors.map((line) => JSON.parse(line).message)).toContain(
      'a second, different customer token for one pre-approval was refused',
    );
    expect(errors.join('\n')).not.toContain(first);
  });

  it('a customer token another customer saved cannot become this customer’s card', async () => {
    const bobs = await checkout('preapproval', {}, bob);
    const alices = await checkout('preapproval', {}, alice);
    const token = randomUUID().replaceAll('-', '').toUpperCase();

    await notify(signed({ order_id: bobs, payhere_amount: '0.00', status_code: '2', customer_token: token }));
    await notify(
      signed({ order_id: alices, payhere_amount: '0.00', status_code: '2', customer_token: token }),
    );

    expect(await ledger.lookup('customer_token', token)).toMatchObject({ owner: bob });
    expect((await orderOf(alices)).customer_token).toBeNull();
    expect(await ledger.unmatched(alices)).toEqual([expect.objectContaining({ reason: 'token_conflict' })]);
  });

  it('a hold: the owner reads its authorization token', async () => {
    const orderId = await checkout('authorize');
    const hold = randomUUID();

    await notify(
      signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '3', authorization_token: hold }),
    );
    const hers = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });

    expect(hers.body.data).toMatchObject({
      kind: 'authorize',
      status: 'succeeded',
      authorization_token: hold,
    });
    expect(await ledger.lookup('authorization', hold)).toMatchObject({ orderId, owner: alice });
  });

  it('a subscription: confirmed as this order’s, then the customer’s in every subscription route', async () => {
    // The sandbox's active subscription was made for order Order23451 (2,500.00 LKR, two installments paid).
    const orderId = 'Order23451';
    await call('createCheckout', {
      body: {
        kind: 'recurring',
        order_id: orderId,
        items: 'Gym',
        currency: 'LKR',
        amount: 2500,
        recurrence: '1 Month',
        duration: '1 Year',
      },
      headers: { 'On-Behalf-Of': alice },
    });
    const subscriptionId = String(SEED.subscriptions.active);

    await notify(
      signed({
        order_id: orderId,
        payhere_amount: '2500.00',
        status_code: '2',
        subscription_id: subscriptionId,
        message_type: 'RECURRING_INSTALLMENT_SUCCESS',
        item_rec_install_paid: '2',
      }),
    );
    const order = await call('getCheckout', { id: orderId, headers: await asCustomer(alice) });
    const list = await call('listSubscriptions', { headers: await asCustomer(alice) });
    const one = await call('getSubscription', { id: subscriptionId, headers: await asCustomer(alice) });
    const bobs = await call('getSubscription', { id: subscriptionId, headers: await asCustomer(bob) });

    expect(order.body.data).toMatchObject({
      kind: 'recurring',
      status: 'succeeded',
      subscription_id: SEED.subscriptions.active,
    });
    expect((await ledger.getOrder(orderId))?.installmentsPaid).toBe(2);
    expect(list.body.msg).toBe('Found 1 subscriptions');
    expect(one.statusCode).toBe(200);
    expect(bobs.statusCode).toBe(404);
  });

  it('a subscription id that is not this order’s is not recorded', async () => {
    const orderId = await checkout('recurring', { recurrence: '1 Month', duration: '1 Year' });

    await notify(success(orderId, { subscription_id: String(SEED.subscriptions.completed) }));

    // Reported, not confirmed: PayHere's record of that subscription is another order's.
    expect(await orderOf(orderId)).toMatchObject({ status: 'pending', subscription_id: null });
    expect(await ledger.subscriptionsOf(alice)).not.toContain(String(SEED.subscriptions.completed));
  });
});

describe('card testing through pre-approvals (docs/budget.md "Work that cannot change anything")', () => {
  /** A pre-approval PayHere declined: a failure notification, a payment id of its own. */
  const declined = (orderId: string, paymentId: string) =>
    signed({ order_id: orderId, payhere_amount: '0.00', status_code: '-2', payment_id: paymentId });

  it('counts each declined pre-approval against its customer, and refuses a fourth pre-approval in the window', async () => {
    const carol = customer('carol');
    const dave = customer('dave');
    for (let i = 0; i < 3; i++) {
      const orderId = await checkout('preapproval', {}, carol);
      const notification = declined(orderId, `32009999${i}`);
      await notify(notification);
      // PayHere sending it again counts it once: its identity is recorded.
      await notify(notification);
    }

    const refused = await call('createCheckout', {
      body: { kind: 'preapproval', items: 'Save my card', currency: 'LKR' },
      headers: { 'On-Behalf-Of': carol },
    });
    const ownRequest = await call('createCheckout', {
      body: { kind: 'preapproval', items: 'Save my card', currency: 'LKR' },
      headers: await asCustomer(carol),
    });
    const someoneElse = await checkout('preapproval', {}, dave);

    for (const answer of [refused, ownRequest]) {
      expect(answer.statusCode).toBe(429);
      expect(answer.body).toEqual({
        status: -1,
        msg: 'Too many cards were declined for this customer: try again later.',
        data: { code: 'caller_rate_limited' },
      });
      expect(Number(answer.headers?.['Retry-After'])).toBeGreaterThan(0);
    }
    expect(someoneElse).toMatch(/^ORD-/);
  });

  it('counts two declines of one pre-approval order twice: a customer may retry a card on the same order', async () => {
    const erin = customer('erin');
    const orderId = await checkout('preapproval', {}, erin);

    await notify(declined(orderId, '320099980001'));
    await notify(declined(orderId, '320099980002'));

    const window = Math.floor(Date.now() / 3_600_000);
    const counts = await ledger.failedPreapprovals(erin);
    // Each counts in its window and the next (lib/orders/attempts.ts).
    expect([counts[window], counts[window + 1]]).toEqual([2, 2]);
  });
});

describe('a paid order paid again', () => {
  it('within moments of its confirmation (a double tap) fails unnoted, and is flagged once PayHere sends it again', async () => {
    const orderId = await checkout('payment');
    const first = String(await payAtPayHere(sandbox, orderId));
    const second = String(await payAtPayHere(sandbox, orderId));

    const confirmed = await notify(success(orderId, { payment_id: first }));
    const tooSoon = await notify(success(orderId, { payment_id: second }));
    const flaggedBefore = (await ledger.getOrder(orderId))!.duplicatePayments;
    // PayHere sends it again once the order may be checked again.
    await checkedSecondsAgo(orderId, 'notification', 11);
    const resent = await notify(success(orderId, { payment_id: second }));

    expect(confirmed.statusCode).toBe(200);
    expect(tooSoon.statusCode).toBe(429);
    expect(tooSoon.headers['Retry-After']).toBe('10');
    expect(flaggedBefore).toEqual([]);
    expect(resent.statusCode).toBe(200);
    expect(await ledger.getOrder(orderId)).toMatchObject({
      state: 'succeeded',
      paymentId: first,
      duplicatePayments: [second],
    });
  });

  it('whose payment PayHere’s search cannot show now (it answers pending) fails unnoted, and is flagged once it can', async () => {
    const orderId = await checkout('payment');
    const first = String(await payAtPayHere(sandbox, orderId));
    const second = String(await payAtPayHere(sandbox, orderId));
    await notify(success(orderId, { payment_id: first }));
    await checkedSecondsAgo(orderId, 'notification', 11);
    sandbox.faults.inject('search', { kind: 'searchPending' });

    const unanswered = await notify(success(orderId, { payment_id: second }));
    sandbox.faults.clear();
    await checkedSecondsAgo(orderId, 'notification', 11);
    const resent = await notify(success(orderId, { payment_id: second }));

    expect(unanswered.statusCode).toBe(503);
    expect(resent.statusCode).toBe(200);
    expect((await ledger.getOrder(orderId))?.duplicatePayments).toEqual([second]);
  });
});
