import { describe, expect, it } from 'vitest';
import type { PayHereStatus } from '../../lib/ledger/store.ts';
import { RefundStatuses } from '../../lib/reads/refund-statuses.ts';

/** lib/reads/refund-statuses.ts over a ledger that records what it is asked to keep. */
function statuses() {
  const kept: Array<[string, PayHereStatus]> = [];
  const refundStatuses = new RefundStatuses({
    ledger: {
      keepPayHereStatus: async (paymentId, seen) => {
        kept.push([paymentId, seen]);
        return true;
      },
    },
  });
  return { refundStatuses, kept };
}

describe('PayHere’s statuses of refunded payments, from a read that does not know their refunds', () => {
  it('keeps those PayHere shows once a payment was refunded or charged back after, as PayHere spells them', async () => {
    const { refundStatuses, kept } = statuses();

    await refundStatuses.seen(
      [
        { payment_id: 1, status: 'RECEIVED' },
        { payment_id: 2, status: 'REFUND REQUESTED' },
        { payment_id: 3, status: 'REFUND PROCESSING' },
        { payment_id: 4, status: 'REFUNDED' },
        { payment_id: 5, status: 'CHARGEBACKED' },
      ],
      1_000,
    );

    expect(kept.map(([paymentId, seen]) => [paymentId, seen.status])).toEqual([
      ['2', 'REFUND REQUESTED'],
      ['3', 'REFUND PROCESSING'],
      ['4', 'REFUNDED'],
      ['5', 'CHARGEBACKED'],
    ]);
  });
});
