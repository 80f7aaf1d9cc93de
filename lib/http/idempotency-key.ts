import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { FieldError } from '../envelope/errors.ts';
import { headerValues } from './headers.ts';

/** The header as docs/contract.md "Idempotency" names it; errors name it so, whatever case the client used. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** 1–255 characters a client can generate and log without escaping (a UUID fits). */
export const VALID_KEY = /^[A-Za-z0-9\-_.:]{1,255}$/;

const MALFORMED = 'must be 1 to 255 characters of A-Z, a-z, 0-9, -, _, . and :';

export type KeyResult = { ok: true; key: string } | { ok: false; errors: FieldError[] };

/** The Idempotency-Key of a request; two different keys on one request are ambiguous and refused. */
export function readIdempotencyKey(
  event: Pick<APIGatewayProxyEvent, 'headers' | 'multiValueHeaders'>,
): KeyResult {
  const values = new Set(headerValues(event, IDEMPOTENCY_HEADER));
  if (values.size === 0) return refuse('is required on this route: send a new unique key per request');
  if (values.size > 1) return refuse('must be sent once');
  const [key] = values as unknown as [string];
  return VALID_KEY.test(key) ? { ok: true, key } : refuse(MALFORMED);
}

function refuse(message: string): KeyResult {
  return { ok: false, errors: [{ path: IDEMPOTENCY_HEADER, message }] };
}
