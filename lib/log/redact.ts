/**
 * What the log must never hold, removed from every line however it got there: by field name
 * (secrets, tokens, bodies, a customer's personal fields, the merchant's metadata) and by the look
 * of a value (bearer tokens, JWTs, card numbers, emails, phone numbers). Field names come first
 * because a UUID token looks like any UUID.
 */

const REDACTED = '[redacted]';
const MAX_DEPTH = 8;

/** Field names, lower-cased with separators removed; `token` covers customer_token, authorization_token... */
const SECRET_NAME =
  /secret|password|passwd|token|authorization|cookie|apikey|credential|signature|md5sig|cvv|cvc/;
/** Identifiers of secrets, not their values. */
const PUBLIC_NAMES = new Set(['secretid', 'secretarn']);
const BODY_NAMES = new Set(['body', 'rawbody', 'requestbody', 'responsebody']);
const CARD_NAMES = new Set(['cardno', 'cardnumber', 'pan']);
const EMAIL_NAMES = new Set(['email', 'emailaddress']);
const PHONE_NAMES = new Set(['phone', 'mobile', 'telephone', 'phonenumber']);
/**
 * A customer's personal fields (an order's `customer_details`, PayHere's checkout form and
 * notifications) and the merchant's own `metadata`, which may hold anything: never in a log.
 */
const PERSONAL_NAMES = new Set([
  'customerdetails',
  'firstname',
  'lastname',
  'cardholdername',
  'address',
  'deliveryaddress',
  'city',
  'deliverycity',
  'metadata',
]);

const CREDENTIAL = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;
const JWT = /\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g;
/** 13–19 digits, run together or in groups of four with one kind of separator. */
const CARD = /\b(?:\d{13,19}|\d{4}([ -])\d{4}\1\d{4}\1\d{1,7})\b/g;
const EMAIL = /([A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)/g;
/** International (+94 77 123 4567) or Sri Lankan local (0771234567) numbers. */
const PHONE = /(?<![\w+])(?:\+\d[\d -]{6,16}\d|0\d{9})\b/g;

function lastDigits(value: string, count: number): string {
  return value.replace(/\D/g, '').slice(-count);
}

export function maskCard(value: string): string {
  return `************${lastDigits(value, 4)}`;
}

/** `text` with anything shaped like a card number masked to its last four digits. */
export function maskCards(text: string): string {
  return text.replace(CARD, maskCard);
}

export function maskEmail(value: string): string {
  return value.replace(EMAIL, '$1***@$2');
}

export function maskPhone(value: string): string {
  const digits = value.replace(/\D/g, '');
  return `${value.startsWith('+') ? '+' : ''}${digits.slice(0, 2)}******${digits.slice(-2)}`;
}

/** A free-text value with credentials removed and card numbers, emails and phone numbers masked. */
export function redactText(text: string): string {
  return text
    .replace(CREDENTIAL, (_, scheme: string) => `${scheme} ${REDACTED}`)
    .replace(JWT, REDACTED)
    .replace(CARD, maskCard)
    .replace(EMAIL, '$1***@$2')
    .replace(PHONE, maskPhone);
}

function redactField(name: string, value: unknown, depth: number): unknown {
  const key = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  if (value === null || value === undefined) return value;
  if (BODY_NAMES.has(key) || PERSONAL_NAMES.has(key) || (SECRET_NAME.test(key) && !PUBLIC_NAMES.has(key)))
    return REDACTED;
  if (typeof value === 'string') {
    if (CARD_NAMES.has(key)) return maskCard(value);
    if (EMAIL_NAMES.has(key)) return maskEmail(value).includes('***') ? maskEmail(value) : REDACTED;
    if (PHONE_NAMES.has(key)) return maskPhone(value);
  }
  return redact(value, depth + 1);
}

/** A copy of `value` that is safe to log. */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return REDACTED;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Error) return redact({ name: value.name, message: value.message }, depth + 1);
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map(([name, item]) => [name, redactField(name, item, depth)]),
  );
}
