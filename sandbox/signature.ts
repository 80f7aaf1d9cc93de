import { createHash } from 'node:crypto';

function upperMd5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex').toUpperCase();
}

export interface SignedFields {
  merchantId: string;
  orderId: string;
  /** Exactly as sent: "1000.00" and "1000.0" give different signatures. */
  amount: string;
  currency: string;
  statusCode: string | number;
  merchantSecret: string;
}

/** PayHere's notification signature (docs/payhere.md "Signature"). */
export function md5sig(fields: SignedFields): string {
  return upperMd5(
    fields.merchantId +
      fields.orderId +
      fields.amount +
      fields.currency +
      String(fields.statusCode) +
      upperMd5(fields.merchantSecret),
  );
}

export interface CheckoutFields {
  merchantId: string;
  orderId: string;
  /** Two decimals, as the app formats it. */
  amount: string;
  currency: string;
  merchantSecret: string;
}

/** The `hash` PayHere's checkout and mobile SDK take with a payment request. */
export function checkoutHash(fields: CheckoutFields): string {
  return upperMd5(
    fields.merchantId + fields.orderId + fields.amount + fields.currency + upperMd5(fields.merchantSecret),
  );
}
