import { describe, expect, it } from 'vitest';
import {
  answeredEvidence,
  failedRefundEvidence,
  holderStanding,
  type LostRefundFacts,
  lostRefundEvidence,
  REFUND_TRANSITIONS,
  type RefundEvidence,
  refundRecord,
} from '../../lib/orders/refund-evidence.ts';

/**
 * lib/orders/refund-evidence.ts, the one place that decides what a refund's evidence does to its
 * payment's refund slot and what a lost refund is settled as: every transition it allows, and every
 * one it refuses, each named.
 */
const REFUND = { amountCents: 1_000, refundId: 560034010257 };

describe('a refund’s evidence and its payment’s slot', () => {
  it.each([
    ['refund_accepted', { accepted: REFUND }],
    ['records_show_refund', { accepted: REFUND }],
    ['refund_refused', null],
    ['refund_not_sent', null],
    ['settled_nothing', null],
    ['undeterminable', { undetermined: true }],
  ] as const)('%s frees the slot, recording %j', (evidence, record) => {
    expect(REFUND_TRANSITIONS[evidence].frees).toBe(true);
    expect(refundRecord(evidence, REFUND)).toEqual(record);
  });

  it('refund_lost never frees the slot, and records nothing: no other refund may start', () => {
    expect(REFUND_TRANSITIONS.refund_lost).toEqual({ frees: false, records: null });
    expect(refundRecord('refund_lost', REFUND)).toBeUndefined();
  });

  it('names every evidence once', () => {
    expect(Object.keys(REFUND_TRANSITIONS).sort()).toEqual(
      [
        'records_show_refund',
        'refund_accepted',
        'refund_lost',
        'refund_not_sent',
        'refund_refused',
        'settled_nothing',
        'undeterminable',
      ].sort(),
    );
  });
});

describe('a refund’s own failure', () => {
  it.each([
    ['not_sent', 'refund_not_sent'],
    ['answered', 'refund_refused'],
    ['lost', 'refund_lost'],
    [undefined, 'refund_lost'],
  ] as const)('reached %s is %s', (reach, evidence) => {
    expect(failedRefundEvidence(reach)).toBe(evidence);
  });
});

describe('the refund holding a slot', () => {
  const NOW = 1_000_000;

  it.each([
    ['gone (released, or expired)', undefined, 'over'],
    ['complete', { state: 'complete' as const }, 'over'],
    ['in progress within its lock', { state: 'in_progress' as const, lockedUntil: NOW + 1 }, 'running'],
    [
      'in progress past its lock (its Lambda died)',
      { state: 'in_progress' as const, lockedUntil: NOW },
      'unknown',
    ],
    ['outcome unknown', { state: 'outcome_unknown' as const }, 'unknown'],
  ])('whose record is %s is %s', (_, record, standing) => {
    expect(holderStanding(record, NOW)).toBe(standing);
  });

  it.each([
    [200, undefined, 'refund_accepted'],
    [409, 'outcome_undeterminable', 'undeterminable'],
    [422, 'gateway_rejected', 'refund_refused'],
    [409, 'conflict', 'refund_refused'],
  ] as const)('over with %i %s is %s', (status, code, evidence) => {
    expect(answeredEvidence(status, code)).toBe(evidence);
  });
});

describe('a lost refund', () => {
  const facts = (extra: Partial<LostRefundFacts>): LostRefundFacts => ({
    recorded: false,
    before: 0,
    status: 'RECEIVED',
    final: false,
    ...extra,
  });

  describe('is done', () => {
    it.each([
      [
        'the ledger recorded it (its answer was lost after)',
        facts({ recorded: true, before: 2, status: undefined }),
      ],
      ['no refund came before, and the payment is REFUND REQUESTED', facts({ status: 'REFUND REQUESTED' })],
      ['no refund came before, and the payment is REFUND PROCESSING', facts({ status: 'REFUND PROCESSING' })],
      ['no refund came before, and the payment is REFUNDED', facts({ status: 'REFUNDED' })],
    ])('when %s', (_, given) => {
      expect(['refund_accepted', 'records_show_refund']).toContain(lostRefundEvidence(given));
    });
  });

  describe('is not done, after the settle delay only', () => {
    it.each([
      ['its payment shows no refund', { status: 'RECEIVED' }],
      ['its order does not show the payment', { status: null }],
      ['its payment was charged back', { status: 'CHARGEBACKED' }],
    ])('when %s', (_, given) => {
      expect(lostRefundEvidence(facts({ ...given, final: true }))).toBe('settled_nothing');
      expect(lostRefundEvidence(facts(given))).toBe('refund_lost');
    });
  });

  describe('is never done, and undeterminable after the settle delay', () => {
    const cases: [string, Partial<LostRefundFacts>][] = [
      [
        'a partial refund of a payment refunded in part before shows a refund',
        { before: 1, status: 'REFUND REQUESTED' },
      ],
      ['an earlier refund may have been made (undetermined)', { before: 1, status: 'REFUND PROCESSING' }],
      ['a payment refunded before shows no refund any more', { before: 1, status: 'RECEIVED' }],
      // PayHere shows REFUNDED for a payment refunded in part once that refund is done: a full
      // refund that never reached it reads the same as one it finished.
      [
        'a refund of a payment refunded before (in part or in full) is REFUNDED',
        { before: 1, status: 'REFUNDED' },
      ],
      ['PayHere’s records cannot be read (the ledger does not know the order)', { status: undefined }],
    ];

    it.each(cases)('when %s', (_, given) => {
      const early: RefundEvidence = lostRefundEvidence(facts(given));
      const late: RefundEvidence = lostRefundEvidence(facts({ ...given, final: true }));

      expect(early).toBe('refund_lost');
      expect(late).toBe('undeterminable');
    });
  });
});
