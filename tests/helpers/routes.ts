import type { EventOptions } from './events.ts';

/** The routes of docs/contract.md "Routes": function name, method and resource template. */
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
  createCheckout: { method: 'POST', resource: '/gateway/api/checkouts' },
  getCheckout: { method: 'GET', resource: '/gateway/api/checkouts/{order_id}' },
  listOrders: { method: 'GET', resource: '/gateway/api/orders' },
  paymentRefunds: { method: 'GET', resource: '/gateway/api/payments/{id}/refunds' },
  reconciliationReport: { method: 'GET', resource: '/gateway/api/reports/reconciliation' },
  listEvents: { method: 'GET', resource: '/gateway/api/events' },
  webhookDeliveries: { method: 'GET', resource: '/gateway/api/webhooks/deliveries' },
  redeliverEvent: { method: 'POST', resource: '/gateway/api/events/{id}/redeliver' },
} as const satisfies Record<string, Pick<EventOptions, 'method' | 'resource'>>;

export type RouteName = keyof typeof ROUTES;

/** PayHere's route into the service: no bearer token, a signed form (tests/helpers/notifications.ts). */
export const NOTIFY_ROUTE = { method: 'POST', resource: '/gateway/notify' } as const;

/** The functions behind the API: its routes and the notification receiver (openapi/routes.ts describes them). */
export const API_FUNCTIONS: readonly string[] = [...Object.keys(ROUTES), 'notify'];

/** Every function serverless.yml declares: the API's, and the settle job, the event relay and the webhook deliverer, which run on a schedule. */
export const FUNCTIONS: readonly string[] = [...API_FUNCTIONS, 'settle', 'relayEvents', 'deliverWebhooks'];

/** The routes that call PayHere (createCheckout, getCheckout, listOrders, paymentRefunds and listEvents answer from the ledger or the events). */
export const GATEWAY_ROUTES = [
  'charge',
  'capture',
  'refund',
  'retrievePayments',
  'listSubscriptions',
  'getSubscription',
  'subscriptionPayments',
  'retrySubscription',
  'cancelSubscription',
] as const satisfies readonly RouteName[];

export type GatewayRouteName = (typeof GATEWAY_ROUTES)[number];

/**
 * The money routes that require an Idempotency-Key (docs/contract.md "Idempotency"); cancel, a DELETE,
 * does not.
 */
export const IDEMPOTENT_ROUTES: readonly RouteName[] = ['charge', 'capture', 'refund', 'retrySubscription'];
