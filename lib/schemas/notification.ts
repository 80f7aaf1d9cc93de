import * as z from 'zod/mini';

/**
 * A PayHere notification (docs/payhere.md "Notifications"), form-encoded, every value a string. The
 * signed fields are required and checked for their form; the others are optional and taken only
 * as far as a verified notification for a known order allows (lib/notifications/receiver.ts).
 * Fields PayHere may add are tolerated.
 */
const field = (max: number) => z.string().check(z.maxLength(max));
const optional = (max = 255) => z.optional(field(max));

export const Notification = z.looseObject({
  merchant_id: z.string().check(z.regex(/^[0-9A-Za-z]{1,32}$/, { message: 'must be a merchant id' })),
  order_id: z
    .string()
    .check(
      z.minLength(1),
      z.maxLength(64),
      z.regex(/^[\x20-\x7E]*$/, { message: 'must contain printable characters only' }),
    ),
  payhere_amount: z
    .string()
    .check(z.regex(/^[0-9]{1,12}\.[0-9]{2}$/, { message: 'must be an amount with two decimals' })),
  payhere_currency: z.string().check(z.regex(/^[A-Z]{3}$/, { message: 'must be a currency code' })),
  status_code: z.string().check(z.regex(/^-?[0-9]{1,3}$/, { message: 'must be a status code' })),
  md5sig: z.string().check(z.regex(/^[0-9A-Fa-f]{32}$/, { message: 'must be an MD5 digest' })),
  payment_id: optional(32),
  custom_1: optional(),
  custom_2: optional(),
  status_message: optional(),
  method: optional(32),
  card_holder_name: optional(),
  card_no: optional(32),
  card_expiry: optional(16),
  recurring: optional(8),
  customer_token: optional(128),
  authorization_token: optional(64),
  captured_amount: optional(32),
  subscription_id: optional(32),
  message_type: optional(64),
  item_recurrence: optional(32),
  item_duration: optional(32),
  item_rec_status: optional(16),
  item_rec_date_next: optional(32),
  item_rec_install_paid: optional(16),
});
export type Notification = z.infer<typeof Notification>;
