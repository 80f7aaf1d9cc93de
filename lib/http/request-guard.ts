import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type FieldError, InvalidRequestError, PayloadTooLargeError } from '../envelope/errors.ts';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

/** The largest charge (100 item lines of bounded fields) fits well inside this. */
export const MAX_BODY_BYTES = 10 * 1024;
export const MAX_HEADER_NAME_LENGTH = 256;
export const MAX_HEADER_VALUE_LENGTH = 8 * 1024;
/** How much of a rejected name a response may quote back. */
const QUOTED_NAME_LENGTH = 64;

/** The decoded size of the body, without decoding it. */
export function bodyBytes(event: Pick<Event, 'body' | 'isBase64Encoded'>): number {
  const { body } = event;
  if (body === null || body === undefined) return 0;
  if (!event.isBase64Encoded) return Buffer.byteLength(body, 'utf8');
  return Buffer.byteLength(body, 'base64');
}

function headerErrors(event: Pick<Event, 'headers'>): FieldError[] {
  const errors: FieldError[] = [];
  const headers = event.headers ?? {};
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (name.length > MAX_HEADER_NAME_LENGTH) {
      errors.push({
        path: 'headers',
        message: `a header name is longer than ${MAX_HEADER_NAME_LENGTH} characters`,
      });
    } else if ((value?.length ?? 0) > MAX_HEADER_VALUE_LENGTH) {
      errors.push({
        path: `headers.${name.toLowerCase().slice(0, QUOTED_NAME_LENGTH)}`,
        message: `must be at most ${MAX_HEADER_VALUE_LENGTH} characters long`,
      });
    }
  }
  return errors;
}

/**
 * Runs right after authentication, before anything parses the request: refuses what no valid
 * request has (an oversized body, a body on a route that takes none, oversized headers, path
 * parameters on a route that has none) so that nothing downstream has to cope with it.
 */
export function guardRequest(route: {
  takesBody: boolean;
  takesPath: boolean;
}): MiddlewareObj<Event, Result> {
  return {
    name: 'guardRequest',
    before: ({ event }) => {
      const bytes = bodyBytes(event);
      if (bytes > MAX_BODY_BYTES) throw new PayloadTooLargeError(MAX_BODY_BYTES);
      const errors = headerErrors(event);
      if (!route.takesBody && bytes > 0) {
        errors.push({ path: 'body', message: 'must be empty: this route takes no request body' });
      }
      if (!route.takesPath) {
        for (const name of Object.keys(event.pathParameters ?? {})) {
          errors.push({
            path: `path.${name.slice(0, QUOTED_NAME_LENGTH)}`,
            message: 'is not a known path parameter',
          });
        }
      }
      if (errors.length > 0) throw new InvalidRequestError(errors);
    },
  };
}
