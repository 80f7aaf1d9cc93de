// The control calls that play PayHere's customer and scheduler: their bodies, checked as strictly as
// Merchant API requests, and a checkout also as PayHere's checkout checks it (merchant id, hash).
import * as z from 'zod/mini';
import { ACCEPTED_CURRENCIES, formatAmount, isValidAmount } from './money.ts';
import type { Signer } from './notifications.ts';
import { isDuration, isRecurrence } from './recurrence.ts';
import { checkoutHash } from './signature.ts';
import { check } from './validate.ts';

const identifier = z.string().check(z.minLength(1));
const optionalText = z.optional(z.nullable(z.string()));
// Whether the sandbox may post to a URL is decided at delivery (deliveries.ts); here it must be one.
const url = z.url();

const deliverySchema = z.strictObject({
  duplicate: z.optional(z.boolean()),
  delayMs: z.optional(z.int().check(z.nonnegative(), z.lte(60_000))),
  tamper: z.optional(z.record(z.string(), z.string())),
  badSignature: z.optional(z.boolean()),
  signWith: z.optional(identifier),
});

/** How a notification departs from PayHere's normal delivery (sandbox/README.md "Delivery options"). */
export type DeliveryOptions = z.infer<typeof deliverySchema>;

const checkoutSchema = z.strictObject({
  kind: z.enum(['payment', 'preapproval', 'authorize', 'recurring']),
  outcome: z.enum(['success', 'decline', 'cancel', 'pending']),
  merchant_id: identifier,
  order_id: identifier,
  items: identifier,
  currency: z.string(),
  amount: z.optional(z.nullable(z.number())),
  hash: z.string(),
  notify_url: url,
  custom_1: optionalText,
  custom_2: optionalText,
  recurrence: z.optional(z.string()),
  duration: z.optional(z.string()),
  // A subscription's fee charged once, with its first payment (not covered by the hash).
  startup_fee: z.optional(z.number()),
  // The JavaScript SDK's flag for PayHere's sandbox; this one is always a sandbox.
  sandbox: z.optional(z.boolean()),
  delivery: z.optional(deliverySchema),
});

export type CheckoutInput = z.input<typeof checkoutSchema>;
export type CheckoutRequest = z.infer<typeof checkoutSchema>;
export type CheckoutKind = CheckoutRequest['kind'];
export type CheckoutOutcome = CheckoutRequest['outcome'];

const installmentSchema = z.strictObject({
  outcome: z.enum(['success', 'decline']),
  notify_url: z.optional(url),
  delivery: z.optional(deliverySchema),
});

export type InstallmentInput = z.input<typeof installmentSchema>;
export type InstallmentRequest = z.infer<typeof installmentSchema>;

const subscriptionEndSchema = z.strictObject({
  notify_url: z.optional(url),
  delivery: z.optional(deliverySchema),
});

export type SubscriptionEndInput = z.input<typeof subscriptionEndSchema>;
export type SubscriptionEndRequest = z.infer<typeof subscriptionEndSchema>;

const pendingDecisionSchema = z.strictObject({
  outcome: z.enum(['success', 'failure']),
  payment_id: z.optional(z.int()),
  notify_url: z.optional(url),
  delivery: z.optional(deliverySchema),
});

export type PendingDecisionInput = z.input<typeof pendingDecisionSchema>;
export type PendingDecisionRequest = z.infer<typeof pendingDecisionSchema>;

const refundAdvanceSchema = z.strictObject({
  status: z.optional(z.enum(['REFUND PROCESSING', 'REFUNDED'])),
  refund_id: z.optional(z.int()),
});

export type RefundAdvanceInput = z.input<typeof refundAdvanceSchema>;
export type RefundAdvanceRequest = z.infer<typeof refundAdvanceSchema>;

const clockSchema = z.strictObject({ clockOffsetMs: z.int() });

/** Why a control call is refused: the HTTP status and `msg` of its answer. */
export interface Refusal {
  ok: false;
  status: 400 | 404;
  msg: string;
}

/** A control request as read, or a transition made, or why not. */
export type Result<T> = { ok: true; value: T } | Refusal;

export function refused(msg: string, status: Refusal['status'] = 400): Refusal {
  return { ok: false, status, msg };
}

function parsed<T>(schema: z.ZodMiniType<T>, body: unknown): Result<T> {
  const checked = check(schema, body);
  return checked.ok ? checked : refused(`Invalid request parameter: ${checked.field}`);
}

function deliveryConflict(delivery: DeliveryOptions | undefined): string | undefined {
  if (delivery?.badSignature && delivery.signWith !== undefined) {
    return 'Invalid request parameter: delivery.signWith (not with badSignature)';
  }
  return undefined;
}

/** The order of checks: fields, the kind's own fields, amount and currency, merchant id, hash. */
export function verifyCheckout(body: unknown, merchant: Signer): Result<CheckoutRequest> {
  const checked = parsed(checkoutSchema, body);
  if (!checked.ok) return checked;
  const checkout = checked.value;
  const recurring = checkout.kind === 'recurring';

  if (checkout.amount == null && checkout.kind !== 'preapproval') {
    return refused('Invalid request parameter: amount');
  }
  if (recurring ? !isRecurrence(checkout.recurrence ?? '') : checkout.recurrence !== undefined) {
    return refused('Invalid request parameter: recurrence');
  }
  if (recurring ? !isDuration(checkout.duration ?? '') : checkout.duration !== undefined) {
    return refused('Invalid request parameter: duration');
  }
  if (checkout.startup_fee !== undefined && (!recurring || !isValidAmount(checkout.startup_fee))) {
    return refused('Invalid request parameter: startup_fee');
  }
  if (recurring && checkout.outcome === 'pending') {
    return refused('A recurring checkout cannot end pending: its first installment is charged at once');
  }
  const conflict = deliveryConflict(checkout.delivery);
  if (conflict) return refused(conflict);
  if (checkout.amount != null && !isValidAmount(checkout.amount)) return refused('Invalid amount');
  if (!ACCEPTED_CURRENCIES.has(checkout.currency)) return refused('Invalid currency');

  if (checkout.merchant_id !== merchant.merchantId) return refused('Invalid merchant_id');
  const expected = checkoutHash({
    merchantId: checkout.merchant_id,
    orderId: checkout.order_id,
    // A pre-approval without an amount is hashed with 0.00.
    amount: formatAmount(checkout.amount ?? 0),
    currency: checkout.currency,
    merchantSecret: merchant.merchantSecret,
  });
  if (checkout.hash !== expected) return refused('Invalid hash');
  return { ok: true, value: checkout };
}

export function verifyInstallment(body: unknown): Result<InstallmentRequest> {
  const checked = parsed(installmentSchema, body);
  const conflict = checked.ok ? deliveryConflict(checked.value.delivery) : undefined;
  return conflict ? refused(conflict) : checked;
}

export function verifySubscriptionEnd(body: unknown): Result<SubscriptionEndRequest> {
  const checked = parsed(subscriptionEndSchema, body);
  const conflict = checked.ok ? deliveryConflict(checked.value.delivery) : undefined;
  return conflict ? refused(conflict) : checked;
}

/** `POST /__sandbox/clock`: how far PayHere's clock is off the sandbox's. */
export function verifyClockOffset(body: unknown): Result<{ clockOffsetMs: number }> {
  return parsed(clockSchema, body);
}

export function verifyPendingDecision(body: unknown): Result<PendingDecisionRequest> {
  const checked = parsed(pendingDecisionSchema, body);
  const conflict = checked.ok ? deliveryConflict(checked.value.delivery) : undefined;
  return conflict ? refused(conflict) : checked;
}

/** `advanceRefunds`: to which step (default REFUNDED), and which refund (default all). */
export function verifyRefundAdvance(body: unknown): Result<RefundAdvanceRequest> {
  return parsed(refundAdvanceSchema, body);
}
