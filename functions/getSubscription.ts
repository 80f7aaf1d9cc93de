// First: PayHere's connection opens while the rest loads (lib/gateway/connect-at-start.ts).
import '#lib/gateway/connect-at-start.ts';
import { ok } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http/route.ts';
import { visibleTo } from '#lib/orders/access.ts';
import { ownershipFromEnvironment } from '#lib/orders/from-environment.ts';
import { sharedReadsFromEnvironment } from '#lib/reads/from-environment.ts';
import { ageHeaders } from '#lib/reads/shared-reads.ts';
import { SubscriptionPath } from '#lib/schemas/paths.ts';

const reads = sharedReadsFromEnvironment(payHereFromEnvironment());
const ownership = ownershipFromEnvironment();

/** GET /gateway/api/subscriptions/{id}: one subscription. */
export const handler = route(
  { name: 'getSubscription', scope: 'subscriptions:read', path: SubscriptionPath },
  async ({ path, caller, deadline }) => {
    await ownership.requireSubscription(caller, path.id);
    const served = await reads.getSubscription(path.id, deadline);
    return ok(served.answer.msg, visibleTo(caller, served.answer.data), ageHeaders(served));
  },
);
