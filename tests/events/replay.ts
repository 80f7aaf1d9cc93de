import { expect } from 'vitest';
import { batchGet, GetItemCommand } from '../../lib/dynamodb/index.ts';
import { EventRelay } from '../../lib/events/relay.ts';
import { type EventBody, EventStore, eventId } from '../../lib/events/store.ts';
import type { Order } from '../../lib/ledger/model.ts';
import { localClient } from '../idempotency/fixtures.ts';

/** Far enough ahead that every outbox is due. */
const LATER = 365 * 24 * 3_600_000;

/**
 * The events of `orders`, published by the scheduled relay whatever requests left, replay to what the
 * ledger holds now: each order has exactly as many events as its item counts, numbered 1, 2, ...
 * without a gap; each move starts where the one before it ended (where it read its state); the
 * last move ends in the order's state (none at all: the order never moved from `created`). Read by
 * their ids (an event's id follows from its object and sequence), not through the feed, so a check
 * costs two requests an order however many events the file has published.
 */
export async function expectEventsReplayOrders(orders: readonly Order[]): Promise<void> {
  const client = localClient();
  const events = new EventStore({ client, table: process.env.EVENTS_TABLE! });
  const relay = new EventRelay({
    client,
    ledgerTable: process.env.LEDGER_TABLE!,
    events,
    endpoints: () => [],
  });
  await relay.publishDue(Date.now() + LATER, 1_000);
  for (const order of orders) {
    const { Item } = await client.send(
      new GetItemCommand({
        TableName: process.env.LEDGER_TABLE!,
        Key: { pk: { S: `order#${order.orderId}` } },
        ConsistentRead: true,
      }),
    );
    const count = Number(Item?.eventCount?.N ?? 0);
    expect(Item?.outbox?.L ?? [], `${order.orderId}: its outbox, once the relay ran`).toEqual([]);
    const object = { type: 'order' as const, id: order.orderId };
    const ids = Array.from({ length: count }, (_, i) => eventId(object, i + 1));
    const items = await batchGet(
      client,
      process.env.EVENTS_TABLE!,
      ids.map((id) => `event#${id}`),
      { consistent: true },
    );
    const published = items
      .map((item) => JSON.parse(item.body?.S ?? '{}') as EventBody)
      .sort((a, b) => a.sequence - b.sequence);
    expect(
      published.map((event) => event.sequence),
      order.orderId,
    ).toEqual(ids.map((_, i) => i + 1));
    const moves = published.filter((event) => typeof event.data.evidence === 'string');
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
