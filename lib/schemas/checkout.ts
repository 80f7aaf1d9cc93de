import * as z from 'zod/mini';
import { ORDER_KINDS } from '../ledger/model.ts';
import { CURRENCIES, customerDetails, itemList, metadata, money, printable, text } from './fields.ts';

/** PayHere's recurrence and duration forms: `1 Month`, `2 Week`, `1 Year`; a duration may be `Forever`. */
const PERIOD = /^[1-9][0-9]{0,2} (Day|Week|Month|Year)$/;

const period = (forever: boolean) =>
  z.string().check(
    z.refine((value) => PERIOD.test(value) || (forever && value === 'Forever'), {
      message: `must look like "1 Month" (a number and Day, Week, Month or Year${forever ? ', or Forever' : ''})`,
    }),
  );

export const CheckoutRequest = z
  .strictObject({
    kind: z.enum(ORDER_KINDS),
    order_id: z.optional(printable(1, 64)),
    items: text(1, 255),
    currency: z.enum(CURRENCIES),
    amount: z.optional(money({ positive: true })),
    recurrence: z.optional(period(false)),
    duration: z.optional(period(true)),
    custom_1: z.optional(z.nullable(text(0, 255))),
    custom_2: z.optional(z.nullable(text(0, 255))),
    /** A recurring checkout's fee charged once, with the first payment (PayHere's `startup_fee`). */
    startup_fee: z.optional(money({ positive: true })),
    itemList: z.optional(itemList()),
    customer_details: z.optional(customerDetails()),
    /** The merchant's own, kept on the order; never sent to PayHere. */
    metadata: z.optional(metadata()),
  })
  .check(
    z.superRefine((body, ctx) => {
      const issue = (path: string, message: string) =>
        ctx.issues.push({ code: 'custom', path: [path], message, input: body });
      if (body.amount === undefined && body.kind !== 'preapproval') issue('amount', 'is required');
      for (const field of ['recurrence', 'duration'] as const) {
        if (body.kind === 'recurring' && body[field] === undefined)
          issue(field, 'is required for a recurring checkout');
        if (body.kind !== 'recurring' && body[field] !== undefined)
          issue(field, 'is only allowed for a recurring checkout');
      }
      if (body.kind !== 'recurring' && body.startup_fee !== undefined)
        issue('startup_fee', 'is only allowed for a recurring checkout');
    }),
  );
export type CheckoutRequest = z.infer<typeof CheckoutRequest>;
