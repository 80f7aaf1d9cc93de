import { ForbiddenError, InvalidRequestError, notSent } from '../envelope/errors.ts';
import { cursorOf, type EventBody, type EventStore, feedKeyOfCursor } from './store.ts';

/** How many events a page holds when `limit` is not given. */
export const DEFAULT_EVENTS_PAGE = 20;

export interface EventPage {
  events: EventBody[];
  /**
   * Where the next page starts, given whenever any event was read: a reader at the end polls from
   * there. Null only when nothing was listed yet (poll again without a cursor).
   */
  next_cursor: string | null;
  /** More events were there to read past this page. */
  has_more: boolean;
}

/**
 * GET /gateway/api/events (docs/contract.md "Events"): the merchant's catch-up, oldest first after a
 * cursor. Only the merchant reads it: events carry every customer's orders.
 */
export class EventFeed {
  readonly #events: EventStore;

  constructor(events: EventStore) {
    this.#events = events;
  }

  async list(
    caller: { role: string },
    query: { type?: string; object_id?: string; object_type?: string; limit?: string; cursor?: string },
  ): Promise<EventPage> {
    if (caller.role !== 'merchant') throw notSent(new ForbiddenError('Only the merchant reads the events.'));
    const after = query.cursor === undefined ? undefined : feedKeyOfCursor(query.cursor);
    if (query.cursor !== undefined && after === undefined)
      throw notSent(
        new InvalidRequestError([{ path: 'query.cursor', message: 'must be a next_cursor this list gave' }]),
      );
    const page = await this.#events.page({
      limit: query.limit === undefined ? DEFAULT_EVENTS_PAGE : Number(query.limit),
      ...(after === undefined ? {} : { after }),
      ...(query.type === undefined ? {} : { type: query.type }),
      ...(query.object_id === undefined ? {} : { objectId: query.object_id }),
      ...(query.object_type === undefined ? {} : { objectType: query.object_type }),
    });
    return {
      events: page.events,
      next_cursor: page.position === undefined ? null : cursorOf(page.position),
      has_more: page.more,
    };
  }
}
