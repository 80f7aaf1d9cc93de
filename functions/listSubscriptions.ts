// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { visibleTo } from '#lib/orders/access.ts';
import { ownershipFromEnvironment } from '#lib/orders/from-environment.ts';
import { sharedReadsFromEnvironment } from '#lib/reads/from-environment.ts';
import { ageHeaders } from '#lib/reads/shared-reads.ts';

const reads = sharedReadsFromEnvironment(payHereFromEnvironment());
const ownership = ownershipFromEnvironment();

/** GET /gateway/api/subscriptions: the merchant's subscriptions, or a customer's own (one shared list, filtered). */
export const handler = route(
  { name: 'listSubscriptions', scope: 'subscriptions:read' },
  async ({ caller, deadline }) => {
    const allowed = await ownership.subscriptions(caller);
    if (allowed !== 'all' && allowed.size === 0) return ok('Found 0 subscriptions', []);
    const served = await reads.listSubscriptions(deadline);
    const { msg, data } = served.answer;
    if (allowed === 'all') return ok(msg, data, ageHeaders(served));
    const own = data.filter((subscription) => allowed.has(String(subscription.subscription_id)));
    return ok(`Found ${own.length} subscriptions`, visibleTo(caller, own), ageHeaders(served));
  },
);
