import * as z from 'zod/mini';
import { printable, safeIntegerDigits } from './fields.ts';

export const OrderPath = z.strictObject({ id: printable(1, 64) });

export const SubscriptionPath = z.strictObject({
  id: z
    .string()
    .check(
      z.regex(/^[0-9]{1,20}$/, { message: 'must be a subscription id (digits only)' }),
      safeIntegerDigits('a subscription id'),
    ),
});

export const CheckoutPath = z.strictObject({ order_id: printable(1, 64) });

/** A PayHere payment id: digits that fit a JavaScript integer (leading zeros do not matter). */
export const PaymentPath = z.strictObject({
  id: z
    .string()
    .check(
      z.regex(/^[0-9]{1,20}$/, { message: 'must be a payment id (digits only)' }),
      safeIntegerDigits('a payment id'),
    ),
});
