import * as z from 'zod/mini';
import { CURRENCIES, customerDetails, itemList, metadata, money, printable, text } from './fields.ts';

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
      .url({ protocol: /^https$/, error: 'must be an https URL' })
      // The URL parser also accepts "https:host"; PayHere gets the text as written.
      .check(z.maxLength(2048), z.regex(/^https:\/\//, { message: 'must be an https URL' })),
  ),
  itemList: z.optional(itemList()),
  /** Kept on the order; never sent to PayHere (its charge takes no customer fields: the card is the customer's). */
  customer_details: z.optional(customerDetails()),
  /** The merchant's own, kept on the order; never sent to PayHere. */
  metadata: z.optional(metadata()),
});
export type ChargeRequest = z.infer<typeof ChargeRequest>;
