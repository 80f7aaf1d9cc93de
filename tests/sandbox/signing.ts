// docs/payhere.md's formulas written out again with node:crypto, so that the tests check the sandbox's
// signatures against the documentation rather than against the sandbox's own code.
import { createHash } from 'node:crypto';

export const MERCHANT_ID = '1211149';
export const MERCHANT_SECRET = 'MERCHANT_SECRET_EXAMPLE';

function upperMd5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex').toUpperCase();
}

/** md5sig over the signed fields of a received notification. */
export function expectedMd5sig(fields: Record<string, string>, secret = MERCHANT_SECRET): string {
  return upperMd5(
    `${fields.merchant_id}${fields.order_id}${fields.payhere_amount}${fields.payhere_currency}${fields.status_code}${upperMd5(secret)}`,
  );
}

/** The checkout `hash` the app hands PayHere's SDK; `amount` already has its two decimals. */
export function checkoutHashOf(
  orderId: string,
  amount: string,
  currency: string,
  { merchantId = MERCHANT_ID, secret = MERCHANT_SECRET } = {},
): string {
  return upperMd5(`${merchantId}${orderId}${amount}${currency}${upperMd5(secret)}`);
}

/** A checkout as the app hands it to PayHere's SDK, hashed for its amount (0.00 when none). */
export function checkoutRequest(notifyUrl: string, overrides: Record<string, unknown> = {}) {
  const request: Record<string, unknown> = {
    kind: 'payment',
    outcome: 'success',
    merchant_id: MERCHANT_ID,
    order_id: 'ORDER-1001',
    items: 'Toy Car',
    currency: 'LKR',
    amount: 1000,
    notify_url: notifyUrl,
    custom_1: 'cart-42',
    custom_2: null,
    ...overrides,
  };
  const amount = typeof request.amount === 'number' ? request.amount.toFixed(2) : '0.00';
  request.hash ??= checkoutHashOf(String(request.order_id), amount, String(request.currency), {
    merchantId: String(request.merchant_id),
  });
  return request as any;
}
