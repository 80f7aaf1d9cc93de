// How notifications are delivered: the faults a test can ask for, replays, the delivery log, a
// receiver that is down or slow, and the notifications of charges made through the Merchant API.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type ApiClient, accessToken, apiClient, call } from './helpers.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { checkoutRequest, expectedMd5sig } from './signing.ts';

let sandbox: Sandbox;
let receiver: Receiver;
let api: ApiClient;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false, notificationTimeoutMs: 300 });
  receiver = await startReceiver();
});
afterAll(async () => {
  await sandbox.close();
  await receiver.close();
});
beforeEach(async () => {
  sandbox.reset();
  receiver.clear();
  api = apiClient(sandbox, await accessToken(sandbox));
});

function checkout(overrides: Record<string, unknown> = {}) {
  return checkoutRequest(receiver.url, overrides);
}

describe('delivery faults', () => {
  it('duplicate: the same form twice, both in the log', async () => {
    const answer = await sandbox.completeCheckout(checkout({ delivery: { duplicate: true } }));

    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1]?.body).toBe(receiver.received[0]?.body);
    expect(answer.deliveries.map((delivery) => delivery.id)).toEqual([1, 2]);
    expect(sandbox.deliveries()).toHaveLength(2);
  });

  it('delayMs: the call answers at once and the notification arrives later', async () => {
    const started = performance.now();
    const answer = await sandbox.completeCheckout(checkout({ delivery: { delayMs: 250 } }));
    const pendingThen = sandbox.pendingDeliveries();
    const receivedThen = receiver.received.length;
    await receiver.receivedCount(1);
    const arrivedAfter = performance.now() - started;
    await sandbox.deliveriesSettled();

    expect(answer.deliveries).toEqual([]);
    expect(pendingThen).toBe(1);
    expect(receivedThen).toBe(0);
    expect(arrivedAfter).toBeGreaterThanOrEqual(240);
    expect(sandbox.deliveries()).toHaveLength(1);
    expect(sandbox.pendingDeliveries()).toBe(0);
  });

  it('tamper: an unsigned field replaced, the signature left as PayHere made it', async () => {
    await sandbox.completeCheckout(checkout({ delivery: { tamper: { payment_id: '320099999999' } } }));
    const [notification] = receiver.received;

    expect(notification?.fields.payment_id).toBe('320099999999');
    expect(notification?.fields.md5sig).toBe(expectedMd5sig(notification!.fields));
  });

  it("tamper: a pre-approval's customer token replaced", async () => {
    const answer = await sandbox.completeCheckout(
      checkout({
        kind: 'preapproval',
        delivery: { tamper: { customer_token: SEED.customerTokens.success } },
      }),
    );
    const [notification] = receiver.received;

    expect(notification?.fields.customer_token).toBe(SEED.customerTokens.success);
    expect(notification?.fields.customer_token).not.toBe(answer.customer_token);
    expect(notification?.fields.md5sig).toBe(expectedMd5sig(notification!.fields));
  });

  it('tamper: a signed field changed, so the signature no longer matches', async () => {
    await sandbox.completeCheckout(checkout({ delivery: { tamper: { payhere_amount: '1.00' } } }));
    const [notification] = receiver.received;

    expect(notification?.fields.payhere_amount).toBe('1.00');
    expect(notification?.fields.md5sig).not.toBe(expectedMd5sig(notification!.fields));
  });

  it('badSignature: an md5sig of the right form that the merchant secret does not give', async () => {
    await sandbox.completeCheckout(checkout({ delivery: { badSignature: true } }));
    const fields = receiver.received[0]!.fields;

    expect(fields.md5sig).toMatch(/^[0-9A-F]{32}$/);
    expect(fields.md5sig).not.toBe(expectedMd5sig(fields));
  });

  it("signWith: signed with an app's own merchant secret", async () => {
    await sandbox.completeCheckout(checkout({ delivery: { signWith: 'APP_MERCHANT_SECRET_1' } }));
    const fields = receiver.received[0]!.fields;

    expect(fields.md5sig).toBe(expectedMd5sig(fields, 'APP_MERCHANT_SECRET_1'));
    expect(fields.md5sig).not.toBe(expectedMd5sig(fields));
  });

  it('faults combine: signed with another secret, altered, twice', async () => {
    await sandbox.completeCheckout(
      checkout({ delivery: { signWith: 'APP_SECRET', tamper: { custom_1: 'x' }, duplicate: true } }),
    );

    expect(receiver.received).toHaveLength(2);
    for (const { fields } of receiver.received) {
      expect(fields.custom_1).toBe('x');
      expect(fields.md5sig).toBe(expectedMd5sig(fields, 'APP_SECRET'));
    }
  });
});

describe('replay', () => {
  it('posts an earlier form again, byte for byte, logged as a replay', async () => {
    await sandbox.completeCheckout(checkout({ delivery: { tamper: { payment_id: '1' } } }));
    const replayed = await sandbox.replayNotification(1);

    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1]?.body).toBe(receiver.received[0]?.body);
    expect(replayed).toEqual([expect.objectContaining({ id: 2, replayOf: 1, status: 200 })]);
    expect(sandbox.deliveries().map((delivery) => delivery.replayOf)).toEqual([null, 1]);
  });

  it('refuses an attempt that is not in the log', async () => {
    await expect(sandbox.replayNotification(7)).rejects.toMatchObject({
      status: 404,
      message: 'Notification not found',
    });
  });

  it('over HTTP: POST /__sandbox/notifications/{id}/replay', async () => {
    await sandbox.completeCheckout(checkout());
    const answer = await call(sandbox, 'POST', '/__sandbox/notifications/1/replay');
    const unknown = await call(sandbox, 'POST', '/__sandbox/notifications/9/replay');

    expect(answer.json.msg).toBe('Notification replayed');
    expect(answer.json.data.deliveries).toEqual([expect.objectContaining({ id: 2, replayOf: 1 })]);
    expect(receiver.received).toHaveLength(2);
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ status: -1, msg: 'Notification not found', data: null });
  });
});

describe('the delivery log', () => {
  it("keeps the receiver's status and body", async () => {
    receiver.answerWith({ status: 503, body: 'try later' });
    await sandbox.completeCheckout(checkout());

    expect(sandbox.deliveries()).toEqual([
      {
        id: 1,
        url: receiver.url,
        fields: receiver.received[0]?.fields,
        replayOf: null,
        status: 503,
        body: 'try later',
        error: null,
      },
    ]);
  });

  it('records a receiver that is down, and the sandbox keeps serving', async () => {
    const down = await startReceiver();
    const url = down.url;
    await down.close();
    const answer = await sandbox.completeCheckout(checkoutRequest(url, { order_id: 'Order-D1' }));
    const search = await api.search('Order-D1');

    expect(answer.deliveries).toEqual([
      expect.objectContaining({
        url,
        status: null,
        body: null,
        error: expect.stringMatching(/^ECONNREFUSED/),
      }),
    ]);
    expect(search.json.status).toBe(1);
  });

  it('records a receiver that does not answer in time', async () => {
    receiver.answerWith({ delayMs: 1_000 });
    const answer = await sandbox.completeCheckout(checkout());

    expect(answer.deliveries[0]).toMatchObject({
      status: null,
      error: 'timeout: no answer within 300 ms',
    });
  });

  it('posts to nothing but loopback, and says so', async () => {
    const answer = await sandbox.completeCheckout(
      checkout({ notify_url: 'https://merchant.example.com/notify' }),
    );

    expect(answer.deliveries).toEqual([
      expect.objectContaining({
        url: 'https://merchant.example.com/notify',
        status: null,
        error: 'not sent: the sandbox posts only to loopback http(s) URLs',
      }),
    ]);
  });

  it('is cleared by reset, which also drops a delivery still waiting', async () => {
    await sandbox.completeCheckout(checkout());
    await sandbox.completeCheckout(checkout({ delivery: { delayMs: 100 } }));
    sandbox.reset();
    await sleep(200);
    await sandbox.deliveriesSettled();

    expect(sandbox.deliveries()).toEqual([]);
    expect(receiver.received).toHaveLength(1);
  });

  it('over HTTP: GET and DELETE /__sandbox/notifications', async () => {
    await sandbox.completeCheckout(checkout());
    await sandbox.completeCheckout(checkout({ delivery: { delayMs: 5_000 } }));
    const read = await call(sandbox, 'GET', '/__sandbox/notifications');
    const cleared = await call(sandbox, 'DELETE', '/__sandbox/notifications');
    const after = await call(sandbox, 'GET', '/__sandbox/notifications');

    expect(read.json.msg).toBe('Notification deliveries');
    expect(read.json.data.pending).toBe(1);
    expect(read.json.data.deliveries).toEqual([expect.objectContaining({ id: 1, status: 200 })]);
    expect(cleared.json.msg).toBe('Notification deliveries cleared');
    expect(after.json.data).toEqual({ pending: 0, deliveries: [] });
  });
});

describe('charges through the Merchant API', () => {
  function charge(overrides: Record<string, unknown> = {}) {
    return api.post('payment/charge', {
      type: 'PAYMENT',
      order_id: 'Order-C1',
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      customer_token: SEED.customerTokens.success,
      custom_1: 'ride-9',
      notify_url: receiver.url,
      ...overrides,
    });
  }

  it('with a notify_url are notified with the charge outcome', async () => {
    const answer = await charge();
    const [notification] = await receiver.receivedCount(1);

    expect(notification?.contentType).toBe('application/x-www-form-urlencoded');
    expect(notification?.fields).toEqual({
      merchant_id: '1211149',
      order_id: 'Order-C1',
      payment_id: String(answer.json.data.payment_id),
      payhere_amount: '345.67',
      payhere_currency: 'LKR',
      status_code: '2',
      md5sig: answer.json.data.md5sig,
      custom_1: 'ride-9',
      custom_2: '',
      status_message: 'Successfully completed the test tokenized payment.',
      method: 'VISA',
      card_holder_name: 'S Perera',
      card_no: '************1234',
      card_expiry: '12/27',
      recurring: '0',
    });
    expect(notification?.fields.md5sig).toBe(expectedMd5sig(notification!.fields));
  });

  it('declined are notified with status_code -2 on the card that declined', async () => {
    await charge({ customer_token: SEED.customerTokens.declined });
    const [notification] = await receiver.receivedCount(1);

    expect(notification?.fields).toMatchObject({
      status_code: '-2',
      method: 'MASTER',
      card_no: '************4444',
    });
    expect(notification?.fields.md5sig).toBe(expectedMd5sig(notification!.fields));
  });

  it('AUTHORIZE are notified with status_code 3 and the authorization token', async () => {
    const answer = await charge({ type: 'AUTHORIZE' });
    const [notification] = await receiver.receivedCount(1);

    expect(notification?.fields).toMatchObject({
      status_code: '3',
      authorization_token: answer.json.data.authorization_token,
      captured_amount: '0.00',
    });
  });

  it('are answered without waiting for the notification', async () => {
    receiver.answerWith({ delayMs: 250 });
    const answer = await charge();
    const loggedThen = sandbox.deliveries().length;
    await sandbox.deliveriesSettled();

    expect(answer.json.data.status_code).toBe(2);
    expect(loggedThen).toBe(0);
    expect(sandbox.deliveries()).toEqual([expect.objectContaining({ status: 200 })]);
  });

  it('without a notify_url are not notified', async () => {
    await charge({ notify_url: undefined });
    await sandbox.deliveriesSettled();

    expect(sandbox.deliveries()).toEqual([]);
  });

  it('are notified when processed though the answer was lost, and not when refused unprocessed', async () => {
    sandbox.faults.inject('charge', { kind: 'reset' });
    sandbox.faults.inject('charge', { kind: 'status', status: 502, process: true });
    sandbox.faults.inject('charge', { kind: 'status', status: 502 });
    await charge({ order_id: 'Order-C2' }).catch(() => undefined);
    await charge({ order_id: 'Order-C3' });
    await charge({ order_id: 'Order-C4' });
    await sandbox.deliveriesSettled();

    expect(receiver.received.map((notification) => notification.fields.order_id).sort()).toEqual([
      'Order-C2',
      'Order-C3',
    ]);
  });
});
