import { fullJitterMs } from '../net/backoff.ts';
import type { TransportError } from './transport.ts';

/**
 * The gateway client's retry policy as plain functions: which failures are retried, how long to
 * wait. Reads may be repeated; a money request is never sent twice once a byte may have left.
 */

export const MAX_READ_RETRIES = 2;
const MAX_DELAY_MS = 2_000;
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

/** Why an attempt got nothing usable: no HTTP answer (the transport says how far it got), or an unusable one. */
export type Failure = { transport: TransportError } | { status: number };

/**
 * A money request is tried again only when the transport proves it never left, never after an HTTP
 * answer of any kind; a read, after a connection failure or a transient status.
 */
export function shouldRetryGatewayCall(failure: Failure, money: boolean, retriesSoFar: number): boolean {
  if (retriesSoFar >= MAX_READ_RETRIES) return false;
  if ('transport' in failure) {
    return money ? failure.transport.reach === 'not_sent' : failure.transport.kind !== 'protocol';
  }
  return !money && RETRYABLE_STATUSES.has(failure.status);
}

/** Full-jitter exponential backoff, but never sooner than the gateway's Retry-After. */
export function retryDelayMs(
  retriesSoFar: number,
  retryAfterMs: number | undefined,
  random: () => number,
): number {
  return Math.max(fullJitterMs(retriesSoFar, random, MAX_DELAY_MS), retryAfterMs ?? 0);
}

/** An IMF-fixdate, the HTTP date form, e.g. `Wed, 21 Oct 2015 07:28:00 GMT`. */
const HTTP_DATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** `Retry-After` as delay-seconds or an HTTP date, in milliseconds from `now`; anything else is ignored. */
export function parseRetryAfter(value: unknown, now: number): number | undefined {
  const raw: unknown = Array.isArray(value) ? value[0] : value;
  if (typeof raw !== 'string' || raw.trim() === '') return undefined;
  const header = raw.trim();
  if (/^\d+$/.test(header)) return Number(header) * 1000;
  if (!HTTP_DATE.test(header)) return undefined;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
