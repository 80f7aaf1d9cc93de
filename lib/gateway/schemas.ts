import * as z from 'zod/mini';

/**
 * Upstream answers, parsed before use. Objects are loose: PayHere may add fields at any time and
 * an extra field must never turn a completed payment into an error.
 */

/** Every answer except token errors: `{status, msg, data}`. `status` stays a plain number: unknown values are mapped, not rejected. */
export const UpstreamEnvelope = z.looseObject({
  status: z.number(),
  msg: z.optional(z.nullable(z.string())),
  data: z.optional(z.unknown()),
});
export type UpstreamEnvelope = z.infer<typeof UpstreamEnvelope>;

/** OAuth errors of the token endpoint and of Bearer checks. */
export const OAuthError = z.looseObject({
  error: z.string(),
  error_description: z.optional(z.string()),
});

export const TokenAnswer = z.looseObject({
  access_token: z.string().check(z.minLength(1)),
  token_type: z.optional(z.string()),
  expires_in: z.number().check(z.positive()),
});
export type TokenAnswer = z.infer<typeof TokenAnswer>;

/** PayHere's ids: 12-digit numbers, sometimes sent as strings. */
const id = z.union([z.number(), z.string()]);

/**
 * The code that decides a payment's outcome: a number, or (PayHere has not documented that it never
 * does) the same number as a string.
 */
const StatusCode = z.union([z.int(), z.string().check(z.regex(/^-?[0-9]{1,3}$/))]);

/**
 * Charge and capture results (seed 2.3, 2.5): only `status_code` decides the outcome, so only it is
 * required; every other field is passed on as PayHere sent it (an amount as a string, a missing
 * md5sig must not turn a completed payment into an unknown one).
 */
export const ChargeResult = z.looseObject({ status_code: StatusCode });
export type ChargeResult = z.infer<typeof ChargeResult> & {
  payment_id?: unknown;
  order_id?: unknown;
  authorization_token?: unknown;
  status_message?: unknown;
};

export const CaptureResult = ChargeResult;
export type CaptureResult = ChargeResult;

/** A result's status code as a number. */
export function statusCodeOf(result: { status_code: number | string }): number {
  return Number(result.status_code);
}

/** A PayHere id (number or digit string) as the ledger keeps it, or null when there is none usable. */
export function idOf(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return String(value);
  if (typeof value === 'string' && /^[1-9][0-9]{0,19}$/.test(value)) return value;
  return null;
}

/** Payment records (seed 2.6): identity and money fields checked, the rest passed through as PayHere sent it. */
export const PaymentRecord = z.looseObject({
  payment_id: id,
  order_id: z.string(),
  status: z.string(),
  currency: z.string(),
  amount: z.number(),
});
export type PaymentRecord = z.infer<typeof PaymentRecord>;

export const PaymentList = z.array(PaymentRecord);

export const SubscriptionRecord = z.looseObject({
  subscription_id: id,
  order_id: z.string(),
  status: z.string(),
  currency: z.string(),
  amount: z.number(),
});
export type SubscriptionRecord = z.infer<typeof SubscriptionRecord>;

export const SubscriptionList = z.array(SubscriptionRecord);

/** Refund: the refund number, or null when an authorization was released. */
export const RefundResult = z.nullable(z.optional(id));
