import * as z from 'zod/mini';

/** Printable ASCII, as PayHere's order ids and our path ids must be. */
const PRINTABLE = /^[\x20-\x7E]*$/;

const printable = (min: number, max: number) =>
  z
    .string()
    .check(
      z.minLength(min),
      z.maxLength(max),
      z.regex(PRINTABLE, { message: 'must contain printable characters only' }),
    );

const text = (min: number, max: number) => z.string().check(z.minLength(min), z.maxLength(max));

/** A money amount: a finite number with at most two decimals, small enough to stay exact in cents. */
const money = (options: { positive: boolean }) =>
  z
    .number()
    .check(
      options.positive ? z.positive() : z.nonnegative(),
      z.refine(hasAtMostTwoDecimals, { message: 'must have at most 2 decimals' }),
    );

function hasAtMostTwoDecimals(n: number): boolean {
  // The decimal text, not float arithmetic: 134217728.14 * 100 is not an integer in binary.
  return /^\d+(\.\d{1,2})?$/.test(String(n)) && Number.isSafeInteger(Math.round(n * 100));
}

export const CURRENCIES = ['LKR', 'USD', 'EUR', 'GBP', 'AUD'] as const;

const uuid = z.string().check(
  z.regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, {
    message: 'must be a UUID',
  }),
);

const itemLine = z.strictObject({
  name: text(1, 255),
  number: text(1, 64),
  quantity: z.int().check(z.gte(1)),
  unit_amount: money({ positive: false }),
});

export const ChargeRequest = z.strictObject({
  type: z.enum(['PAYMENT', 'AUTHORIZE']),
  order_id: printable(1, 64),
  items: text(1, 255),
  currency: z.enum(CURRENCIES),
  amount: money({ positive: true }),
  customer_token: text(1, 128),
  custom_1: z.optional(z.nullable(text(0, 255))),
  custom_2: z.optional(z.nullable(text(0, 255))),
  notify_url: z.optional(
    z
      .url({
        protocol: /^https$/,
        error: 'must be an https URL',
      })
      .check(z.maxLength(2048)),
  ),
  itemList: z.optional(z.array(itemLine).check(z.maxLength(100))),
});
export type ChargeRequest = z.infer<typeof ChargeRequest>;

export const CaptureRequest = z
  .strictObject({
    authorization_token: uuid,
    amount: money({ positive: true }),
    deduction_details: z.optional(text(1, 255)),
    description: z.optional(text(1, 255)),
  })
  .check(
    z.superRefine((body, ctx) => {
      const { deduction_details: details, description } = body;
      if (details === undefined && description === undefined) {
        ctx.issues.push({
          code: 'custom',
          path: ['deduction_details'],
          message: 'is required (the reason for the capture; `description` is accepted as well)',
          input: body,
        });
      } else if (details !== undefined && description !== undefined && details !== description) {
        ctx.issues.push({
          code: 'custom',
          path: ['description'],
          message: 'must equal deduction_details when both are given (they are the same field)',
          input: body,
        });
      }
    }),
  );
export type CaptureRequest = z.infer<typeof CaptureRequest>;

/** Upstream shape of a capture: the reason always travels as `deduction_details`. */
export function captureUpstreamBody(request: CaptureRequest) {
  return {
    authorization_token: request.authorization_token,
    amount: request.amount,
    deduction_details: (request.deduction_details ?? request.description) as string,
  };
}

const paymentId = z.union([
  z.int().check(z.positive()),
  z.string().check(
    z.regex(/^[1-9][0-9]*$/, { message: 'must be a positive integer' }),
    // Sent upstream as a JSON number: a larger one would arrive as a different payment id.
    z.refine((digits) => Number.isSafeInteger(Number(digits)), {
      message: 'is too large to be a payment id',
    }),
  ),
]);

export const RefundRequest = z
  .strictObject({
    payment_id: z.optional(paymentId),
    authorization_token: z.optional(uuid),
    description: text(1, 255),
    amount: z.optional(money({ positive: true })),
  })
  .check(
    z.superRefine((body, ctx) => {
      const hasPayment = body.payment_id !== undefined;
      const hasAuthorization = body.authorization_token !== undefined;
      if (hasPayment === hasAuthorization) {
        ctx.issues.push({
          code: 'custom',
          path: [hasPayment ? 'authorization_token' : 'payment_id'],
          message:
            'give exactly one of payment_id (refund a payment) or authorization_token (release a hold)',
          input: body,
        });
      }
      if (hasAuthorization && body.amount !== undefined) {
        ctx.issues.push({
          code: 'custom',
          path: ['amount'],
          message: 'is only allowed when refunding a payment (payment_id); a hold is released in full',
          input: body,
        });
      }
    }),
  );
export type RefundRequest = z.infer<typeof RefundRequest>;

/** Upstream shape of a refund: ids travel as numbers, `amount` only for a partial payment refund. */
export function refundUpstreamBody(request: RefundRequest) {
  if (request.authorization_token !== undefined) {
    return { authorization_token: request.authorization_token, description: request.description };
  }
  return {
    payment_id: Number(request.payment_id),
    description: request.description,
    ...(request.amount === undefined ? {} : { amount: request.amount }),
  };
}

export const OrderPath = z.strictObject({ id: printable(1, 64) });
export const SubscriptionPath = z.strictObject({
  id: z.string().check(
    z.regex(/^[0-9]{1,20}$/, { message: 'must be a subscription id (digits only)' }),
    // Sent upstream as a JSON number: a larger one would reach a different subscription.
    z.refine((id) => !/^[0-9]+$/.test(id) || Number.isSafeInteger(Number(id)), {
      message: 'is too large to be a subscription id',
    }),
  ),
});
