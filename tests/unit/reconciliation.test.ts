import { describe, expect, it } from 'vitest';
import type { PayHere } from '../../lib/gateway/payhere.ts';
import { prefersCsv } from '../../lib/http/accept.ts';
import type { OrderKind, OrderState } from '../../lib/ledger/model.ts';
import type { ListedOrder } from '../../lib/ledger/store.ts';
import { reconciliationReportsFromEnvironment } from '../../lib/orders/from-environment.ts';
import { differences, MAX_CHECKS } from '../../lib/orders/reconciliation.ts';
import { CSV_COLUMNS, cell, reconciliationCsv } from '../../lib/orders/reconciliation-csv.ts';
import type { CheckedPayment, PaymentSnapshot } from '../../lib/reads/snapshots.ts';
import { EXAMPLES } from '../../openapi/examples.ts';

/**
 * The reconciliation report's decisions, without a table or PayHere: which difference an order and
 * PayHere's payments of it make, the CSV form, and when `Accept` asks for CSV.
 */
const CHECKED_AT = Date.parse('2026-03-02T10:00:00Z');

function order(fields: {
  state: OrderState;
  kind?: OrderKind;
  paymentId?: string | null;
  cents?: number;
}): ListedOrder {
  return {
    orderId: 'Order-1',
    owner: 'alice',
    kind: fields.kind ?? 'payment',
    state: fields.state,
    items: 'Door bell',
    currency: 'LKR',
    amountCents: fields.cents ?? 100_000,
    custom1: null,
    custom2: null,
    lineItems: null,
    customerDetails: null,
    metadata: null,
    startupFeeCents: null,
    nextInstallment: null,
    recurrence: null,
    duration: null,
    paymentId: fields.paymentId ?? null,
    customerToken: null,
    authorizationToken: null,
    subscriptionId: null,
    card: null,
    createdAt: CHECKED_AT - 3_600_000,
    updatedAt: CHECKED_AT - 3_600_000,
    charge: null,
    installmentsPaid: null,
    subscriptionStatus: null,
    failedInstallment: null,
    reported: { paymentId: null, subscriptionId: null, installmentsPaid: null, nextInstallment: null },
    reportedAt: null,
    settleAt: null,
    standingCheckAt: null,
    standingSince: null,
    standingAsks: 0,
    holdVerified: null,
    paymentsCopy: null,
    failedAttempts: {},
    duplicatePayments: [],
    chargeInFlight: false,
  };
}

const payment = (id: string, amount = 1000, currency = 'LKR'): CheckedPayment => ({
  payment_id: id,
  status: 'RECEIVED',
  currency,
  amount,
  gross: amount,
  fee: Math.round(amount * 2.9) / 100,
  net: amount - Math.round(amount * 2.9) / 100,
  date: '2026-03-02 15:30:00',
});

const snapshot = (...payments: CheckedPayment[]): PaymentSnapshot => ({
  orderId: 'Order-1',
  checkedAt: CHECKED_AT,
  ledgerVersion: 'v',
  payments,
});

const kinds = (found: ReturnType<typeof differences>) => found.map((d) => [d.kind, d.payment_id]);

describe('the differences between the ledger and PayHere’s records', () => {
  it('none when PayHere shows the ledger’s payment at the order’s amount', () => {
    expect(
      differences(
        order({ state: 'succeeded', paymentId: '320040000001' }),
        snapshot(payment('320040000001')),
      ),
    ).toEqual([]);
  });

  it('none for an order unpaid in both', () => {
    expect(differences(order({ state: 'failed' }), snapshot())).toEqual([]);
    expect(differences(order({ state: 'created' }), snapshot())).toEqual([]);
  });

  it('a second payment of a paid order is a payment the ledger lacks: refund it unless meant', () => {
    const found = differences(
      order({ state: 'succeeded', paymentId: '320040000001' }),
      snapshot(payment('320040000001'), payment('320040000002')),
    );

    expect(kinds(found)).toEqual([['payment_not_in_ledger', 320040000002]]);
    expect(found[0]).toMatchObject({
      order_id: 'Order-1',
      ledger_status: 'succeeded',
      ledger_amount: 1000,
      payhere_amount: 1000,
      checked_at: '2026-03-02T10:00:00.000Z',
    });
    expect(found[0]!.action).toMatch(/paid twice\. Unless that was meant, refund it/);
  });

  it.each([
    ['created', /notification never reached the service: GET \/gateway\/api\/checkouts\/Order-1 looks it up/],
    ['unknown', /the settle job settles it .* Do not charge the order again/],
    ['pending', /the settle job settles it/],
    [
      'failed',
      /ledger has failed \(not paid\): check it in PayHere's portal, then fulfil the order or refund/,
    ],
    ['cancelled', /ledger has cancelled \(not paid\)/],
  ] as const)('a payment of an order the ledger has %s, with what to do', (state, action) => {
    const found = differences(order({ state }), snapshot(payment('320040000003')));

    expect(kinds(found)).toEqual([['payment_not_in_ledger', 320040000003]]);
    expect(found[0]!.action).toMatch(action);
  });

  it('a paid order whose payment PayHere does not show: do not ship', () => {
    const none = differences(order({ state: 'succeeded', paymentId: '320040000004' }), snapshot());
    const others = differences(
      order({ state: 'chargedback', paymentId: '320040000004' }),
      snapshot(payment('320040000005')),
    );

    expect(kinds(none)).toEqual([['payment_not_at_payhere', 320040000004]]);
    expect(none[0]!.action).toMatch(
      /show no payment: do not ship it until PayHere's portal shows the payment/,
    );
    expect(none[0]!.payhere_amount).toBeNull();
    expect(kinds(others)).toEqual([
      ['payment_not_in_ledger', 320040000005],
      ['payment_not_at_payhere', 320040000004],
    ]);
    expect(others[1]!.action).toMatch(/show other payments only/);
  });

  it('an amount or currency that differs, with which way to settle it', () => {
    const less = differences(
      order({ state: 'succeeded', paymentId: '320040000006' }),
      snapshot(payment('320040000006', 900)),
    );
    const more = differences(
      order({ state: 'succeeded', paymentId: '320040000006' }),
      snapshot(payment('320040000006', 1100)),
    );
    const currency = differences(
      order({ state: 'succeeded', paymentId: '320040000006' }),
      snapshot(payment('320040000006', 1000, 'USD')),
    );

    expect([less, more, currency].map(kinds)).toEqual([
      [['amount_differs', 320040000006]],
      [['amount_differs', 320040000006]],
      [['amount_differs', 320040000006]],
    ]);
    expect(less[0]!.action).toMatch(/took 900\.00 LKR .* is 1000\.00 LKR: collect the rest/);
    expect(more[0]!.action).toMatch(/took 1100\.00 LKR .*: refund the difference/);
    expect(currency[0]).toMatchObject({ currency: 'USD', ledger_amount: 1000, payhere_amount: 1000 });
  });

  it('amounts compared in cents: 0.1 + 0.2 is 0.30', () => {
    expect(
      differences(
        order({ state: 'succeeded', paymentId: '320040000007', cents: 30 }),
        snapshot(payment('320040000007', 0.1 + 0.2)),
      ),
    ).toEqual([]);
  });

  it('a subscription’s installments and a hold’s capture are not second payments', () => {
    const installments = snapshot(payment('320040000008'), payment('320040000009'));

    expect(differences(order({ state: 'succeeded', kind: 'recurring' }), installments)).toEqual([]);
    expect(differences(order({ state: 'succeeded', kind: 'authorize' }), installments)).toEqual([]);
    // A hold shows no payment until captured; a subscription paid shows at least its first installment.
    expect(differences(order({ state: 'succeeded', kind: 'authorize' }), snapshot())).toEqual([]);
    expect(kinds(differences(order({ state: 'succeeded', kind: 'recurring' }), snapshot()))).toEqual([
      ['payment_not_at_payhere', null],
    ]);
    // Either, unpaid in the ledger, with a payment at PayHere: a payment the ledger lacks.
    expect(
      kinds(differences(order({ state: 'created', kind: 'authorize' }), snapshot(payment('320040000010')))),
    ).toEqual([['payment_not_in_ledger', 320040000010]]);
  });
});

describe('the CSV form', () => {
  it('one header line, then a line per line of the report, CRLF, each with every column', () => {
    const csv = reconciliationCsv(EXAMPLES.reconciliationReport.report.data);
    const lines = csv.split('\r\n');

    expect(lines[0]).toBe(CSV_COLUMNS.join(','));
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(1, -1).map((line) => line.split(',')[1])).toEqual([
      'total',
      'order_paid',
      'order_paid',
      'payment',
      'payment',
      'refund',
      'difference',
      'difference',
      'unchecked',
    ]);
    expect(lines[1]).toBe(
      '2026-01-15,total,"2 paid, 2 payments, 1 refunds",,,,LKR,2500.00,,,2200.00,63.80,2136.20,250.00,,,',
    );
    expect(lines[4]).toMatch(
      /^2026-01-15,payment,in_ledger,Order-1001,320040000011,RECEIVED,LKR,,1000\.00,LKR,1000\.00,29\.00,971\.00,/,
    );
    expect(lines[9]).toBe('2026-01-15,unchecked,not_checked,Order-1004,,created,,,,,,,,,,,');
  });

  it.each([
    ['plain', 'plain'],
    [null, ''],
    [12, '12'],
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['two\nlines', '"two\nlines"'],
    ['=SUM(A1:A9)', "'=SUM(A1:A9)"],
    ['+1', "'+1"],
    ['-2+3', "'-2+3"],
    ['@cmd', "'@cmd"],
    ['=A1,B1', `"'=A1,B1"`],
    ['-12.50', '-12.50'],
  ])('the cell %j is written %s', (value, written) => {
    expect(cell(value)).toBe(written);
  });
});

describe('Accept: text/csv', () => {
  it.each([
    [[], false],
    [['*/*'], false],
    [['application/json'], false],
    [['text/csv'], true],
    [['text/csv; charset=utf-8'], true],
    [['application/json, text/csv'], false],
    [['application/json;q=0.5, text/csv'], true],
    [['text/csv;q=0.5, application/json'], false],
    [['text/*'], true],
    [['text/csv;q=0'], false],
    [['text/csv', '*/*;q=0.1'], true],
    [['TEXT/CSV'], true],
  ] as const)('%j prefers CSV: %s', (accept, csv) => {
    expect(prefersCsv(accept)).toBe(csv);
  });
});

describe('RECONCILIATION_CHECKS', () => {
  const env = (checks: string) => ({
    LEDGER_TABLE: 'ledger',
    STATE_TABLE: 'state',
    DYNAMODB_ENDPOINT: 'http://127.0.0.1:9',
    AWS_REGION: 'ap-south-1',
    RECONCILIATION_CHECKS: checks,
  });

  it('takes 0 to the most, and refuses more at start-up: no request may wait on many PayHere calls', () => {
    expect(() => reconciliationReportsFromEnvironment({} as PayHere, env('0'))).not.toThrow();
    expect(() => reconciliationReportsFromEnvironment({} as PayHere, env(String(MAX_CHECKS)))).not.toThrow();
    expect(() => reconciliationReportsFromEnvironment({} as PayHere, env(String(MAX_CHECKS + 1)))).toThrow(
      `RECONCILIATION_CHECKS must be at most ${MAX_CHECKS}`,
    );
    expect(() => reconciliationReportsFromEnvironment({} as PayHere, env('-1'))).toThrow(
      'RECONCILIATION_CHECKS must be a whole number',
    );
  });
});
