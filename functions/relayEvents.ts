import type { Context } from 'aws-lambda';
import { eventRelayFromEnvironment } from '#lib/events/from-environment.ts';
import { setLogContext } from '#lib/log/log.ts';
import { publishMetrics } from '#lib/log/metrics.ts';
import { webhookEndpointIds } from '#lib/webhooks/endpoints.ts';

/** Each event published gets a delivery due to every webhook endpoint (deliverWebhooks delivers them). */
const relay = eventRelayFromEnvironment(() => webhookEndpointIds());

/** The most ledger items a run publishes; the rest waits a minute for the next run. */
const ITEMS_PER_RUN = 500;

/**
 * The events a request could not publish after its answer (a Lambda frozen or ended, a table that
 * failed), published from the ledger's outboxes on a schedule (serverless.yml: every minute; under
 * `npm start` the same): no event stays unpublished (lib/events/relay.ts).
 */
export async function handler(_event: unknown, context: Context): Promise<{ published: number }> {
  setLogContext({ requestId: context.awsRequestId, route: 'relayEvents' });
  try {
    return { published: await relay.publishDue(Date.now(), ITEMS_PER_RUN) };
  } finally {
    publishMetrics('relayEvents');
  }
}
