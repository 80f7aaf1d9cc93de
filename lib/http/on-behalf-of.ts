import type { APIGatewayProxyEvent } from 'aws-lambda';
import { ForbiddenError, InvalidRequestError } from '../envelope/errors.ts';
import type { Caller } from './caller.ts';
import { headerValues } from './headers.ts';

export const ON_BEHALF_OF_HEADER = 'On-Behalf-Of';

/** A token subject: what the header names must be one (lib/http/auth/verify.ts accepts up to 255). */
export const SUBJECT = /^[\x21-\x7E](?:[\x20-\x7E]{0,253}[\x21-\x7E])?$/;

/**
 * The customer a merchant creates an order for (docs/contract.md "Ownership"): only merchant tokens may send
 * it (403 otherwise), and only routes that create orders take it (400 elsewhere, where it would
 * silently mean nothing). Undefined when absent.
 */
export function readOnBehalfOf(
  event: Pick<APIGatewayProxyEvent, 'headers' | 'multiValueHeaders'>,
  caller: Caller,
  createsOrders: boolean,
): string | undefined {
  const values = new Set(headerValues(event, ON_BEHALF_OF_HEADER));
  if (values.size === 0) return undefined;
  if (caller.role !== 'merchant') {
    throw new ForbiddenError('Only a merchant token may act on behalf of a customer (On-Behalf-Of).');
  }
  const refuse = (message: string) => new InvalidRequestError([{ path: ON_BEHALF_OF_HEADER, message }]);
  if (!createsOrders)
    throw refuse('is only accepted on routes that create an order (charge, createCheckout)');
  if (values.size > 1) throw refuse('must be sent once');
  const [sub] = values as unknown as [string];
  if (!SUBJECT.test(sub)) throw refuse('must be a token subject: 1 to 255 printable characters');
  return sub;
}
