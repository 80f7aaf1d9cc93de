/** What every test's environment sets (tests/setup/environment.ts) besides its tables. */

/**
 * Each caller's share of PayHere's budget (lib/budget/caller-shares.ts) out of the way of tests
 * that are not about it, as GATEWAY_RATE_LIMIT is: the merchant's tests make far more than 10 calls
 * in 10 s. Tests of the shares set their own.
 */
export const GENEROUS_SHARES = {
  CALLER_RATE_LIMIT: '100000/1000',
  CALLER_MONEY_RATE_LIMIT: '100000/1000',
  MERCHANT_RATE_LIMIT: '100000/1000',
  MERCHANT_MONEY_RATE_LIMIT: '100000/1000',
  NOTIFY_RATE_LIMIT: '100000/1000',
};

/**
 * A repeat of an unknown outcome looks at PayHere again at once (UNKNOWN_LOOK_AGAIN_SECONDS, 30 s
 * deployed): most tests of settling one repeat right after the first answer. Tests of the rule use
 * the default (tests/idempotency/wrapper.test.ts, tests/integration/fair-shares.test.ts).
 */
export const LOOK_AGAIN_AT_ONCE = { UNKNOWN_LOOK_AGAIN_SECONDS: '0' };
