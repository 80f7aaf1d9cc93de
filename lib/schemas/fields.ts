import * as z from 'zod/mini';

/**
 * Field rules shared by the request schemas. Each route's schema lives in a module of its own, so a
 * function's bundle builds only the schemas its route uses (zod/mini schemas are built at import).
 */

/** Printable ASCII, as PayHere's order ids and our path ids must be. */
const PRINTABLE = /^[\x20-\x7E]*$/;

export const printable = (min: number, max: number) =>
  z
    .string()
    .check(
      z.minLength(min),
      z.maxLength(max),
      z.regex(PRINTABLE, { message: 'must contain printable characters only' }),
    );

export const text = (min: number, max: number) => z.string().check(z.minLength(min), z.maxLength(max));

/** A money amount: a finite number with at most two decimals, small enough to stay exact in cents. */
export const money = (options: { positive: boolean }) =>
  z
    .number()
    .check(
      options.positive ? z.positive() : z.nonnegative(),
      z.refine(hasAtMostTwoDecimals, { message: 'must have at most 2 decimals' }),
    );

function hasAtMostTwoDecimals(n: number): boolean {
  // The decimal text, not float arithmetic: 134217728.14 * 100 is not an integer in binary.
  return /^\d+(\.\d{1,2})?$/.test(String(n)) && Number.isSafeInteger(Math.round(n * 100));
}

export const CURRENCIES = ['LKR', 'USD', 'EUR', 'GBP', 'AUD'] as const;

export const uuid = () =>
  z.string().check(
    z.regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, {
      message: 'must be a UUID',
    }),
  );

/**
 * An id given as digits and sent upstream as a JSON number: one beyond 2^53 would arrive as a
 * different id, so it is refused. Only digit strings are judged; the schema's regex refuses others.
 */
export const safeIntegerDigits = (what: string) =>
  z.refine<string>((id) => !/^[0-9]+$/.test(id) || Number.isSafeInteger(Number(id)), {
    message: `is too large to be ${what}`,
  });

/** One line of an order's items, as PayHere's charge takes its `itemList` (a checkout takes the same). */
export const itemLine = z.strictObject({
  name: text(1, 255),
  number: text(1, 64),
  quantity: z.int().check(z.gte(1)),
  unit_amount: money({ positive: false }),
});

/** At most this many lines in an order's `itemList`. */
export const MAX_ITEM_LINES = 100;

export const itemList = () => z.array(itemLine).check(z.maxLength(MAX_ITEM_LINES));

/**
 * The customer's personal fields, as PayHere's checkout form names them (its limits are not
 * published: these are the service's). Personal data: shown only to the merchant and the order's
 * own customer, never logged.
 */
export const customerDetails = () =>
  z.strictObject({
    first_name: z.optional(text(1, 100)),
    last_name: z.optional(text(1, 100)),
    email: z.optional(z.email().check(z.maxLength(254))),
    phone: z.optional(text(1, 32).check(z.regex(/^\+?[0-9 ()-]+$/, { message: 'must be a phone number' }))),
    address: z.optional(text(1, 255)),
    city: z.optional(text(1, 100)),
    country: z.optional(text(1, 100)),
  });

/** The merchant's own metadata on an order: at most this many keys, of these lengths. */
export const METADATA_BOUNDS = { keys: 20, keyLength: 40, valueLength: 255 } as const;
const METADATA_KEY = /^[A-Za-z0-9_.:-]+$/;

/**
 * The merchant's own key/value pairs on an order (never sent to PayHere, never shown to a
 * customer): at most 20 keys of 1–40 characters of `A-Za-z0-9_.:-`, each value a string of at most
 * 255 characters (as `custom_1/2`): metadata at its bounds is about 6 KB of JSON, so it fits a request
 * (10 KiB at most) with the order's other fields, and a list page of 100 orders one DynamoDB query.
 */
export const metadata = () =>
  z.record(z.string(), z.string()).check(
    z.superRefine((value, ctx) => {
      const keys = Object.keys(value);
      if (keys.length > METADATA_BOUNDS.keys)
        ctx.issues.push({
          code: 'custom',
          message: `must have at most ${METADATA_BOUNDS.keys} keys`,
          input: value,
        });
      for (const key of keys) {
        if (key.length < 1 || key.length > METADATA_BOUNDS.keyLength || !METADATA_KEY.test(key))
          ctx.issues.push({
            code: 'custom',
            path: [key],
            message: `keys must be 1 to ${METADATA_BOUNDS.keyLength} characters of A-Za-z0-9_.:-`,
            input: key,
          });
        if ((value[key] ?? '').length > METADATA_BOUNDS.valueLength)
          ctx.issues.push({
            code: 'custom',
            path: [key],
            message: `must be at most ${METADATA_BOUNDS.valueLength} characters`,
            input: value[key],
          });
      }
    }),
  );
