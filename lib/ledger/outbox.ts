import type { AttributeValue } from '../dynamodb/index.ts';
import type { LedgerEvent } from './model.ts';
import { number } from './table.ts';

export type { LedgerEvent } from './model.ts';

/**
 * An item's outbox: the events its state changes became, written by the very conditional write that
 * changed it (no state change without its event, no event without its change), until the relay
 * (lib/events/relay.ts) has copied them to the events table. What each change becomes is decided by
 * lib/orders/events.ts; the ledger only keeps it.
 *
 *   outbox       the events not relayed yet, oldest first: JSON { type, at, data }
 *   eventCount   how many events the item ever recorded: the last one's sequence
 *   outboxQueue  'events' while the outbox holds any: the ledger's sparse `outbox` index,
 *   outboxAt     by when the oldest was written, which the scheduled relay reads
 *
 * An event's sequence among its object's events is its place in `eventCount`: the relay numbers the
 * outbox's entries from `eventCount - outbox length + 1`.
 */

/** An event as the outbox holds it. */
export interface OutboxEntry extends LedgerEvent {
  /** Epoch ms: when the write that recorded it was made. */
  at: number;
}

export const OUTBOX_INDEX = 'outbox';
export const OUTBOX_QUEUE = 'events';

export const OUTBOX_NAMES = {
  '#outbox': 'outbox',
  '#eventCount': 'eventCount',
  '#outboxQueue': 'outboxQueue',
  '#outboxAt': 'outboxAt',
} as const;

/**
 * The SET clauses, names and values that append `events` to an item's outbox at `now`, for an
 * UpdateExpression that changes the state they report. Placeholders are prefixed so that they meet
 * none of the write's own.
 */
export function appendEvents(
  events: readonly LedgerEvent[],
  now: number,
): { set: string; names: Record<string, string>; values: Record<string, AttributeValue> } {
  return {
    set:
      '#outbox = list_append(if_not_exists(#outbox, :outboxNone), :outboxEvents), ' +
      '#eventCount = if_not_exists(#eventCount, :outboxZero) + :outboxAdded, ' +
      '#outboxQueue = :outboxQueue, #outboxAt = if_not_exists(#outboxAt, :outboxNow)',
    names: { ...OUTBOX_NAMES },
    values: {
      ':outboxNone': { L: [] },
      ':outboxEvents': {
        L: events.map((event) => ({ S: JSON.stringify({ type: event.type, at: now, data: event.data }) })),
      },
      ':outboxZero': number(0),
      ':outboxAdded': number(events.length),
      ':outboxQueue': { S: OUTBOX_QUEUE },
      ':outboxNow': number(now),
    },
  };
}

/** What an item's outbox holds: its entries, and the item's event count. */
export function outboxOf(item: Record<string, AttributeValue> | undefined): {
  entries: OutboxEntry[];
  eventCount: number;
} {
  const entries = (item?.outbox?.L ?? []).flatMap((entry) => {
    if (entry.S === undefined) return [];
    return [JSON.parse(entry.S) as OutboxEntry];
  });
  return { entries, eventCount: Number(item?.eventCount?.N ?? 0) };
}
