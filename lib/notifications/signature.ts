import { createHash, timingSafeEqual } from 'node:crypto';

/** The fields PayHere signs (docs/payhere.md "Signature"): nothing else in a notification is. */
export interface SignedFields {
  merchant_id: string;
  order_id: string;
  /** Exactly as sent: "1000.00" and "1000.0" sign differently. */
  payhere_amount: string;
  payhere_currency: string;
  status_code: string;
}

const upperMd5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex').toUpperCase();

/** md5sig = UPPER(MD5(merchant_id + order_id + payhere_amount + payhere_currency + status_code + UPPER(MD5(secret)))). */
export function notificationSignature(fields: SignedFields, merchantSecret: string): string {
  return upperMd5(
    fields.merchant_id +
      fields.order_id +
      fields.payhere_amount +
      fields.payhere_currency +
      fields.status_code +
      upperMd5(merchantSecret),
  );
}

/**
 * Whether `md5sig` is the signature of `fields` under one of `secrets` (the merchant's, then its
 * apps'). Every secret is compared, in constant time, whichever matched: the answer's timing tells
 * nothing about how close a forgery came. A hex digest is compared without regard to case.
 */
export function verifySignature(fields: SignedFields, md5sig: string, secrets: readonly string[]): boolean {
  const received = Buffer.from(md5sig.toUpperCase(), 'utf8');
  if (received.length !== 32) return false;
  let matched = false;
  for (const secret of secrets) {
    if (timingSafeEqual(received, Buffer.from(notificationSignature(fields, secret), 'utf8'))) matched = true;
  }
  return matched;
}
