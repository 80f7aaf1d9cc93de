// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { subscriptionListsFromEnvironment } from '#lib/orders/from-environment.ts';
import { isPaged } from '#lib/orders/subscription-lists.ts';
import { sharedReadsFromEnvironment } from '#lib/reads/from-environment.ts';
import { ageHeaders } from '#lib/reads/shared-reads.ts';
import { SubscriptionsQuery } from '#lib/schemas/orders.ts';

const lists = subscriptionListsFromEnvironment(sharedReadsFromEnvironment(payHereFromEnvironment()));

/**
 * GET /gateway/api/subscriptions: the merchant's subscriptions, or a customer's own, newest first, a
 * page at a time when asked (`limit`, `cursor`), else all of them as an array, cut from one shared
 * list of PayHere's.
 */
export const handler = route(
  { name: 'listSubscriptions', scope: 'subscriptions:read', query: SubscriptionsQuery },
  async ({ caller, query, deadline }) => {
    const found = await lists.list(caller, query, deadline);
    const paged = isPaged(query);
    if ('none' in found)
      return ok('Found 0 subscriptions', paged ? { subscriptions: [], next_cursor: null } : []);
    const list = found.answer;
    return ok(
      `Found ${list.subscriptions.length} subscriptions`,
      paged ? list : list.subscriptions,
      ageHeaders(found),
    );
  },
);
