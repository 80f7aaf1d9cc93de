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

const nullableString = z.optional(z.nullable(z.string()));
const id = z.union([z.number(), z.string()]);

/** Charge result (seed 2.3). */
export const ChargeResult = z.looseObject({
  order_id: z.string(),
  items: nullableString,
  currency: z.string(),
  amount: z.number(),
  custom_1: nullableString,
  custom_2: nullableString,
  payment_id: z.nullable(id),
  status_code: z.number(),
  status_message: nullableString,
  md5sig: nullableString,
  authorization_token: nullableString,
});
export type ChargeResult = z.infer<typeof ChargeResult>;

/** Capture result (seed 2.5). */
export const CaptureResult = z.looseObject({
  status_code: z.number(),
  status_message: nullableString,
  payment_id: z.nullable(id),
  currency: z.string(),
  amount: z.number(),
  captured_amount: z.number(),
  items: nullableString,
  order_id: z.string(),
  md5sig: nullableString,
  custom_1: nullableString,
  custom_2: nullableString,
});
export type CaptureResult = z.infer<typeof CaptureResult>;

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
