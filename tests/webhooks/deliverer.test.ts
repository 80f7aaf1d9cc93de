import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

// Metrics on (vitest turns them off), before the deliverer loads: an endpoint disabled is counted.
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
});

import { readFileSync } from 'node:fs';
import { publishMetrics } from '../../lib/log/metrics.ts';
import { DEFERRED_FOR_MS, EVENT_RUN_MS, WebhookDeliverer } from '../../lib/webhooks/deliverer.ts';
import {
  environmentWebhookEndpoints,
  type WebhookEndpoint,
  webhookSource,
} from '../../lib/webhooks/endpoints.ts';
import { webhookStoreFromEnvironment } from '../../lib/webhooks/from-environment.ts';
import { postWebhook } from '../../lib/webhooks/post.ts';
import { injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { captureLogs } from '../helpers/logs.ts';
import { verifyStandardWebhook } from '../helpers/standard-webhooks.ts';
import { newWebhookSecret, putEvent, startReceiver } from '../helpers/webhooks.ts';

/**
 * The deliverer (docs/operator.md "Webhooks") against the file's events table (dynalite) and a
 * receiver on loopback, on an injected clock: each due event posted, signed, retried on the
 * schedule, leased, and its result written under the lease.
 */
const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;

let receiver: Awaited<ReturnType<typeof startReceiver>>;
const secret = newWebhookSecret();
const store = webhookStoreFromEnvironment();
let clock: number;

function deliverer(owner?: string) {
  const source = webhookSource({ MERCHANT_WEBHOOK_URL: receiver.url, MERCHANT_WEBHOOK_SECRET: secret });
  return new WebhookDeliverer({
    store,
    endpoints: environmentWebhookEndpoints(source),
    post: postWebhook,
    now: () => clock,
    ...(owner ? { owner } : {}),
  });
}

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

// Each test a year before the last on the clock: what an earlier test left pending is not due yet.
let era = Date.parse('2040-01-01T00:00:00Z');
beforeEach(async () => {
  era -= 400 * 24 * H;
  // The endpoint's failing streak is the table's, across tests: each begins with none.
  await store.enable('default');
  clock = era;
  receiver.received.length = 0;
  receiver.answer(() => 200);
});

/** Runs until nothing due at the clock is left (each run takes what is due now). */
async function runAt(at: number, worker = deliverer()) {
  clock = at;
  return worker.run();
}

describe('delivering an event', () => {
  it('posts it once, signed as Standard Webhooks says, and marks it delivered', async () => {
    const { id, body } = await putEvent({ publishedAt: clock, endpoints: ['default'] });

    const run = await runAt(clock + 10);
    await runAt(clock + 10 * MIN);

    expect(run).toMatchObject({ events: 1, delivered: 1, failed: 0 });
    expect(receiver.received).toHaveLength(1);
    const [got] = receiver.received;
    expect(got!.body).toBe(body);
    expect(got!.headers['webhook-id']).toBe(id);
    expect(got!.headers['webhook-timestamp']).toBe(String(Math.floor((era + 10) / 1000)));
    expect(
      verifyStandardWebhook(secret, got!.body, got!.headers, Math.floor((era + 10) / 1000)),
    ).toMatchObject({
      id,
      type: 'order.succeeded',
    });
    const event = await store.event(id);
    expect(event!.deliveries.default).toMatchObject({ status: 'delivered', attempts: 1, lastStatus: 200 });
    expect(event!.deliveries.default!.nextAt).toBeUndefined();
  });

  it('delivers nothing for an event published without endpoints, nor before its time', async () => {
    await putEvent({ publishedAt: clock });
    await putEvent({ publishedAt: clock + MIN, endpoints: ['default'] });

    const run = await runAt(clock + 30 * S);

    expect(run.events).toBe(0);
    expect(receiver.received).toHaveLength(0);
  });

  it('gets an event to a receiver down for its first three tries later, once, on the schedule', async () => {
    const { id } = await putEvent({ publishedAt: clock, endpoints: ['default'] });
    receiver.answer((_request, index) => (index < 3 ? 503 : 204));

    await runAt(era);
    await runAt(era + 4 * S); // not due yet: the first retry is 5 s after the failure
    expect(receiver.received).toHaveLength(1);
    await runAt(era + 5 * S);
    await runAt(era + 5 * S + 5 * MIN);
    const failing = await store.event(id);
    expect(failing!.deliveries.default).toMatchObject({
      status: 'pending',
      attempts: 3,
      lastStatus: 503,
      lastError: 'HTTP 503',
      nextAt: era + 5 * S + 5 * MIN + 30 * MIN,
    });
    await runAt(era + 5 * S + 35 * MIN);
    await runAt(era + 30 * H);

    expect(receiver.received.map((got) => got.headers['webhook-id'])).toEqual([id, id, id, id]);
    // Each attempt signed anew at its own time.
    expect(new Set(receiver.received.map((got) => got.headers['webhook-timestamp'])).size).toBe(4);
    expect((await store.event(id))!.deliveries.default).toMatchObject({
      status: 'delivered',
      attempts: 4,
      lastStatus: 204,
    });
  });

  it('retries 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each failure, then marks it failed and leaves the queue', async () => {
    const { id } = await putEvent({ publishedAt: clock, endpoints: ['default'] });
    receiver.answer(() => 500);
    const delays = [5 * S, 5 * MIN, 30 * MIN, 2 * H, 5 * H, 10 * H, 10 * H];
    const attemptsAt = [era];
    for (const delay of delays) attemptsAt.push(attemptsAt.at(-1)! + delay);

    for (const [index, at] of attemptsAt.entries()) {
      await runAt(at - 1);
      expect(receiver.received).toHaveLength(index);
      await runAt(at);
      expect(receiver.received).toHaveLength(index + 1);
    }
    await runAt(era + 40 * H);

    expect(receiver.received).toHaveLength(8);
    const event = await store.event(id);
    expect(event!.deliveries.default).toMatchObject({ status: 'failed', attempts: 8, lastStatus: 500 });
    expect((await store.due(era + 100 * H, 100)).keys).not.toContain(`event#${id}`);
  });
});

describe('an endpoint failing for 24 hours', () => {
  it('is disabled, counted for its alarm, and its deliveries marked disabled, not attempted', async () => {
    const lines = captureLogs('warn');
    // What earlier tests counted (the schedule's last failure disabled the endpoint there too).
    publishMetrics('earlier');
    lines.length = 0;
    receiver.answer(() => 500);
    const first = await putEvent({ publishedAt: clock, endpoints: ['default'] });
    // Failing from now on: every attempt of the first event fails, until 24 h have passed.
    const schedule = [0, 5 * S, 5 * MIN, 30 * MIN, 2 * H, 5 * H, 10 * H];
    let at = era;
    for (const delay of schedule) {
      at += delay;
      await runAt(at);
    }
    const before = (await runAt(at)).disabled;
    expect(before).toEqual([]);
    // A second event, published 24 h after the first failure: its failure disables the endpoint.
    const second = await putEvent({ publishedAt: era + 24 * H, endpoints: ['default'] });
    const run = await runAt(era + 24 * H);
    const third = await putEvent({ publishedAt: era + 25 * H, endpoints: ['default'] });
    const requests = receiver.received.length;
    await runAt(era + 25 * H);
    publishMetrics('deliverWebhooks');

    expect(run.disabled).toEqual(['default']);
    expect(receiver.received).toHaveLength(requests);
    expect((await store.event(second.id))!.deliveries.default).toMatchObject({
      status: 'disabled',
      attempts: 1,
    });
    expect((await store.event(third.id))!.deliveries.default).toMatchObject({
      status: 'disabled',
      attempts: 0,
    });
    // The first event's next attempt (10 h later) is not made either.
    await runAt(era + 40 * H);
    expect(receiver.received).toHaveLength(requests);
    expect((await store.event(first.id))!.deliveries.default!.status).toBe('disabled');
    const emf = lines.find((line) => '_aws' in line && line.route === 'deliverWebhooks');
    expect(emf?.WebhookEndpointDisabled).toBe(1);
    expect(lines.some((line) => line.message.startsWith('a webhook endpoint was disabled'))).toBe(true);
  });
});

describe('an endpoint’s failures a quiet day apart', () => {
  it('are not one streak: the later failure begins a new one, and the endpoint stays enabled', async () => {
    // Event A fails every attempt; B, delivered 20 h in, ends the streak; A's last attempt
    // (27 h 35 min in) begins another; then nothing is published for 25 h.
    const first = await putEvent({ publishedAt: clock, endpoints: ['default'] });
    const attemptsAt = [0, 5 * S, 5 * MIN, 30 * MIN, 2 * H, 5 * H, 10 * H, 10 * H].map(
      (_, i, delays) => era + delays.slice(0, i + 1).reduce((a, b) => a + b, 0),
    );
    receiver.answer(() => 500);
    for (const at of attemptsAt.slice(0, 7)) await runAt(at);
    receiver.answer(() => 200);
    await putEvent({ publishedAt: era + 20 * H, endpoints: ['default'] });
    await runAt(era + 20 * H);
    receiver.answer(() => 500);
    await runAt(attemptsAt[7]!);
    expect((await store.event(first.id))!.deliveries.default).toMatchObject({
      status: 'failed',
      attempts: 8,
    });

    // Act: an event a quiet day later fails once (a 503 its receiver answers now and then).
    const later = attemptsAt[7]! + 25 * H;
    const third = await putEvent({ publishedAt: later, endpoints: ['default'] });
    const run = await runAt(later);
    receiver.answer(() => 200);
    await runAt(later + 5 * S);

    // Assess: not disabled; its retry delivered it.
    expect(run.disabled).toEqual([]);
    expect((await store.event(third.id))!.deliveries.default).toMatchObject({
      status: 'delivered',
      attempts: 2,
    });
  });
});

describe('a run', () => {
  /** The deliverer's timeout as deployed (serverless.yml), in ms: what Lambda gives each run. */
  const deployedRunMs = () => {
    const yml = readFileSync(new URL('../../serverless.yml', import.meta.url), 'utf8');
    const timeout = /\n {2}deliverWebhooks:\n(?: {4}.*\n)*? {4}timeout: (\d+)\n/.exec(yml)?.[1];
    expect(timeout).toBeDefined();
    return Number(timeout) * S;
  };

  it('given the time Lambda gives the deployed function, posts the events due', async () => {
    await putEvent({ publishedAt: clock, endpoints: ['default'] });
    clock += 10;

    const run = await deliverer().run(clock + deployedRunMs());

    expect(run).toMatchObject({ events: 1, delivered: 1 });
    expect(receiver.received).toHaveLength(1);
  });

  it('takes no event it could not finish before its end: the event stays due for the next run', async () => {
    await putEvent({ publishedAt: clock, endpoints: ['default'] });
    clock += 10;

    const late = await deliverer().run(clock + EVENT_RUN_MS - 1);
    const next = await deliverer().run(clock + EVENT_RUN_MS);

    expect(late).toMatchObject({ events: 0, skipped: 0 });
    expect(next).toMatchObject({ events: 1, delivered: 1 });
    expect(receiver.received).toHaveLength(1);
  });
});

describe('leases', () => {
  it('leave an event another deliverer holds alone until its lease ends', async () => {
    const { id } = await putEvent({ publishedAt: clock, endpoints: ['default'] });
    expect(await store.claim(`event#${id}`, 'someone-else', clock, clock + 60 * S)).toBeDefined();

    const held = await runAt(clock + 30 * S);
    expect(held).toMatchObject({ events: 0, skipped: 1 });
    expect(receiver.received).toHaveLength(0);

    await runAt(era + 61 * S);
    expect(receiver.received).toHaveLength(1);
  });

  it('let two deliverers running at once post an event once', async () => {
    await putEvent({ publishedAt: clock, endpoints: ['default'] });
    let release!: () => void;
    const held = new Promise<number>((resolve) => {
      release = () => resolve(200);
    });
    receiver.answer(() => held);

    const first = deliverer('first').run();
    while (receiver.received.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const second = await deliverer('second').run();
    release();
    await first;

    expect(second).toMatchObject({ events: 0, skipped: 1 });
    expect(receiver.received).toHaveLength(1);
  });
});

describe('a result that cannot be written', () => {
  it('leaves the event due: it is delivered again once its lease ends, not lost', async () => {
    const { id } = await putEvent({ publishedAt: clock, endpoints: ['default'] });
    // The receiver takes the event, then the table fails every try of the result's write.
    receiver.answer(async () => {
      await injectDynamoDbFault({
        operation: 'UpdateItem',
        table: process.env.EVENTS_TABLE!,
        keyPrefix: `event#${id}`,
        fault: { kind: 'status500' },
        times: 3,
      });
      return 200;
    });

    await runAt(era);
    expect(receiver.received).toHaveLength(1);
    expect((await store.event(id))!.deliveries.default!.status).toBe('pending');
    receiver.answer(() => 200);
    await runAt(era + 30 * S); // leased still
    expect(receiver.received).toHaveLength(1);
    await runAt(era + 61 * S);

    expect(receiver.received.map((got) => got.headers['webhook-id'])).toEqual([id, id]);
    expect((await store.event(id))!.deliveries.default).toMatchObject({ status: 'delivered', attempts: 1 });
  });
});

describe('an endpoint that gives no answer', () => {
  it('holds up no other endpoint’s events: after its first silence in a run, its deliveries wait for the next run', async () => {
    // Prepare: ten events for the merchant's receiver and for an endpoint that never answers.
    await store.enable('silent');
    const { endpoint } = webhookSource({
      MERCHANT_WEBHOOK_URL: receiver.url,
      MERCHANT_WEBHOOK_SECRET: secret,
    }) as {
      endpoint: WebhookEndpoint;
    };
    const silent: WebhookEndpoint = {
      id: 'silent',
      url: 'https://silent.example.invalid/hook',
      key: endpoint.key,
    };
    let silentAttempts = 0;
    const worker = new WebhookDeliverer({
      store,
      endpoints: {
        get: async () =>
          new Map([
            [endpoint.id, endpoint],
            [silent.id, silent],
          ]),
      },
      // Each attempt at the silent endpoint is DELIVERY_TIMEOUT_MS spent, for every event waiting on it.
      post: async (url, headers, body) => {
        if (url !== silent.url) return postWebhook(url, headers, body);
        silentAttempts++;
        return { delivered: false, error: 'no answer within 10 s', timedOut: true };
      },
      now: () => clock,
    });
    const ids: string[] = [];
    for (let index = 0; index < 10; index++)
      ids.push((await putEvent({ publishedAt: clock, endpoints: ['default', 'silent'] })).id);

    // Act: a run; an event published a second later and a run for it; the run a minute later.
    const first = await worker.run();
    const triedInFirst = silentAttempts;
    const deferredDeliveries = async () =>
      (await Promise.all(ids.map((id) => store.event(id)))).filter(
        (event) => event!.deliveries.silent!.attempts === 0,
      );
    const waitingAfterFirst = await deferredDeliveries();
    const published = era + S;
    const newer = await putEvent({ publishedAt: published, endpoints: ['default'] });
    clock = published;
    const dueThen = (await store.due(clock, 100)).keys;
    const forNewer = await worker.run();
    clock = era + DEFERRED_FOR_MS;
    const minuteLater = await worker.run();

    // Assess: every event reached the receiver in the first run. The silent endpoint was tried
    // only by the events the run had taken before its first silence (how many is the timing of
    // the run's parallel takes).
    expect(receiver.received.map((got) => got.headers['webhook-id']).sort()).toEqual(
      [...ids, newer.id].sort(),
    );
    expect(first).toMatchObject({ events: 10, delivered: 10, failed: triedInFirst });
    expect(triedInFirst).toBeGreaterThan(0);
    expect(triedInFirst).toBeLessThan(10);
    expect(first.deferred).toBe(10 - triedInFirst);
    // The others wait a run's interval, no attempt counted: an event published since is before them.
    expect(waitingAfterFirst).toHaveLength(first.deferred);
    for (const event of waitingAfterFirst)
      expect(event!.deliveries.silent).toMatchObject({ status: 'pending', nextAt: era + DEFERRED_FOR_MS });
    expect(dueThen).toEqual([`event#${newer.id}`]);
    expect(forNewer).toMatchObject({ events: 1, delivered: 1, failed: 0, deferred: 0 });
    // A minute later the endpoint is tried again, by the first events the run takes.
    expect(minuteLater.events).toBe(10);
    expect(minuteLater.failed).toBeGreaterThan(0);
    expect(minuteLater.deferred).toBe(10 - minuteLater.failed);
    expect(silentAttempts).toBe(triedInFirst + minuteLater.failed);
  });
});
