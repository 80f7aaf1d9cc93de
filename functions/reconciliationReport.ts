import { ok, okText } from '#lib/envelope/envelope.ts';
import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { prefersCsv } from '#lib/http/accept.ts';
import { route } from '#lib/http/route.ts';
import { reconciliationReportsFromEnvironment } from '#lib/orders/from-environment.ts';
import { reconciliationCsv } from '#lib/orders/reconciliation-csv.ts';
import { ReconciliationQuery } from '#lib/schemas/reports.ts';

const reports = reconciliationReportsFromEnvironment(payHereFromEnvironment());

/**
 * GET /gateway/api/reports/reconciliation?from=&to=: the merchant's reconciliation of the ledger with
 * PayHere's records, per UTC day, JSON or CSV (`format=csv`, or `Accept: text/csv`). Each request
 * reads a few of the range's orders from PayHere, within the merchant's share of the budget; what it
 * could not read yet is listed as unchecked, for the next request.
 */
export const handler = route(
  { name: 'reconciliationReport', scope: 'payments:read', query: ReconciliationQuery },
  async ({ caller, query, deadline, header }) => {
    const report = await reports.report(caller, query, deadline);
    const csv = query.format === 'csv' || (query.format === undefined && prefersCsv(header('accept')));
    if (csv)
      return okText(reconciliationCsv(report), 'text/csv; charset=utf-8', {
        'Content-Disposition': `attachment; filename="reconciliation-${report.from}-${report.to}.csv"`,
      });
    const differences = report.days.reduce((sum, day) => sum + day.differences.length, 0);
    return ok(
      `Reconciliation of ${report.from} to ${report.to} (UTC): ${differences} differences, ${report.unchecked} orders not checked yet`,
      report,
    );
  },
);
