import { describe, expect, it } from 'vitest';
import { ScanCommand } from '../../lib/dynamodb/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { localClient } from '../idempotency/fixtures.ts';

// A loaded test machine: the list is kept in the table, and read from it, whatever else runs.
process.env.STATE_TABLE_TIMEOUT_MS = '3000';
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

const ids = {
  active: String(SEED.subscriptions.active),
  failed: String(SEED.subscriptions.failed),
  completed: String(SEED.subscriptions.completed),
  cancelled: String(SEED.subscriptions.cancelled),
  unknown: String(SEED.subscriptions.unknown),
};

describe('listSubscriptions', () => {
  it('lists every subscription with the count in msg', async () => {
    const answer = await call('listSubscriptions');

    expect(answer.statusCode).toBe(200);
    expect(answer.body.status).toBe(1);
    // Without limit or cursor, every subscription as an array, as the route answered before it paged.
    expect(Array.isArray(answer.body.data)).toBe(true);
    expect(answer.body.msg).toBe(`Found ${answer.body.data.length} subscriptions`);
    expect(answer.body.data.map((s: { status: string }) => s.status)).toEqual(
      expect.arrayContaining(['ACTIVE', 'FAILED', 'COMPLETED', 'CANCELLED']),
    );
  });
});

/** The keys of the snapshots of the list the state table holds (lib/reads/subscription-pages.ts). */
async function snapshotKeys(): Promise<string[]> {
  await backgroundSettled();
  const { Items = [] } = await localClient().send(
    new ScanCommand({
      TableName: process.env.STATE_TABLE!,
      FilterExpression: 'begins_with(pk, :snapshot)',
      ExpressionAttributeValues: { ':snapshot': { S: 'read#subscriptions@' } },
    }),
  );
  return Items.map((item) => item.pk!.S!);
}

describe('listSubscriptions, a page at a time (docs/contract.md "Subscription lists")', () => {
  it('keeps no snapshot of a list one page holds (the shared reads keep it whole), and one for a list of pages', async () => {
    const whole = await call('listSubscriptions', { query: { limit: '100' } });
    const kept = await snapshotKeys();
    const first = await call('listSubscriptions', { query: { limit: '3' } });
    const paged = await snapshotKeys();
    const second = await call('listSubscriptions', {
      query: { limit: '3', cursor: first.body.data.next_cursor },
    });

    expect(whole.body.data.next_cursor).toBeNull();
    expect(kept).toEqual([]);
    expect(first.body.data.subscriptions).toHaveLength(3);
    // The index and its one part: the next page is read from them.
    expect(paged).toHaveLength(2);
    expect(second.body.data.next_cursor).toBeNull();
    expect(
      [...first.body.data.subscriptions, ...second.body.data.subscriptions].map(
        (s: { subscription_id: number }) => s.subscription_id,
      ),
    ).toEqual(whole.body.data.subscriptions.map((s: { subscription_id: number }) => s.subscription_id));
    expect(sandbox.counters().listSubscriptions).toBe(1);
  });
});

describe('getSubscription', () => {
  it('returns one subscription as an object', async () => {
    const answer = await call('getSubscription', { id: ids.active });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data).toMatchObject({ subscription_id: SEED.subscriptions.active, status: 'ACTIVE' });
    expect(Array.isArray(answer.body.data)).toBe(false);
  });

  it('answers 404 for an unknown subscription', async () => {
    const answer = await call('getSubscription', { id: ids.unknown });

    expect(answer.statusCode).toBe(404);
    expect(answer.body.data.code).toBe('not_found');
  });

  it('falls back to listing and filtering when the one-subscription endpoint answers 404', async () => {
    await call('getSubscription', { id: ids.active }); // this container's token first: counters show only the fallback
    sandbox.resetCounters();
    sandbox.faults.inject('getSubscription', {
      kind: 'status',
      status: 404,
      body: 'Not Found',
      contentType: 'text/plain',
    });

    const answer = await call('getSubscription', { id: ids.failed });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data).toMatchObject({ subscription_id: SEED.subscriptions.failed, status: 'FAILED' });
    expect(sandbox.counters()).toMatchObject({ getSubscription: 1, listSubscriptions: 1 });
  });

  it('rejects an id that is not digits without calling the gateway', async () => {
    const answer = await call('getSubscription', { id: '42abc' });

    expect(answer.statusCode).toBe(400);
    expect(answer.body.data.errors).toEqual([
      { path: 'path.id', message: 'must be a subscription id (digits only)' },
    ]);
    expect(sandbox.counters().getSubscription ?? 0).toBe(0);
  });
});

describe('subscriptionPayments', () => {
  it('lists the payments of a subscription with the count in msg', async () => {
    const answer = await call('subscriptionPayments', { id: ids.active });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.msg).toBe('Found 2 payments');
    expect(answer.body.data).toHaveLength(2);
  });

  it('answers 404 for an unknown subscription', async () => {
    const answer = await call('subscriptionPayments', { id: ids.unknown });

    expect(answer.statusCode).toBe(404);
  });
});

describe('retrySubscription', () => {
  it('retries a failed subscription once, then refuses with 409', async () => {
    const first = await call('retrySubscription', { id: ids.failed });
    const second = await call('retrySubscription', { id: ids.failed });
    const after = await call('getSubscription', { id: ids.failed });

    expect(first.statusCode).toBe(200);
    expect(first.body).toEqual({ status: 1, msg: 'Recurring payment charged successfully', data: null });
    expect(second.statusCode).toBe(409);
    expect(second.body).toMatchObject({
      status: -1,
      msg: 'Subscription is not eligible for retrying',
      data: { code: 'conflict' },
    });
    expect(after.body.data.status).toBe('ACTIVE');
  });

  it('answers 404 for an unknown subscription', async () => {
    const answer = await call('retrySubscription', { id: ids.unknown });

    expect(answer.statusCode).toBe(404);
  });
});

describe('cancelSubscription', () => {
  it('cancels an active subscription, then refuses a second cancel with 409', async () => {
    const first = await call('cancelSubscription', { id: ids.active });
    const second = await call('cancelSubscription', { id: ids.active });

    expect(first.statusCode).toBe(200);
    expect(first.body).toEqual({ status: 1, msg: 'Successfully cancelled the subscription', data: null });
    expect(second.statusCode).toBe(409);
    expect(second.body.msg).toBe('Subscription is already cancelled.');
  });

  it('refuses to cancel a completed subscription with 409', async () => {
    const answer = await call('cancelSubscription', { id: ids.completed });

    expect(answer.statusCode).toBe(409);
    expect(answer.body.msg).toBe('Subscription is already completed.');
  });

  it('answers 404 for an unknown subscription', async () => {
    const answer = await call('cancelSubscription', { id: ids.unknown });

    expect(answer.statusCode).toBe(404);
  });
});
