import type { Context } from 'aws-lambda';

/**
 * A customer (a user of the merchant's app) acts only on what it owns; the merchant (a token
 * holding the `merchant` scope) acts on everything.
 */
export type Role = 'merchant' | 'customer';

/** Who is calling: the verified token's subject, scopes and role. */
export interface Caller {
  sub: string;
  scopes: readonly string[];
  role: Role;
}

/** The Lambda context as the middleware stack passes it on, with the caller once authenticated. */
export type CallerContext = Context & { caller?: Caller };

/**
 * The authenticated caller. Authentication runs first in every stack (lib/http/auth/middleware.ts),
 * so a request without one is a bug: failing beats treating it as some shared anonymous caller,
 * whose idempotency keys every other anonymous request could replay.
 */
export function callerOf(context: Context): Caller {
  const { caller } = context as CallerContext;
  if (!caller) throw new Error('No authenticated caller: the authentication middleware did not run.');
  return caller;
}
