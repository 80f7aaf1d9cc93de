import { log } from './log.ts';

/**
 * The audit trail (docs/operator.md "Operating it"): one `info` line, message `audit`, per answer of a route
 * that moves money or creates an order, and per notification that changed an order. With the
 * request id, and the caller's `sub` and role, that every line of the request carries, it answers
 * "who refunded payment 320027150501, and when?". It goes through the log's redaction like every
 * line: no token, no card number.
 */
export interface AuditSubject {
  orderId?: string;
  paymentId?: string;
  subscriptionId?: string;
  /** PayHere's refund number. */
  refundId?: string;
  amount?: number | string;
  currency?: string;
  /** What kind of operation or order (PAYMENT or AUTHORIZE, refund or release, a checkout's kind). */
  kind?: string;
  /** Who owns what the request created, when a merchant named a customer with On-Behalf-Of. */
  onBehalfOf?: string;
}

/** A string or number field of an answer's `data`, as text (ids are numbers at PayHere). */
export function fieldOf(data: unknown, name: string): string | undefined {
  const value =
    typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[name] : undefined;
  return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
}

/** done, pending, declined, unknown (money may have moved), rejected (4xx), failed (5xx, nothing moved). */
export type Outcome = 'done' | 'pending' | 'declined' | 'unknown' | 'rejected' | 'failed';

export interface AuditLine extends AuditSubject {
  route: string;
  /** A notification: `recorded` when it changed an order, `unchanged` when it was not evidence for a change. */
  outcome: Outcome | 'recorded' | 'unchanged';
  replayed: boolean;
  httpStatus?: number;
  /** The failure's `data.code`. */
  code?: string;
  [field: string]: unknown;
}

export function audit(line: AuditLine): void {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(line))
    if (value !== undefined && value !== null) fields[name] = value;
  log.info('audit', fields);
}
