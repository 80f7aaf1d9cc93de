// PayHere's clock off the sandbox's: the dates PayHere writes move with it, while token expiry and
// the rate-limit window follow the time that really elapsed.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type ApiClient, accessToken, apiClient, call, manualClock } from './helpers.ts';
import { checkoutRequest } from './signing.ts';

// 10:00:00 in Sri Lanka (UTC+05:30).
const clock = manualClock(Date.UTC(2025, 0, 15, 4, 30, 0));
let sandbox: Sandbox;
let api: ApiClient;

beforeAll(async () => {
  sandbox = await startSandbox({
    now: clock.now,
    clockOffsetMs: -3_000,
    rateLimit: { limit: 3, windowMs: 10_000 },
    tokenLifetimeSeconds: 60,
  });
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  sandbox.reset();
  clock.advance(60_000); // a fresh rate-limit window for every test
  api = apiClient(sandbox, await accessToken(sandbox));
});

function charge(orderId: string) {
  return api.post('payment/charge', {
    type: 'PAYMENT',
    order_id: orderId,
    items: 'Clock test',
    currency: 'LKR',
    amount: 10,
    customer_token: SEED.customerTokens.success,
  });
}

async function dateOf(orderId: string): Promise<string> {
  return (await api.search(orderId)).json.data[0].date;
}

/** The sandbox's clock as PayHere would write it with no offset. */
function sriLanka(ms: number): string {
  return new Date(ms + 5.5 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
}

describe("PayHere's clock off the sandbox's", () => {
  it("dates a new payment by PayHere's clock, 3 s behind", async () => {
    await charge('OrderC1');

    expect(await dateOf('OrderC1')).toBe(sriLanka(clock.now() - 3_000));
    expect(sandbox.clock()).toEqual({
      now: clock.now(),
      clockOffsetMs: -3_000,
      payhereDate: sriLanka(clock.now() - 3_000),
    });
  });

  it('moves from now on when set at runtime, and reset() restores the option', async () => {
    sandbox.setClockOffset(90_000);
    await charge('OrderC2');
    const ahead = await dateOf('OrderC2');
    sandbox.reset();

    expect(ahead).toBe(sriLanka(clock.now() + 90_000));
    expect(sandbox.clock().clockOffsetMs).toBe(-3_000);
    expect(() => sandbox.setClockOffset(1.5)).toThrow(RangeError);
  });

  it('dates what a checkout creates too: the subscription and its first payment', async () => {
    sandbox.setClockOffset(-60_000);
    await sandbox.completeCheckout(
      checkoutRequest('http://127.0.0.1:9/notify', {
        kind: 'recurring',
        order_id: 'OrderC3',
        recurrence: '1 Month',
        duration: '1 Year',
      }),
    );
    const subscriptions = (await api.get('subscription')).json.data as Array<{
      order_id: string;
      date: string;
    }>;

    expect(subscriptions.find((s) => s.order_id === 'OrderC3')?.date).toBe(sriLanka(clock.now() - 60_000));
    expect(await dateOf('OrderC3')).toBe(sriLanka(clock.now() - 60_000));
  });

  it('leaves token expiry to elapsed time', async () => {
    sandbox.setClockOffset(3_600_000); // an hour ahead: the 60 s token would be long expired by it
    const stillValid = await api.get('subscription');
    clock.advance(60_000);
    const expired = await api.get('subscription');

    expect(stillValid.status).toBe(200);
    expect(expired.json.error).toBe('invalid_token');
  });

  it('leaves the rate-limit window to elapsed time', async () => {
    sandbox.setClockOffset(-3_600_000); // an hour behind: the window must not stretch with it
    await api.get('subscription');
    await api.get('subscription');
    const limited = await api.get('subscription');
    clock.advance(10_001);
    const admitted = await api.get('subscription');

    expect(limited.status).toBe(429);
    expect(admitted.status).toBe(200);
  });

  it('over HTTP: GET and POST /__sandbox/clock', async () => {
    const before = await call(sandbox, 'GET', '/__sandbox/clock');
    const set = await call(sandbox, 'POST', '/__sandbox/clock', { json: { clockOffsetMs: 5_000 } });
    await charge('OrderC4');
    const refused = [
      await call(sandbox, 'POST', '/__sandbox/clock', { json: { clockOffsetMs: '5000' } }),
      await call(sandbox, 'POST', '/__sandbox/clock', { json: { offset: 5_000 } }),
      await call(sandbox, 'POST', '/__sandbox/clock'),
    ];

    expect(before.json).toEqual({
      status: 1,
      msg: 'Clock',
      data: { now: clock.now(), clockOffsetMs: -3_000, payhereDate: sriLanka(clock.now() - 3_000) },
    });
    expect(set.json.data).toEqual({
      now: clock.now(),
      clockOffsetMs: 5_000,
      payhereDate: sriLanka(clock.now() + 5_000),
    });
    expect(await dateOf('OrderC4')).toBe(sriLanka(clock.now() + 5_000));
    expect(refused.map((answer) => [answer.status, answer.json.msg])).toEqual([
      [400, 'Invalid request parameter: clockOffsetMs'],
      [400, 'Invalid request parameter: offset'],
      [400, 'Invalid request parameter: clockOffsetMs'],
    ]);
    expect(sandbox.clock().clockOffsetMs).toBe(5_000);
  });
});
