import type { APIGatewayProxyResult } from 'aws-lambda';

/**
 * The envelope's `status` (docs/contract.md "Envelope"): 1 done, 0 accepted/not final, -1 failed,
 * -2 not authenticated/allowed.
 */
export type EnvelopeStatus = 1 | 0 | -1 | -2;

export interface Envelope<T = unknown> {
  status: EnvelopeStatus;
  msg: string;
  data: T;
}

/**
 * On every answer, and not for a caller to change: no cache (a phone's HTTP cache, a proxy) may
 * keep a payment record, and no client may read the JSON as anything else.
 */
export const ANSWER_HEADERS = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' } as const;

/** Every response of the service, success or failure, goes through here. */
export function respond<T>(
  httpStatus: number,
  envelope: Envelope<T>,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return {
    statusCode: httpStatus,
    headers: { 'Content-Type': 'application/json', ...headers, ...ANSWER_HEADERS },
    body: JSON.stringify(envelope),
  };
}

/**
 * A successful answer that is not JSON (the reconciliation report as CSV, docs/contract.md
 * "Reconciliation"): the same headers as every answer, its own media type. Failures stay envelopes.
 */
export function okText(
  body: string,
  contentType: string,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return { statusCode: 200, headers: { 'Content-Type': contentType, ...headers, ...ANSWER_HEADERS }, body };
}

export function ok<T>(msg: string, data: T, headers: Record<string, string> = {}): APIGatewayProxyResult {
  return respond(200, { status: 1, msg, data }, headers);
}
