import type { ReconciliationReport } from './reconciliation.ts';

/**
 * The CSV form of a reconciliation report (RFC 4180: comma-separated, CRLF line ends, a header
 * line), one line per line of the JSON form, so that a spreadsheet filters it by `line`:
 *
 *   total        a day's totals in one currency (ledger_amount: the paid orders' amount)
 *   order_paid   an order the ledger shows paid
 *   payment      a payment PayHere's records show for one of the day's orders
 *   refund       a refund sent through the service (status: accepted or in_flight)
 *   difference   a difference between the ledger and PayHere's records, with its action
 *   unchecked    an order not yet compared with PayHere's records (status: the ledger's; kind: why)
 *
 * Amounts are written with two decimals. A text cell that a spreadsheet would take for a formula
 * (starting with =, +, -, @, a tab or a carriage return) is prefixed with an apostrophe: order ids
 * and customers are the callers' own text.
 */
export const CSV_COLUMNS = [
  'date',
  'line',
  'kind',
  'order_id',
  'payment_id',
  'status',
  'currency',
  'ledger_amount',
  'payhere_amount',
  'settlement_currency',
  'gross',
  'fee',
  'net',
  'refunded',
  'at',
  'checked_at',
  'action',
] as const;

type Column = (typeof CSV_COLUMNS)[number];
type Row = Partial<Record<Column, string | number | boolean | null>>;

export function reconciliationCsv(report: ReconciliationReport): string {
  const rows: Row[] = [];
  for (const day of report.days) {
    const date = day.date;
    for (const total of day.totals)
      rows.push({
        date,
        line: 'total',
        kind: `${total.orders_paid} paid, ${total.payments} payments, ${total.refunds} refunds`,
        currency: total.currency,
        ledger_amount: money(total.ordered),
        gross: money(total.gross),
        fee: money(total.fee),
        net: money(total.net),
        refunded: money(total.refunded),
      });
    for (const order of day.orders_paid)
      rows.push({
        date,
        line: 'order_paid',
        kind: order.kind,
        order_id: order.order_id,
        payment_id: order.payment_id,
        status: order.status,
        currency: order.currency,
        ledger_amount: money(order.amount),
      });
    for (const payment of day.payments)
      rows.push({
        date,
        line: 'payment',
        kind: payment.in_ledger ? 'in_ledger' : 'not_in_ledger',
        order_id: payment.order_id,
        payment_id: payment.payment_id,
        status: payment.status,
        currency: payment.currency,
        payhere_amount: money(payment.amount),
        settlement_currency: payment.settlement_currency,
        gross: money(payment.gross),
        fee: money(payment.fee),
        net: money(payment.net),
        at: payment.date,
        checked_at: payment.checked_at,
      });
    for (const refund of day.refunds)
      rows.push({
        date,
        line: 'refund',
        kind: refund.full ? 'full' : 'partial',
        order_id: refund.order_id,
        payment_id: refund.payment_id,
        status: refund.status,
        refunded: money(refund.amount),
        at: refund.at,
      });
    for (const difference of day.differences)
      rows.push({
        date,
        line: 'difference',
        kind: difference.kind,
        order_id: difference.order_id,
        payment_id: difference.payment_id,
        status: difference.ledger_status,
        currency: difference.currency,
        ledger_amount: money(difference.ledger_amount),
        payhere_amount: money(difference.payhere_amount),
        checked_at: difference.checked_at,
        action: difference.action,
      });
    for (const order of day.unchecked)
      rows.push({
        date,
        line: 'unchecked',
        kind: order.reason,
        order_id: order.order_id,
        status: order.status,
        checked_at: order.checked_at,
      });
  }
  const lines = [CSV_COLUMNS.join(','), ...rows.map((row) => CSV_COLUMNS.map((c) => cell(row[c])).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

function money(amount: number | null): string | null {
  return amount === null ? null : amount.toFixed(2);
}

const FORMULA = /^[=+\-@\t\r]/;
const QUOTED = /[",\r\n]/;

/** One cell: empty for null, quoted when it holds a comma, quote or line end, never a formula. */
export function cell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') return String(value);
  // Amounts are written by money(): a negative one is a number, not a formula.
  const text = FORMULA.test(value) && !/^-[0-9]+(\.[0-9]+)?$/.test(value) ? `'${value}` : value;
  return QUOTED.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
