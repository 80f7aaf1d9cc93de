import { expect } from 'vitest';
import { EventRelay } from '../../lib/events/relay.ts';
import { type EventBody, EventStore } from '../../lib/events/store.ts';
import type { Order } from '../../lib/ledger/model.ts';
import { localClient } from '../idempotency/fixtures.ts';

/** Far enough ahead that every outbox is due and every event published is listed. */
const LATER = 365 * 24 * 3_600_000;

/**
 * The events of `orders`, published by the scheduled relay whatever requests left, replay to what the
 * ledger holds now: each order's events are numbered 1, 2, ... without a gap or a repeat; each move
 * starts where the one before it ended (where it read its state); the last move ends in the order's
 * state (none at all: the order never moved from `created`).
 */
export async function expectEventsReplayOrders(orders: readonly Order[]): Promise<void> {
  const client = localClient();
  const events = new EventStore({ client, table: process.env.EVENTS_TABLE!, now: () => Date.now() + LATER });
  const relay = new EventRelay({
    client,
    ledgerTable: process.env.LEDGER_TABLE!,
    events,
    endpoints: () => [],
  });
  await relay.publishDue(Date.now() + LATER, 1_000);
  for (const order of orders) {
    const published: EventBody[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await events.page({ limit: 100, objectId: order.orderId, ...(after ? { after } : {}) });
      published.push(...page.events);
      if (!page.more) break;
      after = page.position;
    }
    const ofOrder = published
      .filter((event) => event.object.type === 'order')
      .sort((a, b) => a.sequence - b.sequence);
    expect(
      ofOrder.map((event) => event.sequence),
      order.orderId,
    ).toEqual(ofOrder.map((_, i) => i + 1));
    const moves = ofOrder.filter((event) => typeof event.data.evidence === 'string');
    for (const [i, move] of moves.entries()) {
      const previous = move.data.previous_status;
      if (previous !== undefined)
        expect(previous, `${order.orderId} #${move.sequence}`).toBe(
          i === 0 ? 'created' : moves[i - 1]!.data.status,
        );
    }
    expect(moves.at(-1)?.data.status ?? 'created', order.orderId).toBe(order.state);
  }
}
