import * as z from 'zod/mini';

/** The most days one reconciliation report spans. */
export const MAX_REPORT_DAYS = 31;

/** A UTC day, `YYYY-MM-DD`, that exists. */
const day = () =>
  z
    .string()
    .check(
      z.regex(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/, { message: 'must be a day, YYYY-MM-DD (UTC)' }),
      z.refine(exists, { message: 'must be a day that exists' }),
    );

/**
 * The reconciliation report's query string: the first and last day (UTC, both included) and,
 * optionally, the form of the answer (`csv`; else as `Accept` asks, JSON by default).
 */
export const ReconciliationQuery = z.strictObject({
  from: day(),
  to: day(),
  format: z.optional(z.enum(['json', 'csv'])),
});

export type ReconciliationQuery = z.infer<typeof ReconciliationQuery>;

function exists(value: string): boolean {
  const at = Date.parse(`${value}T00:00:00Z`);
  return Number.isFinite(at) && new Date(at).toISOString().startsWith(value);
}
