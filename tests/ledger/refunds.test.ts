import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { GetItemCommand } from '../../lib/dynamodb/index.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import { localClient } from '../idempotency/fixtures.ts';

/**
 * A payment's refund item (lib/ledger/refunds.ts) against the run's dynalite table: its refund slot,
 * taken and freed by conditional writes, and the refunds it records. Every payment id is fresh.
 */
const ledger = new LedgerStore({ client: localClient(), table: inject('ledgerTable') });

const paymentId = () => String(Math.floor(Math.random() * 1e12));
const keyOf = () => `refund#caller#${randomUUID()}`;
const slotOf = (key: string, amountCents: number | null = 1_000) => ({
  key,
  takenAt: Date.now(),
  amountCents,
});
const ACCEPTED = { accepted: { amountCents: 1_000, refundId: 560034010257 } };

describe('a payment’s refund slot', () => {
  it('is taken by one refund; another is refused while it holds it', async () => {
    const id = paymentId();
    const first = keyOf();

    const taken = await ledger.takeRefundSlot(id, slotOf(first));
    const other = await ledger.takeRefundSlot(id, slotOf(keyOf()));

    expect([taken, other]).toEqual([true, false]);
    expect(await ledger.paymentRefunds(id)).toMatchObject({
      inflight: { key: first, amountCents: 1_000 },
      accepted: [],
      refundedCents: 0,
      undetermined: 0,
    });
  });

  it('taken again with the same key (a write repeated after its answer was lost) is ours, not a conflict', async () => {
    const id = paymentId();
    const key = keyOf();

    const taken = await ledger.takeRefundSlot(id, slotOf(key, null));
    const again = await ledger.takeRefundSlot(id, slotOf(key, null));

    expect([taken, again]).toEqual([true, true]);
    expect((await ledger.paymentRefunds(id)).inflight).toMatchObject({ key, amountCents: null });
  });

  it('freed with PayHere’s acceptance records the refund once, however often the write is repeated', async () => {
    const id = paymentId();
    const key = keyOf();
    await ledger.takeRefundSlot(id, slotOf(key));

    const freed = await ledger.finishRefund(id, key, ACCEPTED);
    const again = await ledger.finishRefund(id, key, ACCEPTED);
    const next = await ledger.takeRefundSlot(id, slotOf(keyOf()));

    expect([freed, again, next]).toEqual([true, true, true]);
    expect(await ledger.paymentRefunds(id)).toMatchObject({
      accepted: [{ key, amountCents: 1_000, refundId: 560034010257 }],
      refundedCents: 1_000,
    });
  });

  it('is never taken again by a key whose refund is settled (the key reused once its record expired)', async () => {
    const id = paymentId();
    const key = keyOf();
    await ledger.takeRefundSlot(id, slotOf(key));
    await ledger.finishRefund(id, key, ACCEPTED);

    const again = await ledger.takeRefundSlot(id, slotOf(key));
    const other = await ledger.takeRefundSlot(id, slotOf(keyOf()));

    expect(again).toBe(false);
    expect(other).toBe(true);
  });

  it('freed by a refund that was not made keeps no trace of who sent it', async () => {
    const id = paymentId();
    const key = keyOf();
    await ledger.takeRefundSlot(id, { ...slotOf(key), by: 'customer-7' });

    await ledger.finishRefund(id, key, null);

    const item = await localClient().send(
      new GetItemCommand({ TableName: inject('ledgerTable'), Key: { pk: { S: `refund#${id}` } } }),
    );
    expect(Object.keys(item.Item ?? {}).filter((name) => name.startsWith('by#'))).toEqual([]);
  });

  it('is freed only by the refund holding it', async () => {
    const id = paymentId();
    const key = keyOf();
    await ledger.takeRefundSlot(id, slotOf(key));

    const byOther = await ledger.finishRefund(id, keyOf(), null);
    const byHolder = await ledger.finishRefund(id, key, null);

    expect([byOther, byHolder]).toEqual([false, true]);
    expect(await ledger.paymentRefunds(id)).toMatchObject({ inflight: null, accepted: [] });
  });

  it('keeps a refund that could not be determined, once, and frees the slot', async () => {
    const id = paymentId();
    const key = keyOf();
    await ledger.takeRefundSlot(id, slotOf(key));

    await ledger.finishRefund(id, key, { undetermined: true });
    await ledger.finishRefund(id, key, { undetermined: true });

    expect(await ledger.paymentRefunds(id)).toMatchObject({ inflight: null, undetermined: 1 });
  });

  it('records the outcome of a refund that does not hold the slot without freeing the holder’s', async () => {
    const id = paymentId();
    const holder = keyOf();
    const settled = keyOf();
    await ledger.takeRefundSlot(id, slotOf(holder));

    await ledger.finishRefund(id, settled, ACCEPTED);

    expect(await ledger.paymentRefunds(id)).toMatchObject({
      inflight: { key: holder },
      accepted: [{ key: settled }],
    });
  });
});
