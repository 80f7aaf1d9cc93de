export const ACCEPTED_CURRENCIES: ReadonlySet<string> = new Set(['LKR', 'USD', 'EUR', 'GBP', 'AUD']);

// Amounts are JSON numbers with at most two decimals; binary floats need a tolerance to say so.
const CENT_TOLERANCE = 1e-6;

export function roundToCents(amount: number): number {
  return Math.round(amount * 100) / 100;
}

export function isValidAmount(amount: number): boolean {
  const cents = amount * 100;
  return Number.isFinite(amount) && amount > 0 && Math.abs(cents - Math.round(cents)) < CENT_TOLERANCE;
}

/** Compares in whole cents so 0.1 + 0.2 does not exceed 0.3. */
export function centsOf(amount: number): number {
  return Math.round(amount * 100);
}

/** Two amounts added in whole cents (1000 + 0.1 is 1000.1, not a binary near miss). */
export function addAmounts(a: number, b: number): number {
  return (centsOf(a) + centsOf(b)) / 100;
}

/** Notifications and signatures carry amounts with exactly two decimals. */
export function formatAmount(amount: number): string {
  return amount.toFixed(2);
}

// PayHere's sandbox fee in the samples: 2.9 % of the gross.
const FEE_RATE = 0.029;

export function amountDetail(currency: string, gross: number) {
  const fee = roundToCents(gross * FEE_RATE);
  return {
    currency,
    gross,
    fee,
    net: roundToCents(gross - fee),
    exchange_rate: 1,
    exchange_from: currency,
    exchange_to: currency,
  };
}
