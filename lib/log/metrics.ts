import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * CloudWatch metrics in the embedded metric format (Powertools for AWS Lambda): counted in memory
 * during a request and written as one log line when it ends (`publishMetrics`), so counting adds
 * nothing to a request but that buffered write. POWERTOOLS_METRICS_DISABLED=true turns them off
 * (the tests do, except those that read them).
 */
export const METRICS_NAMESPACE = 'PayHerePaymentsApi';

const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: 'payhere-payments-api' });

export function countMetric(name: string, value = 1): void {
  metrics.addMetric(name, MetricUnit.Count, value);
}

/** Write what the request counted; nothing (not even Powertools' warning) when it counted nothing. */
export function publishMetrics(): void {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
}
