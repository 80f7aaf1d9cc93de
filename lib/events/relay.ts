import { DYNAMODB_WRITE_WORST_MS } from '../config/dynamodb.ts';
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  sendConditional,
  UpdateItemCommand,
} from '../dynamodb/index.ts';
import { OUTBOX_INDEX, OUTBOX_NAMES, OUTBOX_QUEUE, outboxOf } from '../ledger/outbox.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { type EventBody, type EventStore, eventBody, objectOf } from './store.ts';

/** How often one publication races new events on its item before leaving them to the next run. */
const ROUNDS = 3;
/**
 * A publication answered within this long of its place in the feed landed in time: readers list
 * an event only FEED_SETTLE_MS (this and a second) after its place, so no cursor passed it before
 * it was there. One answered later (a Lambda frozen between the two, its write sent on when the
 * container thawed) may have landed behind a cursor, and is listed again, later.
 */
const LISTED_IN_TIME_MS = DYNAMODB_WRITE_WORST_MS;

/**
 * The relay: the ledger items' outboxes (lib/ledger/outbox.ts) published to the events table, then
 * emptied. Run on an item just written, in the background after its request's answer, and by the
 * scheduled `relayEvents` function over the ledger's `outbox` index, which finds what a request
 * could not finish (a Lambda frozen or ended, a table that failed): no event stays unpublished.
 *
 * Every step may run twice, or be cut off anywhere: an event's id is its object's and sequence's, so
 * publishing it again writes nothing; the outbox is emptied only while it holds exactly what was
 * published (its item's event count unchanged), so an event appended meanwhile stays for the next
 * round.
 */
export class EventRelay {
  readonly #client: DynamoDBClient;
  readonly #ledgerTable: string;
  readonly #events: EventStore;
  readonly #endpoints: () => readonly string[];
  readonly #now: () => number;

  constructor(options: {
    client: DynamoDBClient;
    ledgerTable: string;
    events: EventStore;
    /** The webhook endpoints a new event is to be delivered to. */
    endpoints: () => readonly string[];
    now?: () => number;
  }) {
    this.#client = options.client;
    this.#ledgerTable = options.ledgerTable;
    this.#events = options.events;
    this.#endpoints = options.endpoints;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Publish what the ledger item `pk` holds in its outbox; the events published now (not before).
   * `written`: the outbox as the write that appended to it left it (its answer's attributes), read
   * from the item otherwise and in every later round.
   */
  async publish(pk: string, written?: Record<string, AttributeValue>): Promise<EventBody[]> {
    const object = objectOf(pk);
    if (!object) return [];
    const published: EventBody[] = [];
    let known = written?.outbox ? written : undefined;
    for (let round = 0; round < ROUNDS; round++) {
      const item =
        known ??
        (
          await this.#client.send(
            new GetItemCommand({
              TableName: this.#ledgerTable,
              Key: { pk: { S: pk } },
              ConsistentRead: true,
            }),
          )
        ).Item;
      known = undefined;
      const { entries, eventCount } = outboxOf(item);
      if (entries.length === 0) return published;
      const first = eventCount - entries.length + 1;
      const now = this.#now();
      const endpoints = this.#endpoints();
      const events = entries.map((entry, i) => eventBody(object, first + i, entry));
      // A millisecond apart, in sequence: the feed lists an object's events published together in order.
      const written = await Promise.all(
        events.map(async (event, i) => {
          const publication = await this.#events.publish(event, now + i, endpoints);
          await this.#listedInTime(event.id, publication.publishedAt);
          return publication.written;
        }),
      );
      published.push(...events.filter((_, i) => written[i]));
      const emptied = await sendConditional(
        this.#client,
        new UpdateItemCommand({
          TableName: this.#ledgerTable,
          Key: { pk: { S: pk } },
          UpdateExpression: 'REMOVE #outbox, #outboxQueue, #outboxAt',
          ConditionExpression: '#eventCount = :count',
          ExpressionAttributeNames: {
            '#outbox': OUTBOX_NAMES['#outbox'],
            '#outboxQueue': OUTBOX_NAMES['#outboxQueue'],
            '#outboxAt': OUTBOX_NAMES['#outboxAt'],
            '#eventCount': OUTBOX_NAMES['#eventCount'],
          },
          ExpressionAttributeValues: { ':count': { N: String(eventCount) } },
        }),
      );
      if (emptied !== undefined) return published;
    }
    return published;
  }

  /**
   * Make sure the event `id`, found listed at `listedAt` once its write (or its repeat) was
   * answered, is where every reader will come to it: an answer in time proves it landed in time;
   * otherwise it is listed again now, and that move is held to the same proof. An event published
   * long ago and found again (its outbox kept after a failure) is listed again too: a reader may
   * see it twice, by the same id, never not at all. Throws when no move was answered in time: its
   * outbox stays, and the next run moves it.
   */
  async #listedInTime(id: string, listedAt: number): Promise<void> {
    let at = listedAt;
    for (let round = 0; round < ROUNDS; round++) {
      if (this.#now() - at <= LISTED_IN_TIME_MS) return;
      at = this.#now();
      await this.#events.listLater(id, at);
    }
    if (this.#now() - at > LISTED_IN_TIME_MS) {
      throw new Error(`event ${id} could not be listed in time; its outbox keeps it for the next run`);
    }
  }

  /**
   * Publish every outbox written before `before` (the scheduled run: what requests left), at most
   * `limit` items; how many events were published. An item that fails is counted and left for
   * the next run.
   */
  async publishDue(before: number, limit: number): Promise<number> {
    const { Items } = await this.#client.send(
      new QueryCommand({
        TableName: this.#ledgerTable,
        IndexName: OUTBOX_INDEX,
        KeyConditionExpression: '#outboxQueue = :queue AND #outboxAt <= :before',
        ExpressionAttributeNames: { '#outboxQueue': 'outboxQueue', '#outboxAt': 'outboxAt' },
        ExpressionAttributeValues: { ':queue': { S: OUTBOX_QUEUE }, ':before': { N: String(before) } },
        Limit: limit,
      }),
    );
    let count = 0;
    for (const item of Items ?? []) {
      const pk = item.pk?.S;
      if (!pk) continue;
      try {
        count += (await this.publish(pk)).length;
      } catch (error) {
        countMetric('EventRelayFailed');
        log.error('could not publish the events of a ledger item', { pk, error: describeError(error) });
      }
    }
    return count;
  }
}
