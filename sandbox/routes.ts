// Which Merchant API endpoint a request is for; the names key counters and faults.
export const ENDPOINT_NAMES = [
  'token',
  'search',
  'charge',
  'capture',
  'refund',
  'listSubscriptions',
  'getSubscription',
  'subscriptionPayments',
  'retry',
  'cancel',
] as const;

export type EndpointName = (typeof ENDPOINT_NAMES)[number];
export type CountedName = EndpointName | 'unknown';

export const API_PREFIX = '/merchant/v1/';

export interface Route {
  endpoint: CountedName;
  /** The raw `{subscription_id}` path segment of the subscription GETs. */
  subscriptionId?: string;
}

const FIXED: Record<string, EndpointName> = {
  'POST oauth/token': 'token',
  'GET payment/search': 'search',
  'POST payment/charge': 'charge',
  'POST payment/capture': 'capture',
  'POST payment/refund': 'refund',
  'GET subscription': 'listSubscriptions',
  'POST subscription/retry': 'retry',
  'POST subscription/cancel': 'cancel',
};

export function matchRoute(method: string, pathname: string): Route {
  if (!pathname.startsWith(API_PREFIX)) return { endpoint: 'unknown' };
  const path = pathname.slice(API_PREFIX.length);
  const fixed = FIXED[`${method} ${path}`];
  if (fixed) return { endpoint: fixed };
  if (method !== 'GET') return { endpoint: 'unknown' };

  const [resource, id, sub, ...rest] = path.split('/');
  if (resource !== 'subscription' || !id || rest.length > 0) return { endpoint: 'unknown' };
  if (sub === undefined) return { endpoint: 'getSubscription', subscriptionId: id };
  if (sub === 'payments') return { endpoint: 'subscriptionPayments', subscriptionId: id };
  return { endpoint: 'unknown' };
}
