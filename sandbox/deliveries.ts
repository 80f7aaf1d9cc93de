// Posting notification forms to their notify_url over loopback HTTP, and the log of every attempt.
// A receiver that is down, slow or wrong is recorded, never thrown: the sandbox keeps serving.
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { NotificationForm } from './notifications.ts';

/** One attempt to post a notification, as the log keeps it. */
export interface Delivery {
  /** 1, 2, ... in the order attempts finished, since the last reset. */
  id: number;
  url: string;
  /** The form as sent (after any tampering). */
  fields: NotificationForm;
  /** The attempt this one re-sent, or null. */
  replayOf: number | null;
  /** The receiver's HTTP status and body, or null when it did not answer. */
  status: number | null;
  body: string | null;
  /** Why there is no answer (a network error, a timeout, a URL the sandbox will not post to), or null. */
  error: string | null;
}

/** When and how often a notification is posted; chosen per control call. */
export interface DeliveryTiming {
  /** Post it twice, the second right after the first attempt ends. */
  duplicate?: boolean;
  /** Wait this long first; the control call then answers before anything is posted. */
  delayMs?: number;
}

type Planned = Pick<Delivery, 'url' | 'fields' | 'replayOf'>;

export interface DeliveriesOptions {
  /** Time for the receiver to answer before the attempt is logged as a timeout. */
  timeoutMs: number;
}

// The log keeps this much of an answer: enough to see what the receiver said.
const MAX_LOGGED_BODY = 4096;
const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

/** Posting is limited to this machine, so that no test can reach the network. */
export function isLoopbackUrl(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  return LOOPBACK_HOSTS.has(parsed.hostname) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(parsed.hostname);
}

function describeFailure(error: unknown, timeoutMs: number): string {
  const { name, code, message } = error as { name?: string; code?: unknown; message?: string };
  if (name === 'TimeoutError') return `timeout: no answer within ${timeoutMs} ms`;
  return typeof code === 'string' ? `${code}: ${message}` : String(message ?? error);
}

export class Deliveries {
  readonly #timeoutMs: number;
  readonly #agent: Agent;
  #log: Delivery[] = [];
  #nextId = 1;
  readonly #inFlight = new Set<Promise<Delivery[]>>();
  // Aborted by clear() and close(): a delivery scheduled before a reset must not land in the new log.
  #generation = new AbortController();

  constructor(options: DeliveriesOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#agent = new Agent({ connect: { timeout: options.timeoutMs } });
  }

  /**
   * Posts the form as timed; resolves with the attempts once made (after any delay), or with those
   * made before a reset abandoned the rest.
   */
  send(url: string, fields: NotificationForm, timing: DeliveryTiming = {}): Promise<Delivery[]> {
    const times = timing.duplicate ? 2 : 1;
    return this.#track(timing.delayMs ?? 0, () =>
      Array.from({ length: times }, () => ({ url, fields, replayOf: null })),
    );
  }

  /** Posts an earlier attempt's form again, to the same URL; undefined when there is no such attempt. */
  replay(id: number): Promise<Delivery[]> | undefined {
    const earlier = this.#log.find((delivery) => delivery.id === id);
    if (!earlier) return undefined;
    return this.#track(0, () => [{ url: earlier.url, fields: earlier.fields, replayOf: earlier.id }]);
  }

  log(): Delivery[] {
    return structuredClone(this.#log);
  }

  /** How many sends are waiting for their delay or an answer. */
  pending(): number {
    return this.#inFlight.size;
  }

  /** Resolves once every send started so far (and any started meanwhile) has ended. */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /** Forgets the log and abandons every send still waiting or in flight. */
  clear(): void {
    this.#generation.abort();
    this.#generation = new AbortController();
    this.#log = [];
    this.#nextId = 1;
  }

  async close(): Promise<void> {
    this.#generation.abort();
    await this.settled();
    await this.#agent.destroy();
  }

  /** Makes the attempts one after the other, counted in pending() until the last has ended. */
  #track(delayMs: number, planned: () => Planned[]): Promise<Delivery[]> {
    const { signal } = this.#generation;
    const run = async (): Promise<Delivery[]> => {
      const made: Delivery[] = [];
      try {
        if (delayMs > 0) await sleep(delayMs, undefined, { signal });
        for (const attempt of planned()) made.push(await this.#attempt(attempt, signal));
      } catch (error) {
        if (!signal.aborted) throw error;
      }
      return made;
    };
    const promise = run().finally(() => this.#inFlight.delete(promise));
    this.#inFlight.add(promise);
    return promise;
  }

  async #attempt(planned: Planned, generation: AbortSignal): Promise<Delivery> {
    const outcome = await this.#post(planned.url, planned.fields, generation);
    // Throws if a reset came meanwhile, so the attempt is not logged after the log was cleared.
    generation.throwIfAborted();
    const delivery: Delivery = { id: this.#nextId++, ...planned, ...outcome };
    this.#log.push(delivery);
    return structuredClone(delivery);
  }

  async #post(
    url: string,
    fields: NotificationForm,
    generation: AbortSignal,
  ): Promise<Pick<Delivery, 'status' | 'body' | 'error'>> {
    if (!isLoopbackUrl(url)) {
      return { status: null, body: null, error: 'not sent: the sandbox posts only to loopback http(s) URLs' };
    }
    try {
      const answer = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
        dispatcher: this.#agent,
        signal: AbortSignal.any([generation, AbortSignal.timeout(this.#timeoutMs)]),
      });
      const body = await answer.body.text();
      return { status: answer.statusCode, body: body.slice(0, MAX_LOGGED_BODY), error: null };
    } catch (error) {
      generation.throwIfAborted();
      return { status: null, body: null, error: describeFailure(error, this.#timeoutMs) };
    }
  }
}
