/** The scopes a token's `scope` claim (space-separated) can grant; each route requires exactly one. */
export const SCOPES = [
  'payments:read',
  'payments:write',
  'subscriptions:read',
  'subscriptions:write',
] as const;

export type Scope = (typeof SCOPES)[number];

/** The scopes a `scope` claim grants; anything but a string grants none. */
export function scopesOf(claim: unknown): string[] {
  if (typeof claim !== 'string') return [];
  return claim.split(' ').filter((scope) => scope !== '');
}
