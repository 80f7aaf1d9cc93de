import { ok } from '#lib/envelope/envelope.ts';
import { EventFeed } from '#lib/events/feed.ts';
import { eventStoreFromEnvironment } from '#lib/events/from-environment.ts';
import { route } from '#lib/http/route.ts';
import { EventsQuery } from '#lib/schemas/events.ts';

const feed = new EventFeed(eventStoreFromEnvironment());

/**
 * GET /gateway/api/events: every change of money state the ledger recorded, as events, oldest first
 * after a cursor, for the merchant's backend to catch up (the webhooks deliver the same events).
 */
export const handler = route(
  { name: 'listEvents', scope: 'payments:read', query: EventsQuery },
  async ({ caller, query }) => {
    const page = await feed.list(caller, query);
    return ok(`Found ${page.events.length} events`, page);
  },
);
