import * as z from 'zod/mini';
import { money, text, uuid } from './fields.ts';

export const CaptureRequest = z
  .strictObject({
    authorization_token: uuid(),
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
