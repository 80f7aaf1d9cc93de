import { ConflictError, ForbiddenError, InvalidRequestError, NotFoundError } from '../envelope/errors.ts';
import type { DeliveryStatus, WebhookEvent, WebhookStore } from './store.ts';

/**
 * The merchant's view of the webhook deliveries, and redelivery on demand (docs/app.md "Webhooks"):
 * the merchant's only, as the reconciliation report is (a customer gets 403); never PayHere.
 */
export interface DeliveryView {
  event_id: string;
  type: string;
  object: { type: string; id: string };
  endpoint: string;
  status: DeliveryStatus;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
}

export interface DeliveryList {
  deliveries: DeliveryView[];
  next_cursor: string | null;
}

export interface Redelivery {
  event_id: string;
  endpoints: string[];
  due_at: string;
}

export interface DeliveriesListQuery {
  endpoint?: string | undefined;
  status?: DeliveryStatus | undefined;
  limit?: string | undefined;
  cursor?: string | undefined;
}

const DEFAULT_PAGE = 20;
/** Feed queries a page may take before it answers what it found (filters may drop most events). */
const QUERIES_PER_PAGE = 3;
const FEED_KEY = /^\d{13}#evt_[0-9A-Za-z]{1,64}$/;

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

function viewsOf(event: WebhookEvent, query: DeliveriesListQuery): DeliveryView[] {
  return Object.entries(event.deliveries)
    .filter(
      ([endpoint, delivery]) =>
        (query.endpoint ?? endpoint) === endpoint && (query.status ?? delivery.status) === delivery.status,
    )
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([endpoint, delivery]) => ({
      event_id: event.id,
      type: event.type,
      object: { type: event.objectType, id: event.objectId },
      endpoint,
      status: delivery.status,
      attempts: delivery.attempts,
      last_status: delivery.lastStatus ?? null,
      last_error: delivery.lastError ?? null,
      last_attempt_at: iso(delivery.lastAttemptAt),
      next_attempt_at: delivery.status === 'pending' ? iso(delivery.nextAt) : null,
      delivered_at: iso(delivery.deliveredAt),
    }));
}

function decodeCursor(cursor: string): string {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!FEED_KEY.test(key) || Buffer.from(key).toString('base64url') !== cursor) {
    throw new InvalidRequestError([{ path: 'query.cursor', message: 'is not a cursor this list gave' }]);
  }
  return key;
}

export interface WebhookDeliveriesOptions {
  store: WebhookStore;
  /** The endpoints configured now (an event published before one was added has no delivery to it). */
  endpointIds: () => string[];
  now?: () => number;
}

export class WebhookDeliveries {
  readonly #store: WebhookStore;
  readonly #endpointIds: () => string[];
  readonly #now: () => number;

  constructor(options: WebhookDeliveriesOptions) {
    this.#store = options.store;
    this.#endpointIds = options.endpointIds;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Deliveries newest event first, `limit` at most a page (an event's deliveries are never split
   * across pages); `next_cursor` null on the last page.
   */
  async list(actor: { role: string }, query: DeliveriesListQuery): Promise<DeliveryList> {
    if (actor.role !== 'merchant') throw new ForbiddenError('Only the merchant reads webhook deliveries.');
    const limit = query.limit === undefined ? DEFAULT_PAGE : Number(query.limit);
    let after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const deliveries: DeliveryView[] = [];
    let more = true;
    for (let queries = 0; queries < QUERIES_PER_PAGE && more && deliveries.length < limit; queries++) {
      const page = await this.#store.newest(limit, after);
      more = page.after !== undefined;
      for (const event of page.events) {
        const views = viewsOf(event, query);
        if (deliveries.length > 0 && deliveries.length + views.length > limit) {
          more = true;
          break;
        }
        deliveries.push(...views);
        after = event.feedKey;
      }
      if (!more) after = undefined;
      else if (page.events.length === 0) after = page.after;
    }
    return { deliveries, next_cursor: more && after ? Buffer.from(after).toString('base64url') : null };
  }

  /**
   * Make the event due now to `endpoint`, or to every endpoint it has a delivery for or that is
   * configured; its attempts are kept. A disabled endpoint is enabled again.
   */
  async redeliver(actor: { role: string }, id: string, endpoint: string | undefined): Promise<Redelivery> {
    if (actor.role !== 'merchant') throw new ForbiddenError('Only the merchant redelivers events.');
    const event = await this.#store.event(id);
    if (!event) throw new NotFoundError(`Event ${id} was not found.`);
    const known = Object.keys(event.deliveries);
    const every = [...new Set([...known, ...this.#endpointIds()])].sort();
    if (endpoint !== undefined && !every.includes(endpoint)) {
      throw new InvalidRequestError([
        { path: 'query.endpoint', message: 'is not an endpoint of this event or of the configuration' },
      ]);
    }
    const targets = endpoint === undefined ? every : [endpoint];
    if (targets.length === 0)
      throw new ConflictError('No webhook endpoint is configured: there is nothing to deliver it to.');
    const now = this.#now();
    const busy = () =>
      new ConflictError(
        'The event is being delivered right now; ask again in a minute if it is still needed.',
      );
    if (event.leaseUntil !== undefined && event.leaseUntil >= now) throw busy();
    const made = await this.#store.redeliver(
      id,
      {
        known: targets.filter((target) => known.includes(target)),
        added: targets.filter((target) => !known.includes(target)),
      },
      now,
      !event.hasDeliveries,
    );
    if (!made) throw busy();
    for (const target of targets) {
      if ((await this.#store.endpoint(target)).disabledAt !== undefined) await this.#store.enable(target);
    }
    return { event_id: id, endpoints: targets, due_at: new Date(now).toISOString() };
  }
}
