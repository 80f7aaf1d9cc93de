import { describe, expect, it } from 'vitest';
import { findReconciledCharge, gatewayDateToEpoch } from '../../../lib/gateway/reconcile.ts';
import type { PaymentRecord } from '../../../lib/gateway/schemas.ts';

/** 2024-06-01 10:00:00 in Sri Lanka (UTC+05:30) = 04:30:00 UTC. */
const SENT_AT = Date.UTC(2024, 5, 1, 4, 30, 0);
const REQUEST = { order_id: 'ORD-2024-0001', amount: 1250.5, currency: 'LKR' as const };

function payment(overrides: Partial<PaymentRecord> & Record<string, unknown> = {}): PaymentRecord {
  return {
    payment_id: 320025071234567,
    order_id: 'ORD-2024-0001',
    date: '2024-06-01 10:00:03',
    description: 'Door bell wireless',
    status: 'RECEIVED',
    currency: 'LKR',
    amount: 1250.5,
    customer: { fist_name: 'Saman', last_name: 'Perera', email: 's***@example.com' },
    ...overrides,
  };
}

describe('gatewayDateToEpoch', () => {
  it('reads a gateway date as Sri Lanka time (+05:30)', () => {
    expect(gatewayDateToEpoch('2024-06-01 10:00:00')).toBe(SENT_AT);
  });

  it('crosses midnight and year ends correctly', () => {
    expect(gatewayDateToEpoch('2025-01-01 05:00:00')).toBe(Date.UTC(2024, 11, 31, 23, 30, 0));
  });

  it.each([
    ['an ISO date with T', '2024-06-01T10:00:00'],
    ['a date with a zone', '2024-06-01 10:00:00Z'],
    ['a date without time', '2024-06-01'],
    ['a date with milliseconds', '2024-06-01 10:00:00.123'],
    ['an impossible date', '2024-13-45 10:00:00'],
    ['empty', ''],
    ['a number', 1717216200000],
    ['null', null],
    ['missing', undefined],
  ])('gives no time for %s', (_, value) => {
    expect(gatewayDateToEpoch(value)).toBeUndefined();
  });
});

describe('findReconciledCharge', () => {
  it('finds the payment of the same order, amount and currency', () => {
    // Prepare
    const match = payment();

    // Act
    const found = findReconciledCharge([match], REQUEST, SENT_AT);

    // Assess
    expect(found).toBe(match);
  });

  it('finds nothing among no payments', () => {
    expect(findReconciledCharge([], REQUEST, SENT_AT)).toBeUndefined();
  });

  it.each([
    ['another order', { order_id: 'ORD-2024-0002' }],
    ['another amount', { amount: 1250.51 }],
    ['another currency', { currency: 'USD' }],
  ])('ignores a payment of %s', (_, overrides) => {
    expect(findReconciledCharge([payment(overrides)], REQUEST, SENT_AT)).toBeUndefined();
  });

  it('compares amounts in cents, not as floats', () => {
    // Prepare
    const match = payment({ amount: 0.1 + 0.2 });

    // Act
    const found = findReconciledCharge([match], { ...REQUEST, amount: 0.3 }, SENT_AT);

    // Assess
    expect(found).toBe(match);
  });

  it('accepts a payment dated in the second the charge was sent', () => {
    const match = payment({ date: '2024-06-01 10:00:00' });

    expect(findReconciledCharge([match], REQUEST, SENT_AT + 999)).toBe(match);
  });

  it('ignores an older payment of the same order, even one second older', () => {
    expect(
      findReconciledCharge([payment({ date: '2024-06-01 09:59:59' })], REQUEST, SENT_AT),
    ).toBeUndefined();
  });

  it('does not read the date as UTC (which would shift it by 5 h 30 min)', () => {
    // Prepare: a payment made 3 h earlier in Sri Lanka time, whose wall clock is later than SENT_AT in UTC.
    const older = payment({ date: '2024-06-01 07:00:00' });

    // Act
    const found = findReconciledCharge([older], REQUEST, SENT_AT);

    // Assess
    expect(found).toBeUndefined();
  });

  it('picks the newest matching payment by payment id, as a number', () => {
    // Prepare
    const payments = [
      payment({ payment_id: '9', date: '2024-06-01 10:00:01' }),
      payment({ payment_id: 10, date: '2024-06-01 10:00:02' }),
      payment({ payment_id: '11', order_id: 'ORD-OTHER' }),
      payment({ payment_id: '8', date: '2024-06-01 10:00:04' }),
    ];

    // Act
    const found = findReconciledCharge(payments, REQUEST, SENT_AT);

    // Assess
    expect(found?.payment_id).toBe(10);
  });

  it('picks the newest of an old and a new payment of a reused order id: the new one', () => {
    // Prepare
    const old = payment({ payment_id: 320025000000001, date: '2024-05-01 09:00:00' });
    const current = payment({ payment_id: 320025071234567, date: '2024-06-01 10:00:03' });

    // Act
    const found = findReconciledCharge([current, old], REQUEST, SENT_AT);

    // Assess
    expect(found).toBe(current);
  });

  it('does not reorder the records it was given', () => {
    // Prepare
    const payments = [payment({ payment_id: 1 }), payment({ payment_id: 3 }), payment({ payment_id: 2 })];

    // Act
    findReconciledCharge(payments, REQUEST, SENT_AT);

    // Assess
    expect(payments.map((p) => p.payment_id)).toEqual([1, 3, 2]);
  });
});
