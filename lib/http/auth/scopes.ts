/**
 * The scopes a token's `scope` claim (space-separated) can grant (docs/contract.md
 * "Callers, roles and ownership"). Each route requires exactly one route scope; `merchant` grants
 * no route by itself but, added to a route's scope, lifts the ownership rules: the caller is the merchant.
 */
export const ROUTE_SCOPES = [
  'payments:read',
  'payments:charge',
  'payments:capture',
  'payments:refund',
  'subscriptions:read',
  'subscriptions:write',
] as const;

export type Scope = (typeof ROUTE_SCOPES)[number];

export const MERCHANT_SCOPE = 'merchant';

/** The scopes a `scope` claim grants; anything but a string grants none. */
export function scopesOf(claim: unknown): string[] {
  if (typeof claim !== 'string') return [];
  return claim.split(' ').filter((scope) => scope !== '');
}
