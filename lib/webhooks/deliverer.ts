import { randomUUID } from 'node:crypto';
import type { Item } from '../dynamodb/index.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import type { WebhookEndpoint, WebhookEndpoints } from './endpoints.ts';
import { DELIVERY_TIMEOUT_MS, type PostWebhook } from './post.ts';
import { afterFailure, RETRY_SCHEDULE_MS } from './schedule.ts';
import { webhookHeaders } from './signature.ts';
import {
  type Delivery,
  dueAtOf,
  type EndpointState,
  eventKey,
  type WebhookEvent,
  type WebhookStore,
} from './store.ts';

/** A lease outlives an event's attempts (each endpoint's at most DELIVERY_TIMEOUT_MS, all at once). */
export const LEASE_MS = 60_000;
/**
 * What a run keeps for an event it takes: its attempts (all at once, DELIVERY_TIMEOUT_MS at most)
 * and the writes of their results. A run takes no event with less than this left before its
 * deadline: one cut short by the Lambda's end waits out its lease and is posted again.
 */
export const EVENT_RUN_MS = DELIVERY_TIMEOUT_MS + 5_000;
/**
 * How long a delivery to an endpoint that gave no answer in a run waits for the next try: a
 * scheduled run's interval (serverless.yml, `rate(1 minute)`). Due later than events published
 * since, it leaves the front of the `due` index to them.
 */
export const DEFERRED_FOR_MS = 60_000;
/** An endpoint failing every attempt this long is disabled. */
export const DISABLE_AFTER_MS = 24 * 3_600_000;
/**
 * Failures further apart than this are not one streak: nothing was tried between them. The longest
 * wait of a delivery's retries, and an hour for the runs that take it.
 */
export const STREAK_GAP_MS = Math.max(...RETRY_SCHEDULE_MS) + 3_600_000;
/** Due events read per query, and posted at once. */
const PAGE = 50;
const AT_ONCE = 4;

export interface WebhookDelivererOptions {
  store: WebhookStore;
  endpoints: WebhookEndpoints;
  post: PostWebhook;
  now?: () => number;
  /** Each deliverer's own lease owner by default; tests name two. */
  owner?: string;
  leaseMs?: number;
}

/** What a run did: events taken, attempts delivered, failed, given up, endpoints disabled. */
export interface DeliveryRun {
  events: number;
  delivered: number;
  failed: number;
  gaveUp: number;
  disabled: string[];
  /**
   * Deliveries not attempted because their endpoint gave no answer earlier in the run: due again
   * DEFERRED_FOR_MS later, their attempts as they were.
   */
  deferred: number;
  /** Due events another deliverer held, or whose result could not be written: a later run has them. */
  skipped: number;
}

/**
 * Delivers the events due (docs/operator.md "Webhooks"): each due event is taken under a lease,
 * posted to each endpoint whose delivery is due, and its results written under the lease; an
 * event leaves the `due` index only with its results, so a deliverer that dies mid-way loses
 * nothing (the next takes the event once the lease has run out: at least once). Never a PayHere
 * call, never inside an app request's answer.
 */
export class WebhookDeliverer {
  readonly #store: WebhookStore;
  readonly #endpoints: WebhookEndpoints;
  readonly #post: PostWebhook;
  readonly #now: () => number;
  readonly #owner: string;
  readonly #leaseMs: number;

  constructor(options: WebhookDelivererOptions) {
    this.#store = options.store;
    this.#endpoints = options.endpoints;
    this.#post = options.post;
    this.#now = options.now ?? Date.now;
    this.#owner = options.owner ?? randomUUID();
    this.#leaseMs = options.leaseMs ?? LEASE_MS;
  }

  /**
   * Every event due now, page after page, each taken while its attempts can end before `deadline`
   * (EVENT_RUN_MS); the rest stay due for the next run.
   */
  async run(deadline = Number.POSITIVE_INFINITY): Promise<DeliveryRun> {
    const run = newRun();
    const context = await this.#context();
    const inTime = () => this.#now() + EVENT_RUN_MS <= deadline;
    let after: Item | undefined;
    while (inTime()) {
      const page = await this.#store.due(this.#now(), PAGE, after);
      await inParallel(page.keys, async (pk) => {
        if (inTime()) await this.#deliver(pk, context, run);
      });
      after = page.after;
      if (!after) break;
    }
    return run;
  }

  /** These events now (the relay asks once it has published them), if they are due and free. */
  async deliver(eventIds: readonly string[]): Promise<DeliveryRun> {
    const run = newRun();
    if (eventIds.length === 0) return run;
    const context = await this.#context();
    await inParallel(eventIds.map(eventKey), (pk) => this.#deliver(pk, context, run));
    return run;
  }

  async #context(): Promise<Context> {
    return { endpoints: await this.#endpoints.get(), states: new Map(), silent: new Set() };
  }

  async #deliver(pk: string, context: Context, run: DeliveryRun): Promise<void> {
    const now = this.#now();
    const event = await this.#store.claim(pk, this.#owner, now, now + this.#leaseMs);
    if (!event) {
      run.skipped++;
      return;
    }
    run.events++;
    const due = Object.entries(event.deliveries).filter(
      ([, delivery]) => delivery.status === 'pending' && (delivery.nextAt ?? 0) <= now,
    );
    const changed: Record<string, Delivery> = {};
    await Promise.all(
      due.map(async ([endpointId, delivery]) => {
        // An endpoint that gave no answer in this run holds up no more events in it (each would
        // wait DELIVERY_TIMEOUT_MS, and with it every other endpoint's results): its deliveries
        // wait for the next run, no attempt counted, behind the events published meanwhile.
        if (context.silent.has(endpointId)) {
          run.deferred++;
          changed[endpointId] = { ...delivery, nextAt: now + DEFERRED_FOR_MS };
          return;
        }
        changed[endpointId] = await this.#attempt(event, endpointId, delivery, context, run);
      }),
    );
    const dueAt = dueAtOf({ ...event.deliveries, ...changed });
    if (!(await this.#store.release(pk, this.#owner, changed, dueAt))) {
      log.warn('a webhook delivery’s lease ran out before its result was written', { eventId: event.id });
      run.skipped++;
    }
  }

  async #attempt(
    event: WebhookEvent,
    endpointId: string,
    delivery: Delivery,
    context: Context,
    run: DeliveryRun,
  ): Promise<Delivery> {
    const state = await this.#state(endpointId, context);
    if (state.disabledAt !== undefined) {
      const { nextAt: _, ...rest } = delivery;
      return { ...rest, status: 'disabled' };
    }
    const endpoint: WebhookEndpoint | undefined = context.endpoints.get(endpointId);
    const attemptAt = this.#now();
    const result = endpoint
      ? await this.#post(
          endpoint.url,
          webhookHeaders(endpoint.key, event.id, attemptAt, event.body),
          event.body,
        )
      : { delivered: false as const, error: 'the endpoint is not configured' };
    const attempts = delivery.attempts + 1;
    const doneAt = this.#now();
    const base = {
      attempts,
      lastAttemptAt: attemptAt,
      ...(result.status === undefined ? {} : { lastStatus: result.status }),
    };
    if (result.delivered) {
      run.delivered++;
      countMetric('WebhookDelivered');
      if (state.failingSince !== undefined) {
        context.states.set(endpointId, {});
        await this.#store.succeeded(endpointId);
      }
      return { ...base, status: 'delivered', deliveredAt: doneAt };
    }
    run.failed++;
    countMetric('WebhookAttemptFailed');
    if (result.timedOut) context.silent.add(endpointId);
    const streak = await this.#failed(endpointId, doneAt, result.error, context, run);
    const next = afterFailure(attempts, doneAt);
    // Its attempts spent, a delivery has failed, whatever became of its endpoint.
    if (next.status === 'failed') {
      run.gaveUp++;
      countMetric('WebhookDeliveryFailed');
      log.warn('a webhook delivery failed for good', {
        eventId: event.id,
        endpoint: endpointId,
        error: result.error,
      });
      return { ...base, status: 'failed', lastError: result.error };
    }
    if (streak.disabledAt !== undefined) return { ...base, status: 'disabled', lastError: result.error };
    return { ...base, status: 'pending', nextAt: next.nextAt, lastError: result.error };
  }

  /** The endpoint's failing streak, read once per run (an event's attempts share it). */
  async #state(endpointId: string, context: Context): Promise<EndpointState> {
    let state = context.states.get(endpointId);
    if (!state) {
      state = this.#store.endpoint(endpointId);
      context.states.set(endpointId, state);
    }
    return state;
  }

  async #failed(
    endpointId: string,
    now: number,
    error: string,
    context: Context,
    run: DeliveryRun,
  ): Promise<EndpointState> {
    let streak: EndpointState;
    try {
      streak = await this.#store.failed(endpointId, now, error, now - STREAK_GAP_MS);
    } catch (cause) {
      // The attempt's own result still counts; the streak is kept by the next failure.
      log.warn('an endpoint’s failure could not be recorded', {
        endpoint: endpointId,
        error: describeError(cause),
      });
      return (await context.states.get(endpointId)) ?? {};
    }
    if (
      streak.disabledAt === undefined &&
      streak.failingSince !== undefined &&
      now - streak.failingSince >= DISABLE_AFTER_MS
    ) {
      if (await this.#store.disable(endpointId, now, now - DISABLE_AFTER_MS)) {
        countMetric('WebhookEndpointDisabled');
        run.disabled.push(endpointId);
        log.warn('a webhook endpoint was disabled: it failed every attempt for 24 hours', {
          endpoint: endpointId,
          failingSince: new Date(streak.failingSince).toISOString(),
        });
      }
      streak = { ...streak, disabledAt: now };
    }
    context.states.set(endpointId, Promise.resolve(streak));
    return streak;
  }
}

interface Context {
  endpoints: ReadonlyMap<string, WebhookEndpoint>;
  states: Map<string, Promise<EndpointState> | EndpointState>;
  /** Endpoints that gave no answer within DELIVERY_TIMEOUT_MS in this run. */
  silent: Set<string>;
}

const newRun = (): DeliveryRun => ({
  events: 0,
  delivered: 0,
  failed: 0,
  gaveUp: 0,
  disabled: [],
  deferred: 0,
  skipped: 0,
});

/** `work` over `items`, AT_ONCE at a time; a failure of one (a table down) is logged and leaves it due. */
async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (error) {
        log.error('a webhook delivery could not be written; the event stays due', {
          error: describeError(error),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, items.length) }, worker));
}
