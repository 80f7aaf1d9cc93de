import * as z from 'zod/mini';
import { money, safeIntegerDigits, text, uuid } from './fields.ts';

const paymentId = z.union([
  z.int().check(z.positive()),
  z
    .string()
    .check(
      z.regex(/^[1-9][0-9]*$/, { message: 'must be a positive integer' }),
      safeIntegerDigits('a payment id'),
    ),
]);

export const RefundRequest = z
  .strictObject({
    payment_id: z.optional(paymentId),
    authorization_token: z.optional(uuid()),
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
