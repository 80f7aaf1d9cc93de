import type { Context } from 'aws-lambda';
import { setLogContext } from '#lib/log/log.ts';
import { publishMetrics } from '#lib/log/metrics.ts';
import type { DeliveryRun } from '#lib/webhooks/deliverer.ts';
import { webhookDelivererFromEnvironment } from '#lib/webhooks/deliverer-from-environment.ts';

const deliverer = webhookDelivererFromEnvironment();

/** A run that has no Lambda clock (invoke local without one) gets this long. */
const DEFAULT_RUN_MS = 70_000;

/**
 * The webhook deliverer, on a schedule (serverless.yml: EventBridge, every minute): every event
 * with a delivery due, posted to the merchant's endpoints under a lease, its results written
 * (lib/webhooks/deliverer.ts, docs/operator.md "Webhooks").
 */
export async function handler(_event: unknown, context: Context): Promise<DeliveryRun> {
  setLogContext({ requestId: context.awsRequestId, route: 'deliverWebhooks' });
  const deadline = Date.now() + (context.getRemainingTimeInMillis?.() ?? DEFAULT_RUN_MS);
  try {
    return await deliverer.run(deadline);
  } finally {
    publishMetrics('deliverWebhooks');
  }
}
