import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDeliverer } from '../../lib/webhooks/deliverer.ts';
import { environmentWebhookEndpoints, webhookSource } from '../../lib/webhooks/endpoints.ts';
import { webhookStoreFromEnvironment } from '../../lib/webhooks/from-environment.ts';
import { postWebhook } from '../../lib/webhooks/post.ts';
import { captureLogs } from '../helpers/logs.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { verifyStandardWebhook } from '../helpers/standard-webhooks.ts';
import { newWebhookSecret, putEvent, startReceiver } from '../helpers/webhooks.ts';

/**
 * Issue 36's property, its delivery half: over random interleavings of deliverer runs (one, or two
 * at once), a receiver that fails some attempts, and deliverers that die after posting (their
 * lease then runs out), every event published reaches the merchant's receiver, signed, and the
 * events it took (each once, by its `webhook-id`), per object in sequence order, are exactly the
 * events published: the same bodies, numbered 1, 2, ... without a gap. With
 * tests/events/replay.ts (the events published replay to the ledger's state, checked by the
 * evidence property over requests, notifications and settle runs), what the merchant receives
 * replays to the ledger's state. On an injected clock, against the file's events table.
 */
const S = 1_000;
const MIN = 60 * S;
const H = 60 * MIN;
const CASES = propertyRuns(40);

let receiver: Awaited<ReturnType<typeof startReceiver>>;
const secret = newWebhookSecret();
const store = webhookStoreFromEnvironment();
let clock = 0;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(() => receiver.close());

type Step = { kind: 'run' | 'two' | 'die'; gapMs: number };

const step = fc.record({
  kind: fc.constantFrom<Step['kind']>('run', 'run', 'two', 'die'),
  // From a moment to past the longest retry: some runs find nothing due, some several.
  gapMs: fc.oneof(fc.integer({ min: 0, max: 10 * S }), fc.integer({ min: 10 * S, max: 3 * H })),
});

const scenario = fc.record({
  /** Events per object (each object's numbered 1, 2, ...). */
  objects: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 3 }),
  /**
   * The receiver's answers to its first requests; 2xx after them. At most five failures in all,
   * so no event runs out of its eight attempts and no 24 h failing streak disables the endpoint.
   */
  answers: fc.array(fc.constantFrom(200, 204, 500, 503, 429, 410), { maxLength: 5 }),
  steps: fc.array(step, { minLength: 1, maxLength: 12 }),
});

function deliverer(owner: string, storeOf: typeof store = store) {
  const source = webhookSource({ MERCHANT_WEBHOOK_URL: receiver.url, MERCHANT_WEBHOOK_SECRET: secret });
  return new WebhookDeliverer({
    store: storeOf,
    endpoints: environmentWebhookEndpoints(source),
    post: postWebhook,
    now: () => clock,
    owner,
  });
}

/**
 * A deliverer that dies once it has posted: its posts reach the receiver, its results are never
 * written (the write of each is where its Lambda ends), and its leases hold the events until they
 * run out.
 */
function dying(owner: string) {
  const dies = new Proxy(store, {
    get(target, property) {
      if (property === 'release') return async () => Promise.reject(new Error('the function died'));
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return deliverer(owner, dies);
}

// Each case a year before the last on the clock: what an earlier case left is not due in this one.
let era = Date.parse('2040-01-01T00:00:00Z');

describe('webhook deliveries under failures, overlaps and deaths', () => {
  it('bring the receiver every published event, each object’s in sequence without a gap, signed', async () => {
    captureLogs('silent');
    await fc.assert(
      fc.asyncProperty(scenario, async ({ objects, answers, steps }) => {
        era -= 400 * 24 * H;
        clock = era;
        await store.enable('default');
        receiver.received.length = 0;
        receiver.answer((_request, index) => answers[index] ?? 204);
        // Published as the relay publishes: each object's events in order, at once.
        const published = new Map<string, Map<number, string>>();
        const ids: string[] = [];
        const tag = era.toString(36);
        for (const [o, count] of objects.entries()) {
          const objectId = `Order-${tag}-${o}`;
          const bodies = new Map<number, string>();
          for (let sequence = 1; sequence <= count; sequence++) {
            const { id, body } = await putEvent({
              objectId,
              sequence,
              publishedAt: era + o * 10 + sequence,
              endpoints: ['default'],
            });
            bodies.set(sequence, body);
            ids.push(id);
          }
          published.set(objectId, bodies);
        }

        let dead = 0;
        for (const [i, { kind, gapMs }] of steps.entries()) {
          clock += gapMs;
          if (kind === 'run') await deliverer(`a${i}`).run();
          if (kind === 'two') await Promise.all([deliverer(`a${i}`).run(), deliverer(`b${i}`).run()]);
          if (kind === 'die') dead += (await dying(`dead${i}`).run()).events;
        }
        // Then the deliverers go on, past every retry, until nothing is due.
        for (let late = 0; late < 12; late++) {
          clock += 5 * H;
          await deliverer(`late${late}`).run();
        }

        const taken = receiver.received.filter((_, index) => (answers[index] ?? 204) < 300);
        const byId = new Map<string, string>();
        for (const got of taken) {
          const sentAt = Number(got.headers['webhook-timestamp']);
          expect(verifyStandardWebhook(secret, got.body, got.headers, sentAt)).toBeTruthy();
          const id = got.headers['webhook-id']!;
          // A delivery taken twice (a dead deliverer's, then its retry's) is the same event.
          expect(byId.get(id) ?? got.body).toBe(got.body);
          byId.set(id, got.body);
        }
        const receivedByObject = new Map<string, Map<number, string>>();
        for (const body of byId.values()) {
          const event = JSON.parse(body) as { object: { id: string }; sequence: number };
          const bodies = receivedByObject.get(event.object.id) ?? new Map<number, string>();
          bodies.set(event.sequence, body);
          receivedByObject.set(event.object.id, bodies);
        }
        const sorted = (bodies: Map<number, string>) => [...bodies.entries()].sort(([a], [b]) => a - b);
        expect([...receivedByObject.keys()].sort()).toEqual([...published.keys()].sort());
        for (const [objectId, bodies] of published)
          expect(sorted(receivedByObject.get(objectId)!)).toEqual(sorted(bodies));
        // And the table says so: each delivered, none left due.
        for (const id of ids)
          expect((await store.event(id))?.deliveries.default).toMatchObject({ status: 'delivered' });
        // Only a death (its post taken, its result never written) makes a second delivery of an event.
        expect(taken.length).toBeLessThanOrEqual(byId.size + dead);
      }),
      { numRuns: CASES },
    );
  }, 600_000);
});
