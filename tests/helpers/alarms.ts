import type { Template } from './package.ts';

/** The alarms serverless.yml declares, by name suffix, and the metric each watches. */
export const ALARMS = {
  'outcome-unknown': 'OutcomeUnknown',
  'notification-signature': 'NotificationRejected',
  'budget-fallback': 'BudgetFallback',
  declined: 'OutcomeDeclined',
  '5xx-rate': '5XXError',
  'unknown-over-an-hour': 'UnknownOverAnHour',
  'notification-terms': 'NotificationTermsMismatch',
  'card-testing': 'CardTesting',
  'possible-duplicate': 'PossibleDuplicateCharge',
  'pending-expired': 'PendingChargeExpired',
  'ledger-write-failed': 'LedgerWriteFailed',
  'refund-undeterminable': 'RefundUndeterminable',
  'caller-shares-uncounted': 'CallerShareUncounted',
  'payhere-429': 'UpstreamStatus429',
  'webhook-endpoint-disabled': 'WebhookEndpointDisabled',
} as const;

type Alarm = { Properties: any };

export const alarmsOf = (template: Template): Record<string, Alarm> =>
  Object.fromEntries(
    Object.values(template.Resources)
      .filter((resource) => resource.Type === 'AWS::CloudWatch::Alarm')
      .map((alarm) => [alarm.Properties.AlarmName as string, alarm]),
  );

/** A template condition made only of Fn::Not and Fn::Equals over literals, as serverless.yml's are. */
function holds(condition: any): boolean {
  if ('Fn::Not' in condition) return !holds(condition['Fn::Not'][0]);
  if ('Fn::Equals' in condition) {
    const [left, right] = condition['Fn::Equals'];
    return JSON.stringify(left) === JSON.stringify(right);
  }
  throw new Error(`not a condition of literals: ${JSON.stringify(condition)}`);
}

/** Where an alarm's state changes go, the template's conditions evaluated: none, or the topics. */
export function actionsOf(template: Template, alarm: Alarm) {
  const resolve = (actions: any): string[] => {
    if (actions === undefined) return [];
    if (!('Fn::If' in actions)) return actions;
    const [condition, then, otherwise] = actions['Fn::If'];
    const chosen = holds(template.Conditions?.[condition]) ? then : otherwise;
    return chosen?.Ref === 'AWS::NoValue' ? [] : chosen;
  };
  return { alarm: resolve(alarm.Properties.AlarmActions), ok: resolve(alarm.Properties.OKActions) };
}
