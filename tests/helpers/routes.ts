import type { EventOptions } from './events.ts';

/** SPEC.md's routes: function name, method and resource template. */
export const ROUTES = {
  charge: { method: 'POST', resource: '/gateway/api/payments/charge' },
  capture: { method: 'POST', resource: '/gateway/api/payments/capture' },
  refund: { method: 'POST', resource: '/gateway/api/payments/refund' },
  retrievePayments: { method: 'GET', resource: '/gateway/api/payments/{id}' },
  listSubscriptions: { method: 'GET', resource: '/gateway/api/subscriptions' },
  getSubscription: { method: 'GET', resource: '/gateway/api/subscriptions/{id}' },
  subscriptionPayments: { method: 'GET', resource: '/gateway/api/subscriptions/{id}/payments' },
  retrySubscription: { method: 'POST', resource: '/gateway/api/subscriptions/{id}/retry' },
  cancelSubscription: { method: 'DELETE', resource: '/gateway/api/subscriptions/{id}' },
} as const satisfies Record<string, Pick<EventOptions, 'method' | 'resource'>>;

export type RouteName = keyof typeof ROUTES;

/** The money routes that require an Idempotency-Key (SPEC.md "Idempotency"); cancel, a DELETE, does not. */
export const IDEMPOTENT_ROUTES: readonly RouteName[] = ['charge', 'capture', 'refund', 'retrySubscription'];
