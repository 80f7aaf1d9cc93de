import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * CloudWatch metrics in the embedded metric format (Powertools for AWS Lambda): counted in memory
 * during a request and written as one log line when it ends (`publishMetrics`), so counting adds
 * nothing to a request but that buffered write. Every metric carries the dimensions `service`
 * (POWERTOOLS_SERVICE_NAME: `<service>-<stage>` when deployed) and `route` (the function).
 * POWERTOOLS_METRICS_DISABLED=true turns them off (the tests do, except those that read them).
 */
export const METRICS_NAMESPACE = 'PayHerePaymentsApi';

const metrics = new Metrics({
  namespace: METRICS_NAMESPACE,
  serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'payhere-payments-api',
});

/**
 * The metrics the service writes (docs/operator.md "Operating it" says what each means). Outcomes are
 * counted once per first answer; a replayed answer counts as `Replayed`.
 */
export type CountMetric =
  | 'OutcomeDone'
  | 'OutcomePending'
  | 'OutcomeDeclined'
  | 'OutcomeUnknown'
  | 'OutcomeRejected'
  | 'OutcomeFailed'
  | 'Replayed'
  | 'OwnershipRefused'
  | 'UpstreamStatus2xx'
  | 'UpstreamStatus4xx'
  | 'UpstreamStatus429'
  | 'UpstreamStatus5xx'
  | 'UpstreamNoAnswer'
  | 'BudgetWait'
  | 'BudgetRefused'
  | 'BudgetFallback'
  | 'NotificationVerified'
  | 'NotificationRejected'
  | 'NotificationRecorded'
  | 'NotificationUnmatched'
  | 'NotificationMismatched'
  | 'NotificationTermsMismatch'
  | 'NotificationNotActed'
  | 'NotificationReplayed'
  | 'NotificationConfirmDeferred'
  | 'NotificationTokenConflict'
  | 'ReportConfirmed'
  | 'ReportUnconfirmed'
  | 'SettledRequest'
  | 'SettledReport'
  | 'SettledStanding'
  | 'UnknownOverAnHour'
  | 'SettleBacklog'
  | 'SettledOpenCharge'
  | 'PossibleDuplicateCharge'
  | 'PendingChargeExpired'
  | 'LedgerWriteFailed'
  | 'EventRelayFailed'
  | 'RefundUndeterminable'
  | 'CallerRateLimited'
  | 'CallerShareUncounted'
  | 'CardTesting'
  | 'WebhookDelivered'
  | 'WebhookAttemptFailed'
  | 'WebhookDeliveryFailed'
  | 'WebhookEndpointDisabled';

export type TimeMetric = 'UpstreamLatency' | 'BudgetWaitTime';

export function countMetric(name: CountMetric, value = 1): void {
  metrics.addMetric(name, MetricUnit.Count, value);
}

export function timeMetric(name: TimeMetric, milliseconds: number): void {
  metrics.addMetric(name, MetricUnit.Milliseconds, Math.round(milliseconds * 100) / 100);
}

/** The stored metrics dated now, the moment their request answered, however late they are written. */
export function stampMetrics(): void {
  if (metrics.hasStoredMetrics()) metrics.setTimestamp(Date.now());
}

/**
 * Write what the request counted, with its route; nothing (not even Powertools' warning) when it
 * counted nothing.
 */
export function publishMetrics(route: string): void {
  if (!metrics.hasStoredMetrics()) return;
  metrics.addDimension('route', route);
  metrics.publishStoredMetrics();
}
