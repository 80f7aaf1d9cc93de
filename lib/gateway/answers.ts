import { type ApiError, ConflictError, GatewayError, NotFoundError, reached } from '../envelope/errors.ts';
import type { GatewayAnswer, GatewayCall } from './client.ts';
import type { Reservation } from './reservation.ts';
import type { PaymentRecord, SubscriptionRecord } from './schemas.ts';

/**
 * PayHere's answers as the service reads them (docs/payhere.md): the Merchant API's paths, a result, a
 * refusal PayHere answered, the refusals it words its own way, and what a read may ask for.
 */
export const V1 = '/merchant/v1';

/** A refund as PayHere takes it: a payment (fully or partly) or a hold (released whole). */
export type RefundBody =
  | { payment_id: number; description: string; amount?: number }
  | { authorization_token: string; description: string };

/** Claims a payment found by reconciliation for the lost charge; false when another charge holds it. */
export type AdoptPayment = (payment: PaymentRecord) => Promise<boolean>;

export interface Result<T> {
  msg: string;
  data: T;
  /** The gateway's answer is not final yet (a search answering status 0: payment pending). */
  pending?: true;
}

/**
 * PayHere's order search answered "No payments found": the one answer that means the order has no
 * successful payment. Any other refusal of the search says nothing about the order's payments.
 */
export class NoPaymentsError extends NotFoundError {}

/** PayHere's words for an order without successful payments (status -1). */
export const NO_PAYMENTS_FOUND = /^\s*No payments found\.?\s*$/i;

/** PayHere's records answered, and show nothing of the money request (its settlement decides when that means not done). */
export const NOTHING = 'nothing';

/** A refusal PayHere answered: the request reached it and was not processed. */
export const refused = <E extends ApiError>(error: E): E => reached(error, 'answered');

/** PayHere's documented capture refusals that are about state (docs/payhere.md "Capture"). */
/** A capture's `data.status_code` when PayHere captured the hold. */
export const CAPTURED = 2;
/** A capture's `data.status_code`s that are its outcome: captured, or failed (-1, -2); 0 is PayHere's "unknown". */
export const CAPTURE_ANSWERS: readonly number[] = [CAPTURED, -1, -2];

export const ALREADY_SETTLED = /^Authorization is already (CAPTURED|REFUNDED)\.?$/i;

/**
 * `reconciliation`: the read settles money (a lost money request, a report the settle job checks),
 * and draws on the budget's reserved share, which other reads cannot take.
 */
export interface ReadOptions {
  reconciliation?: boolean;
  /** The share and slot taken beside the read's lookup of a shared answer (GatewayClient.reserve). */
  reservation?: Reservation;
}

export function read(path: string, deadline: number, options: ReadOptions): GatewayCall {
  return {
    method: 'GET',
    path,
    money: false,
    deadline,
    ...(options.reconciliation ? { reconciliation: true } : {}),
    ...(options.reservation ? { reservation: options.reservation } : {}),
  };
}

/** Subscription `id` (digits, leading zeros allowed) in a list of PayHere's subscriptions. */
export function findSubscription(
  subscriptions: readonly SubscriptionRecord[],
  id: string,
): SubscriptionRecord | undefined {
  return subscriptions.find((subscription) => String(subscription.subscription_id) === String(Number(id)));
}

export function expectData<T>(
  schema: { safeParse(input: unknown): { success: true; data: T } | { success: false } },
  envelope: GatewayAnswer['envelope'],
): T {
  if (envelope.status !== 1) throw new GatewayError();
  const parsed = schema.safeParse(envelope.data);
  if (!parsed.success) throw new GatewayError();
  return parsed.data;
}

/**
 * PayHere's documented refusal envelopes (docs/payhere.md "Envelope and generic errors"): top-level
 * `status` -1, or -2 without a usable result ("Customer authentication failed", and whatever else
 * PayHere words its refusals with). The request was refused, not processed: an answer, never an
 * unknown outcome. (The exact "Authentication error" never gets here: the client reads it as a
 * refused access token.)
 */
export function isRefusal(envelope: GatewayAnswer['envelope'], usableData: boolean): boolean {
  return envelope.status === -1 || (envelope.status === -2 && !usableData);
}

export function rejection(msg: string | null | undefined, operation: string): string {
  return msg ? `The gateway refused the ${operation}: ${msg}` : `The gateway refused the ${operation}.`;
}

export function subscriptionRefusal(id: string, msg: string | null | undefined) {
  if (/not found/i.test(msg ?? '')) return new NotFoundError(`Subscription ${id} was not found.`);
  return new ConflictError(msg || `Subscription ${id} is not in a state that allows this.`);
}
