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
