import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type ApiClient, accessToken, apiClient } from './helpers.ts';

const ids = SEED.subscriptions;
let sandbox: Sandbox;
let api: ApiClient;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
});
afterAll(() => sandbox.close());
beforeEach(async () => {
  sandbox.reset();
  api = apiClient(sandbox, await accessToken(sandbox));
});

const notFound = { status: -1, msg: 'Subscription not found', data: null };

describe('subscriptions', () => {
  it('lists every seeded subscription, one per state', async () => {
    const answer = await api.get('subscription');

    expect(answer.json.status).toBe(1);
    expect(answer.json.msg).toBe('Found 4 subscriptions');
    expect(
      answer.json.data.map((s: { subscription_id: number; status: string }) => [s.subscription_id, s.status]),
    ).toEqual([
      [ids.active, 'ACTIVE'],
      [ids.failed, 'FAILED'],
      [ids.completed, 'COMPLETED'],
      [ids.cancelled, 'CANCELLED'],
    ]);
  });

  it('returns one subscription as an object with the record fields', async () => {
    const answer = await api.get(`subscription/${ids.active}`);

    expect(answer.json.msg).toBe('Found subscription');
    expect(Object.keys(answer.json.data)).toEqual([
      'subscription_id',
      'order_id',
      'date',
      'description',
      'recurring',
      'status',
      'amount',
      'currency',
      'customer',
      'amount_detail',
      'payment_method',
      'items',
    ]);
    expect(answer.json.data.items).toEqual([
      { name: 'Gym membership - monthly', quantity: 1, currency: 'LKR', unit_price: 2500, total_price: 2500 },
    ]);
  });

  it('returns the payments of a subscription', async () => {
    const answer = await api.get(`subscription/${ids.active}/payments`);

    expect(answer.json.msg).toBe('Found 2 payments');
    expect(answer.json.data).toHaveLength(2);
    expect(answer.json.data[0]).toHaveProperty('payment_id');
  });

  it('answers "Subscription not found" for an unknown id on every subscription endpoint', async () => {
    const answers = [
      await api.get(`subscription/${ids.unknown}`),
      await api.get(`subscription/${ids.unknown}/payments`),
      await api.post('subscription/retry', { subscription_id: ids.unknown }),
      await api.post('subscription/cancel', { subscription_id: ids.unknown }),
    ];

    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual(notFound);
    }
  });

  it('rejects a subscription id that is not a number', async () => {
    const path = await api.get('subscription/abc');
    const body = await api.post('subscription/cancel', { subscription_id: String(ids.active) });

    expect(path.status).toBe(400);
    expect(path.json.msg).toBe('Invalid request parameter: subscription_id');
    expect(body.status).toBe(400);
    expect(body.json.msg).toBe('Invalid request parameter: subscription_id');
  });

  it('retries a FAILED subscription once: ACTIVE, one more payment, then not eligible', async () => {
    const before = await api.get(`subscription/${ids.failed}/payments`);
    const retried = await api.post('subscription/retry', { subscription_id: ids.failed });
    const after = await api.get(`subscription/${ids.failed}/payments`);
    const status = await api.get(`subscription/${ids.failed}`);
    const again = await api.post('subscription/retry', { subscription_id: ids.failed });

    expect(retried.json).toEqual({ status: 1, msg: 'Recurring payment charged successfully', data: null });
    expect(after.json.data).toHaveLength(before.json.data.length + 1);
    expect(status.json.data.status).toBe('ACTIVE');
    expect(again.json).toEqual({ status: -1, msg: 'Subscription is not eligible for retrying', data: null });
  });

  it.each([ids.active, ids.completed, ids.cancelled])(
    'does not retry subscription %i, which is not FAILED',
    async (id) => {
      const answer = await api.post('subscription/retry', { subscription_id: id });

      expect(answer.json.msg).toBe('Subscription is not eligible for retrying');
    },
  );

  it('cancels an ACTIVE subscription once', async () => {
    const cancelled = await api.post('subscription/cancel', { subscription_id: ids.active });
    const again = await api.post('subscription/cancel', { subscription_id: ids.active });
    const status = await api.get(`subscription/${ids.active}`);

    expect(cancelled.json).toEqual({ status: 1, msg: 'Successfully cancelled the subscription', data: null });
    expect(again.json).toEqual({ status: -1, msg: 'Subscription is already cancelled.', data: null });
    expect(status.json.data.status).toBe('CANCELLED');
  });

  it('cancels a FAILED subscription, which then cannot be retried', async () => {
    await api.post('subscription/cancel', { subscription_id: ids.failed });
    const retry = await api.post('subscription/retry', { subscription_id: ids.failed });

    expect(retry.json.msg).toBe('Subscription is not eligible for retrying');
  });

  it('refuses to cancel a COMPLETED subscription', async () => {
    const answer = await api.post('subscription/cancel', { subscription_id: ids.completed });

    expect(answer.json).toEqual({ status: -1, msg: 'Subscription is already completed.', data: null });
  });

  it('rejects a misspelled field', async () => {
    const answer = await api.post('subscription/cancel', { subscriptionId: ids.active });

    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ status: -1, msg: 'Invalid request parameter: subscriptionId', data: null });
  });
});
