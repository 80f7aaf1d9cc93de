import { describe, expect, it } from 'vitest';
import { NOTHING } from '../../../lib/gateway/answers.ts';
import { chargeCandidates, gatewayDateToEpoch, Reconciliation } from '../../../lib/gateway/reconcile.ts';
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

/** The charge's window: sent at SENT_AT, to be processed within 10 s. */
const WINDOW = { sentAt: SENT_AT, until: SENT_AT + 10_000 };

describe('chargeCandidates', () => {
  it('finds the payment of the same order, amount and currency', () => {
    // Prepare
    const match = payment();

    // Act
    const found = chargeCandidates([match], REQUEST, WINDOW);

    // Assess
    expect(found).toEqual([match]);
  });

  it('finds nothing among no payments', () => {
    expect(chargeCandidates([], REQUEST, WINDOW)).toEqual([]);
  });

  it.each([
    ['another order', { order_id: 'ORD-2024-0002' }],
    ['another amount', { amount: 1250.51 }],
    ['another currency', { currency: 'USD' }],
  ])('ignores a payment of %s', (_, overrides) => {
    expect(chargeCandidates([payment(overrides)], REQUEST, WINDOW)).toEqual([]);
  });

  it('compares amounts in cents, not as floats', () => {
    const match = payment({ amount: 0.1 + 0.2 });

    expect(chargeCandidates([match], { ...REQUEST, amount: 0.3 }, WINDOW)).toEqual([match]);
  });

  it('accepts a payment dated in the second the charge was sent', () => {
    const match = payment({ date: '2024-06-01 10:00:00' });

    expect(chargeCandidates([match], REQUEST, { ...WINDOW, sentAt: SENT_AT + 999 })).toEqual([match]);
  });

  it('accepts a payment dated before the window by PayHere’s clock running behind ours (minutes)', () => {
    const behind = payment({ date: '2024-06-01 09:59:57' });
    const farBehind = payment({ date: '2024-06-01 09:46:00' });

    expect(chargeCandidates([behind], REQUEST, WINDOW)).toEqual([behind]);
    expect(chargeCandidates([farBehind], REQUEST, WINDOW)).toEqual([farBehind]);
  });

  it('accepts a payment PayHere finished long after the charge’s window: a late date never excludes', () => {
    const late = payment({ date: '2024-06-01 10:00:26' });
    const muchLater = payment({ date: '2024-06-01 11:30:00' });

    expect(chargeCandidates([late], REQUEST, WINDOW)).toEqual([late]);
    expect(chargeCandidates([muchLater], REQUEST, WINDOW)).toEqual([muchLater]);
  });

  it('counts a payment without a readable date, ranked last', () => {
    const undated = payment({ payment_id: 99, date: 'yesterday' });
    const dated = payment({ payment_id: 1 });

    expect(chargeCandidates([undated, dated], REQUEST, WINDOW)).toEqual([dated, undated]);
  });

  it('ignores a payment of the order from before the charge, beyond the clock tolerance (a reused order id)', () => {
    expect(chargeCandidates([payment({ date: '2024-06-01 09:44:59' })], REQUEST, WINDOW)).toEqual([]);
  });

  it('does not read the date as UTC (which would shift it by 5 h 30 min)', () => {
    // A payment made 3 h earlier in Sri Lanka time, whose wall clock is later than SENT_AT in UTC.
    expect(chargeCandidates([payment({ date: '2024-06-01 07:00:00' })], REQUEST, WINDOW)).toEqual([]);
  });

  it('ranks the payments inside the window first, then by distance from it, then newest by id', () => {
    // Prepare
    const payments = [
      payment({ payment_id: '9', date: '2024-06-01 10:00:01' }),
      payment({ payment_id: 10, date: '2024-06-01 10:00:02' }),
      payment({ payment_id: '11', order_id: 'ORD-OTHER' }),
      payment({ payment_id: '12', date: '2024-06-01 10:03:00' }),
      payment({ payment_id: '7', date: '2024-06-01 09:59:50' }),
      payment({ payment_id: '8', date: '2024-06-01 10:00:04' }),
    ];

    // Act
    const found = chargeCandidates(payments, REQUEST, WINDOW);

    // Assess
    expect(found.map((p) => p.payment_id)).toEqual([10, '9', '8', '7', '12']);
  });

  it('leaves an old payment of a reused order id out', () => {
    const old = payment({ payment_id: 320025000000001, date: '2024-05-01 09:00:00' });
    const current = payment({ payment_id: 320025071234567, date: '2024-06-01 10:00:03' });

    expect(chargeCandidates([current, old], REQUEST, WINDOW)).toEqual([current]);
  });

  it('does not reorder the records it was given', () => {
    const payments = [payment({ payment_id: 1 }), payment({ payment_id: 3 }), payment({ payment_id: 2 })];

    chargeCandidates(payments, REQUEST, WINDOW);

    expect(payments.map((p) => p.payment_id)).toEqual([1, 3, 2]);
  });
});

describe('a lost subscription retry, settled from the subscription’s payments', () => {
  const WINDOW = { sentAt: SENT_AT, until: SENT_AT + 20_000 };
  /** PayHere's date, Sri Lanka time, of epoch ms `at`. */
  const dated = (at: number) => new Date(at + 5.5 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
  const retried = (...dates: number[]) => {
    const reads = {
      subscriptionPayments: async () => ({
        msg: 'Payments',
        data: dates.map((at, i) => payment({ payment_id: 320025000000 + i, date: dated(at) })),
      }),
    };
    return new Reconciliation(reads as never).retry('420075032251', WINDOW, Date.now() + 5_000);
  };

  it.each([
    ['in its window', SENT_AT + 5_000],
    ['by PayHere’s clock two minutes behind ours', SENT_AT + 5_000 - 120_000],
    ['by PayHere’s clock two minutes ahead of ours', SENT_AT + 5_000 + 120_000],
  ])('is charged by a payment dated %s', async (_, at) => {
    expect(await retried(at)).not.toBe(NOTHING);
  });

  it('is not charged by the installment a month before', async () => {
    expect(await retried(SENT_AT - 30 * 86_400_000)).toBe(NOTHING);
  });
});
