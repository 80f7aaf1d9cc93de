import type { Context } from 'aws-lambda';

/** Who is calling: the verified token's subject and scopes. */
export interface Caller {
  sub: string;
  scopes: readonly string[];
}

/** The Lambda context as the middleware stack passes it on, with the caller once authenticated. */
export type CallerContext = Context & { caller?: Caller };

/** Before authentication exists every request is this one caller. */
export const ANONYMOUS: Caller = { sub: 'anonymous', scopes: [] };

export function callerOf(context: Context): Caller {
  return (context as CallerContext).caller ?? ANONYMOUS;
}
