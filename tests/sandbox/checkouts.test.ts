// Completing a checkout as the customer would in PayHere's SDK: the hash check, the gateway state
// each kind creates, and the signed notification posted to notify_url.
import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { call, manualClock, useSandboxAndReceiver } from './helpers.ts';
import { checkoutHashOf, checkoutRequest, expectedMd5sig } from './signing.ts';

// 10:00 in Colombo on 15 January 2025.
const clock = manualClock(Date.UTC(2025, 0, 15, 4, 30, 0));
const stand = useSandboxAndReceiver(clock);

function checkout(overrides: Record<string, unknown> = {}) {
  return checkoutRequest(stand.receiver.url, overrides);
}

/** The one notification the stand.receiver got, after checking it came as PayHere sends it. */
async function onlyNotification(): Promise<Record<string, string>> {
  await stand.sandbox.deliveriesSettled();
  expect(stand.receiver.received).toHaveLength(1);
  const [notification] = stand.receiver.received;
  expect(notification?.method).toBe('POST');
  expect(notification?.path).toBe('/payhere/notify');
  expect(notification?.contentType).toBe('application/x-www-form-urlencoded');
  expect(new Set(notification?.names).size).toBe(notification?.names.length);
  return notification!.fields;
}

const HEX32 = /^[0-9A-F]{32}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('the signature', () => {
  it("recomputed with node:crypto reproduces docs/payhere.md's worked example", () => {
    const example = {
      merchant_id: '1211149',
      order_id: 'ORDER-1001',
      payhere_amount: '1000.00',
      payhere_currency: 'LKR',
      status_code: '2',
    };

    expect(expectedMd5sig(example, 'MERCHANT_SECRET_EXAMPLE')).toBe('C12CC18FD89630351949AE2037AA0A3E');
  });

  it("of a successful payment of docs/payhere.md's worked example is the documented md5sig", async () => {
    await stand.sandbox.completeCheckout(checkout({ order_id: 'ORDER-1001', amount: 1000, currency: 'LKR' }));
    const fields = await onlyNotification();

    expect(fields.md5sig).toBe('C12CC18FD89630351949AE2037AA0A3E');
  });
});

describe('a payment checkout', () => {
  it('succeeds: a RECEIVED payment in search and a notification with every documented field', async () => {
    const answer = await stand.sandbox.completeCheckout(checkout({ order_id: 'Order-P1', amount: 1234.5 }));
    const fields = await onlyNotification();
    const search = await stand.api.search('Order-P1');

    expect(answer).toMatchObject({
      order_id: 'Order-P1',
      kind: 'payment',
      outcome: 'success',
      status_code: 2,
      customer_token: null,
      authorization_token: null,
      subscription_id: null,
    });
    expect(fields).toEqual({
      merchant_id: '1211149',
      order_id: 'Order-P1',
      payment_id: String(answer.payment_id),
      payhere_amount: '1234.50',
      payhere_currency: 'LKR',
      status_code: '2',
      md5sig: expectedMd5sig(fields),
      custom_1: 'cart-42',
      custom_2: '',
      status_message: 'Successfully received the VISA payment',
      method: 'VISA',
      card_holder_name: 'S Perera',
      card_no: '************1234',
      card_expiry: '12/27',
      recurring: '0',
    });
    expect(stand.receiver.received[0]?.names.slice(0, 8)).toEqual([
      'merchant_id',
      'order_id',
      'payment_id',
      'payhere_amount',
      'payhere_currency',
      'status_code',
      'md5sig',
      'custom_1',
    ]);
    expect(search.json.data).toHaveLength(1);
    expect(search.json.data[0]).toMatchObject({
      payment_id: answer.payment_id,
      order_id: 'Order-P1',
      status: 'RECEIVED',
      amount: 1234.5,
      currency: 'LKR',
      description: 'Toy Car',
      date: '2025-01-15 10:00:00',
    });
  });

  it.each([
    ['decline', -2, 'Payment declined by the issuer.'],
    ['cancel', -1, 'Payment cancelled by the customer.'],
    ['pending', 0, 'Payment is pending.'],
  ])('ends %s: status_code %i, signed, and no payment in search', async (outcome, code, message) => {
    const answer = await stand.sandbox.completeCheckout(checkout({ order_id: 'Order-P2', outcome }));
    const fields = await onlyNotification();
    const search = await stand.api.search('Order-P2');

    expect(answer.status_code).toBe(code);
    expect(fields.status_code).toBe(String(code));
    expect(fields.status_message).toBe(message);
    expect(fields.payment_id).toBe(String(answer.payment_id));
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
    expect(search.json.msg).toBe('No payments found');
  });

  it('cancelled by the customer carries no card', async () => {
    await stand.sandbox.completeCheckout(checkout({ outcome: 'cancel' }));
    const fields = await onlyNotification();

    expect([fields.method, fields.card_holder_name, fields.card_no, fields.card_expiry]).toEqual([
      '',
      '',
      '',
      '',
    ]);
  });
});

describe('a preapproval checkout', () => {
  it('without an amount is hashed and notified with 0.00 and gives a new customer token', async () => {
    const request = checkout({ kind: 'preapproval', order_id: 'Order-PA1', amount: undefined });
    const answer = await stand.sandbox.completeCheckout(request);
    const fields = await onlyNotification();

    expect(request.hash).toBe(checkoutHashOf('Order-PA1', '0.00', 'LKR'));
    expect(answer.customer_token).toMatch(HEX32);
    expect(Object.values(SEED.customerTokens)).not.toContain(answer.customer_token);
    expect(fields).toMatchObject({
      payhere_amount: '0.00',
      status_code: '2',
      customer_token: answer.customer_token,
      status_message: 'Successfully pre-approved the VISA card',
      card_no: '************1234',
      recurring: '0',
    });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
  });

  it('gives a token the Merchant API then charges, on the saved card', async () => {
    const { customer_token } = await stand.sandbox.completeCheckout(
      checkout({ kind: 'preapproval', amount: null }),
    );
    const charged = await stand.api.post('payment/charge', {
      type: 'PAYMENT',
      order_id: 'Order-PA2',
      items: 'First ride',
      currency: 'LKR',
      amount: 450,
      customer_token,
    });
    const search = await stand.api.search('Order-PA2');

    expect(charged.json.status).toBe(1);
    expect(charged.json.data.status_code).toBe(2);
    expect(search.json.data[0].payment_method).toEqual({
      method: 'VISA',
      card_customer_name: 'S Perera',
      card_no: '************1234',
    });
  });

  it('with an amount notifies that amount', async () => {
    await stand.sandbox.completeCheckout(checkout({ kind: 'preapproval', amount: 10 }));
    const fields = await onlyNotification();

    expect(fields.payhere_amount).toBe('10.00');
  });

  it('declined gives no token, which the Merchant API would refuse anyway', async () => {
    const answer = await stand.sandbox.completeCheckout(
      checkout({ kind: 'preapproval', outcome: 'decline' }),
    );
    const fields = await onlyNotification();

    expect(answer.customer_token).toBeNull();
    expect(fields.status_code).toBe('-2');
    expect(fields).not.toHaveProperty('customer_token');
  });
});

describe('an authorize checkout', () => {
  it('succeeds as a hold: status_code 3, an authorization token, no payment yet', async () => {
    const answer = await stand.sandbox.completeCheckout(
      checkout({ kind: 'authorize', order_id: 'Order-H1', amount: 80 }),
    );
    const fields = await onlyNotification();
    const search = await stand.api.search('Order-H1');

    expect(answer.status_code).toBe(3);
    expect(answer.authorization_token).toMatch(UUID);
    expect(fields).toMatchObject({
      status_code: '3',
      authorization_token: answer.authorization_token,
      captured_amount: '0.00',
      payhere_amount: '80.00',
      status_message: 'Successfully authorized the VISA payment',
    });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
    expect(search.json.msg).toBe('No payments found');
  });

  it('makes a hold the capture endpoint captures into a payment', async () => {
    const { authorization_token, payment_id } = await stand.sandbox.completeCheckout(
      checkout({ kind: 'authorize', order_id: 'Order-H2', amount: 80 }),
    );
    const captured = await stand.api.post('payment/capture', {
      authorization_token,
      amount: 60,
      deduction_details: 'One item out of stock',
    });
    const search = await stand.api.search('Order-H2');

    expect(captured.json.msg).toBe('Successfully captured payment');
    expect(captured.json.data).toMatchObject({ amount: 80, captured_amount: 60, payment_id });
    expect(search.json.data[0]).toMatchObject({ payment_id, amount: 60, status: 'RECEIVED' });
  });

  it('makes a hold the refund endpoint releases', async () => {
    const { authorization_token } = await stand.sandbox.completeCheckout(checkout({ kind: 'authorize' }));
    const released = await stand.api.post('payment/refund', {
      authorization_token,
      description: 'Order cancelled',
    });

    expect(released.json.msg).toBe('Successfully processed the authorization refund');
  });

  it('declined holds nothing', async () => {
    const answer = await stand.sandbox.completeCheckout(checkout({ kind: 'authorize', outcome: 'decline' }));
    const fields = await onlyNotification();

    expect(answer.authorization_token).toBeNull();
    expect(fields).not.toHaveProperty('authorization_token');
    expect(fields.status_code).toBe('-2');
  });
});

describe('a recurring checkout', () => {
  const recurring = { kind: 'recurring', order_id: 'Order-S1', items: 'Gym', amount: 2500 };

  it('creates an ACTIVE subscription with its first payment and notifies AUTHORIZATION_SUCCESS', async () => {
    const answer = await stand.sandbox.completeCheckout(
      checkout({ ...recurring, recurrence: '1 Month', duration: '1 Year' }),
    );
    const fields = await onlyNotification();

    expect(answer.subscription_id).toEqual(expect.any(Number));
    expect(Object.values(SEED.subscriptions)).not.toContain(answer.subscription_id);
    expect(fields).toMatchObject({
      order_id: 'Order-S1',
      payment_id: String(answer.payment_id),
      payhere_amount: '2500.00',
      status_code: '2',
      recurring: '1',
      subscription_id: String(answer.subscription_id),
      message_type: 'AUTHORIZATION_SUCCESS',
      item_recurrence: '1 Month',
      item_duration: '1 Year',
      item_rec_status: '0',
      item_rec_date_next: '2025-02-15',
      item_rec_install_paid: '1',
    });
    expect(fields.md5sig).toBe(expectedMd5sig(fields));
  });

  it('lists the subscription and its first payment through the Merchant API', async () => {
    const { subscription_id, payment_id } = await stand.sandbox.completeCheckout(
      checkout({ ...recurring, recurrence: '1 Month', duration: 'Forever' }),
    );
    const list = await stand.api.get('subscription');
    const one = await stand.api.get(`subscription/${subscription_id}`);
    const payments = await stand.api.get(`subscription/${subscription_id}/payments`);

    expect(list.json.msg).toBe('Found 5 subscriptions');
    expect(one.json.data).toMatchObject({
      subscription_id,
      order_id: 'Order-S1',
      date: '2025-01-15 10:00:00',
      description: 'Gym',
      recurring: 'Charged every month forever',
      status: 'ACTIVE',
      amount: 2500,
      currency: 'LKR',
    });
    expect(payments.json.data.map((p: { payment_id: number }) => p.payment_id)).toEqual([payment_id]);
  });

  it('never hands out a subscription id twice, even across a reset', async () => {
    const terms = { ...recurring, recurrence: '1 Month', duration: '1 Year' };
    const first = await stand.sandbox.completeCheckout(checkout(terms));
    stand.sandbox.reset();
    const second = await stand.sandbox.completeCheckout(checkout(terms));

    expect(second.subscription_id).not.toBe(first.subscription_id);
  });

  it('declined creates no subscription and notifies AUTHORIZATION_FAILED', async () => {
    const answer = await stand.sandbox.completeCheckout(
      checkout({ ...recurring, outcome: 'decline', recurrence: '1 Month', duration: '1 Year' }),
    );
    const fields = await onlyNotification();
    const list = await stand.api.get('subscription');

    expect(answer.subscription_id).toBeNull();
    expect(fields).toMatchObject({
      status_code: '-2',
      recurring: '1',
      subscription_id: '',
      message_type: 'AUTHORIZATION_FAILED',
      item_recurrence: '1 Month',
      item_duration: '1 Year',
      item_rec_status: '-2',
      item_rec_date_next: '',
      item_rec_install_paid: '0',
    });
    expect(list.json.msg).toBe('Found 4 subscriptions');
  });

  it('cannot end pending', async () => {
    const request = checkout({ ...recurring, outcome: 'pending', recurrence: '1 Month', duration: '1 Year' });

    await expect(stand.sandbox.completeCheckout(request)).rejects.toThrow(/cannot end pending/);
  });
});

describe('what the checkout refuses, posting nothing', () => {
  async function expectRefused(request: Record<string, unknown>, message: string) {
    await expect(stand.sandbox.completeCheckout(request as never)).rejects.toMatchObject({
      status: 400,
      message,
    });
    await stand.sandbox.deliveriesSettled();
    expect(stand.receiver.received).toHaveLength(0);
    expect(stand.sandbox.deliveries()).toHaveLength(0);
    expect((await stand.api.search(String(request.order_id))).json.msg).toBe('No payments found');
  }

  it('a hash that does not match', async () => {
    await expectRefused(checkout({ hash: checkoutHashOf('ORDER-1001', '999.00', 'LKR') }), 'Invalid hash');
  });

  it('a hash over the amount not written with two decimals', async () => {
    await expectRefused(
      checkout({ amount: 1000, hash: checkoutHashOf('ORDER-1001', '1000.0', 'LKR') }),
      'Invalid hash',
    );
  });

  it('a hash made with another secret', async () => {
    const hash = checkoutHashOf('ORDER-1001', '1000.00', 'LKR', { secret: 'ANOTHER_SECRET' });

    await expectRefused(checkout({ hash }), 'Invalid hash');
  });

  it('a hash in lower case, since PayHere compares it as it computes it', async () => {
    await expectRefused(
      checkout({ hash: checkoutHashOf('ORDER-1001', '1000.00', 'LKR').toLowerCase() }),
      'Invalid hash',
    );
  });

  it('a merchant id that is not the merchant', async () => {
    await expectRefused(checkout({ merchant_id: '1211150' }), 'Invalid merchant_id');
  });

  it.each([
    [{ amount: undefined }, 'Invalid request parameter: amount'],
    [{ notify_url: 'not a url' }, 'Invalid request parameter: notify_url'],
    [{ kind: 'charge' }, 'Invalid request parameter: kind'],
    [{ ammount: 5 }, 'Invalid request parameter: ammount'],
    [{ recurrence: '1 Month' }, 'Invalid request parameter: recurrence'],
    [
      { kind: 'recurring', recurrence: '1 month', duration: '1 Year' },
      'Invalid request parameter: recurrence',
    ],
    [{ kind: 'recurring', recurrence: '1 Month' }, 'Invalid request parameter: duration'],
    [{ currency: 'INR' }, 'Invalid currency'],
    [{ delivery: { delayMs: 60_001 } }, 'Invalid request parameter: delivery.delayMs'],
    [{ delivery: { replay: true } }, 'Invalid request parameter: delivery.replay'],
    [{ amount: 10.005 }, 'Invalid amount'],
    [
      { delivery: { badSignature: true, signWith: 'X' } },
      'Invalid request parameter: delivery.signWith (not with badSignature)',
    ],
  ])('%j', async (overrides, message) => {
    await expectRefused(checkout(overrides), message);
  });
});

describe('POST /__sandbox/checkouts', () => {
  it('answers what the checkout created and the delivery results', async () => {
    const answer = await call(stand.sandbox, 'POST', '/__sandbox/checkouts', {
      json: checkout({ kind: 'preapproval', amount: null, sandbox: true }),
    });

    expect(answer.status).toBe(200);
    expect(answer.json.status).toBe(1);
    expect(answer.json.msg).toBe('Checkout completed');
    expect(answer.json.data).toMatchObject({
      kind: 'preapproval',
      outcome: 'success',
      status_code: 2,
      customer_token: expect.stringMatching(HEX32),
      authorization_token: null,
      subscription_id: null,
    });
    expect(answer.json.data.deliveries).toEqual([
      {
        id: 1,
        url: stand.receiver.url,
        fields: stand.receiver.received[0]?.fields,
        replayOf: null,
        status: 200,
        body: 'OK',
        error: null,
      },
    ]);
  });

  it('refuses a bad hash with 400 and posts nothing', async () => {
    const answer = await call(stand.sandbox, 'POST', '/__sandbox/checkouts', {
      json: checkout({ hash: 'A'.repeat(32) }),
    });

    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ status: -1, msg: 'Invalid hash', data: null });
    expect(stand.receiver.received).toHaveLength(0);
  });

  it('refuses a body that is not JSON', async () => {
    const answer = await call(stand.sandbox, 'POST', '/__sandbox/checkouts', { body: '{kind:' });

    expect(answer.status).toBe(400);
    expect(answer.json.msg).toBe('Malformed request body');
  });

  it('is not counted as a Merchant API request', async () => {
    const before = stand.sandbox.counters();
    await call(stand.sandbox, 'POST', '/__sandbox/checkouts', { json: checkout() });

    expect(stand.sandbox.counters()).toEqual(before);
  });
});
