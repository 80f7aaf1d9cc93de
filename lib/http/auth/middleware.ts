import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { ForbiddenError, UnauthorizedError } from '../../envelope/errors.ts';
import { log, setLogContext } from '../../log/log.ts';
import type { CallerContext } from '../caller.ts';
import { headerValues } from '../headers.ts';
import { loadAuthConfig } from './config.ts';
import type { Scope } from './scopes.ts';
import { createTokenVerifier, type TokenVerifier } from './verify.ts';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

/** Far above any real token; a longer header is refused before anything parses it. */
export const MAX_AUTHORIZATION_LENGTH = 8 * 1024;

/** RFC 6750: the scheme is case-insensitive, then one compact JWS (three base64url parts). */
const BEARER = /^bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/i;

const MISSING = 'Authentication is required: send Authorization: Bearer <token>.';
export const MALFORMED = 'The Authorization header must be exactly one "Bearer <token>".';

/** The one bearer token of the request, or a 401: absent, repeated, oversized or not "Bearer <JWS>". */
export function bearerToken(event: Pick<Event, 'headers' | 'multiValueHeaders'>): string {
  const values = headerValues(event, 'authorization');
  if (values.length > 1) throw new UnauthorizedError(MALFORMED);
  const value = values[0];
  if (value === undefined || value.trim() === '') throw new UnauthorizedError(MISSING);
  if (value.length > MAX_AUTHORIZATION_LENGTH) throw new UnauthorizedError(MALFORMED);
  const match = BEARER.exec(value.trim());
  if (!match) throw new UnauthorizedError(MALFORMED);
  return match[1]!;
}

let containerVerifier: TokenVerifier | undefined;

/** One verifier per container, built at start-up: missing configuration fails the cold start. */
export function verifierFromEnvironment(): TokenVerifier {
  containerVerifier ??= createTokenVerifier(loadAuthConfig(process.env));
  return containerVerifier;
}

/**
 * First in every stack: nothing about the request (body, validation) is looked at or revealed
 * until the caller is known and holds `scope`. Sets the caller on the context and in the logs.
 */
export function authenticate(
  scope: Scope,
  verifier: TokenVerifier = verifierFromEnvironment(),
): MiddlewareObj<Event, Result> {
  return {
    name: 'authenticate',
    before: async ({ event, context }) => {
      const requestId = event.requestContext?.requestId ?? context.awsRequestId;
      setLogContext({ requestId });
      const caller = await verifier.verify(bearerToken(event));
      (context as CallerContext).caller = caller;
      setLogContext({ requestId, caller: caller.sub, role: caller.role });
      if (!caller.scopes.includes(scope)) {
        throw new ForbiddenError(`The token is valid but lacks the scope ${scope} that this route requires.`);
      }
      log.debug('caller authenticated', { scope });
    },
  };
}
