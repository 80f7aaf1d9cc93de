import { createHash } from 'node:crypto';
import { DYNAMODB_WRITE_WORST_MS } from '../config/dynamodb.ts';
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  sendConditional,
  UpdateItemCommand,
} from '../dynamodb/index.ts';
import type { OutboxEntry } from '../ledger/outbox.ts';

/**
 * The events table (docs/contract.md "Events"): each event the ledger's changes became,
 * once, as the relay published it (lib/events/relay.ts), in a feed in the order they were published,
 * with its webhook deliveries (lib/webhooks/):
 *
 *   event#<id>   id, type, objectType, objectId, sequence, createdAt (ms), body (the JSON listed
 *                and delivered), publishedAt (ms), expiresAt (s, TTL: RETENTION_DAYS)
 *                feed = 'events', feedKey = <publishedAt, 13 digits>#<id>   the `feed` index
 *                objectId, feedKey                                         the `object` index
 *                deliveries { <endpoint id>: { status, attempts, nextAt } }, dueQueue = 'deliveries',
 *                dueAt                                                     the `due` index
 */
export const FEED_INDEX = 'feed';
/** The events of one object (an order, a payment), in the feed's order: the `object` index. */
export const OBJECT_INDEX = 'object';
const FEED = 'events';
export const DUE_QUEUE = 'deliveries';
/** How long events are kept (and listed, and redelivered). */
export const RETENTION_DAYS = 35;
/**
 * How old (by its publication) an event must be to be listed: a publication still being written
 * when a page is read lands before this much later (its write, tries and backoff included, fails
 * for good sooner: DYNAMODB_WRITE_WORST_MS), so a cursor never passes an event that has yet to
 * appear before it.
 */
export const FEED_SETTLE_MS = DYNAMODB_WRITE_WORST_MS + 1_000;

/** What an event's object is, by the ledger item its change was written on. */
export type EventObject = { type: 'order' | 'payment'; id: string };

/** An event as GET /gateway/api/events lists it and a webhook delivers it. */
export interface EventBody {
  id: string;
  type: string;
  created_at: string;
  object: EventObject;
  sequence: number;
  data: Record<string, unknown>;
}

/** The object of the ledger item `pk` (an order, or a payment's refunds); undefined for any other. */
export function objectOf(pk: string): EventObject | undefined {
  if (pk.startsWith('order#')) return { type: 'order', id: pk.slice('order#'.length) };
  if (pk.startsWith('refund#')) return { type: 'payment', id: pk.slice('refund#'.length) };
  return undefined;
}

/**
 * An event's id: the same for the same object and sequence, whichever relay publishes it and
 * however often, so that publishing again writes nothing (and a receiver can de-duplicate by it).
 */
export function eventId(object: EventObject, sequence: number): string {
  const digest = createHash('sha256').update(`${object.type}#${object.id}#${sequence}`).digest('hex');
  return `evt_${digest.slice(0, 32)}`;
}

export function eventBody(object: EventObject, sequence: number, entry: OutboxEntry): EventBody {
  return {
    id: eventId(object, sequence),
    type: entry.type,
    created_at: new Date(entry.at).toISOString(),
    object,
    sequence,
    data: entry.data,
  };
}

const FEED_KEY = /^(\d{13})#(evt_[0-9a-f]{32})$/;
const feedKeyOf = (publishedAt: number, id: string) => `${String(publishedAt).padStart(13, '0')}#${id}`;

/** A position in the feed (after the event it names), as a page's `next_cursor` carries it. */
export function cursorOf(feedKey: string): string {
  return Buffer.from(feedKey, 'utf8').toString('base64url');
}

/** The feed position a cursor names; undefined when it names none (altered, or not ours). */
export function feedKeyOfCursor(cursor: string): string | undefined {
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  return FEED_KEY.test(key) && cursorOf(key) === cursor ? key : undefined;
}

/** What a publication did: wrote the event, or found it, listed at `publishedAt`. */
export interface Publication {
  written: boolean;
  publishedAt: number;
}

export interface FeedQuery {
  /** After this feed position (from the start without it). */
  after?: string;
  limit: number;
  type?: string;
  objectId?: string;
  /** Only events of this kind of object: an order and a payment may share an id. */
  objectType?: string;
}

export interface FeedPage {
  events: EventBody[];
  /** Where the next page starts: after the last event read (or where this one started, when none was). */
  position: string | undefined;
  /** More events were there to read past this page at the time. */
  more: boolean;
}

export class EventStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #now: () => number;

  constructor(options: { client: DynamoDBClient; table: string; now?: () => number }) {
    this.#client = options.client;
    this.#table = options.table;
    // Read at each call, not taken once: a test that moves the clock (vi.useFakeTimers) moves this one's.
    this.#now = options.now ?? (() => Date.now());
  }

  /**
   * Publish `event` at `publishedAt`, with a pending delivery to each of `endpoints`: once. When it
   * was published before, nothing changes (its delivery state, its place in the feed) and the
   * answer says where in the feed it is.
   */
  async publish(event: EventBody, publishedAt: number, endpoints: readonly string[]): Promise<Publication> {
    const item: Record<string, AttributeValue> = {
      pk: { S: `event#${event.id}` },
      id: { S: event.id },
      type: { S: event.type },
      objectType: { S: event.object.type },
      objectId: { S: event.object.id },
      sequence: { N: String(event.sequence) },
      createdAt: { N: String(Date.parse(event.created_at)) },
      body: { S: JSON.stringify(event) },
      feed: { S: FEED },
      feedKey: { S: feedKeyOf(publishedAt, event.id) },
      publishedAt: { N: String(publishedAt) },
      expiresAt: { N: String(Math.floor(publishedAt / 1000) + RETENTION_DAYS * 86_400) },
    };
    if (endpoints.length > 0) {
      item.deliveries = {
        M: Object.fromEntries(
          endpoints.map((endpoint) => [
            endpoint,
            { M: { status: { S: 'pending' }, attempts: { N: '0' }, nextAt: { N: String(publishedAt) } } },
          ]),
        ),
      };
      item.dueQueue = { S: DUE_QUEUE };
      item.dueAt = { N: String(publishedAt) };
    }
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: item,
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { written: true, publishedAt };
    } catch (error) {
      const { name, Item } = (error ?? {}) as { name?: unknown; Item?: Record<string, AttributeValue> };
      if (name !== 'ConditionalCheckFailedException') throw error;
      const existing = Item ?? (await this.#item(event.id));
      return { written: false, publishedAt: Number(existing?.publishedAt?.N ?? publishedAt) };
    }
  }

  async #item(id: string): Promise<Record<string, AttributeValue> | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: { pk: { S: `event#${id}` } }, ConsistentRead: true }),
    );
    return Item;
  }

  /**
   * List a published event at `publishedAt` instead, unless it is listed there or later already:
   * for a publication whose write may have landed after readers passed its place (the relay).
   */
  async listLater(id: string, publishedAt: number): Promise<void> {
    await sendConditional(
      this.#client,
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: `event#${id}` } },
        UpdateExpression: 'SET feedKey = :feedKey, publishedAt = :publishedAt',
        ConditionExpression: 'attribute_exists(pk) AND publishedAt < :publishedAt',
        ExpressionAttributeValues: {
          ':feedKey': { S: feedKeyOf(publishedAt, id) },
          ':publishedAt': { N: String(publishedAt) },
        },
      }),
    );
  }

  /**
   * A page of the feed, oldest first, of events published at least FEED_SETTLE_MS ago: the whole
   * feed, or one object id's events (its own index). Filtered by type and object type after reading,
   * so such a page may hold fewer than `limit` and still have more.
   */
  async page(query: FeedQuery): Promise<FeedPage> {
    const visible = `${String(this.#now() - FEED_SETTLE_MS).padStart(13, '0')}#~`;
    const [partition, value] =
      query.objectId === undefined ? (['feed', FEED] as const) : (['objectId', query.objectId] as const);
    const names: Record<string, string> = { '#partition': partition, '#feedKey': 'feedKey' };
    const values: Record<string, AttributeValue> = {
      ':partition': { S: value },
      ':visible': { S: visible },
    };
    const filters: string[] = [];
    if (query.type !== undefined) {
      names['#type'] = 'type';
      values[':type'] = { S: query.type };
      filters.push('#type = :type');
    }
    if (query.objectType !== undefined) {
      names['#objectType'] = 'objectType';
      values[':objectType'] = { S: query.objectType };
      filters.push('#objectType = :objectType');
    }
    const after = query.after?.match(FEED_KEY);
    const { Items, LastEvaluatedKey } = await this.#client.send(
      new QueryCommand({
        TableName: this.#table,
        IndexName: query.objectId === undefined ? FEED_INDEX : OBJECT_INDEX,
        KeyConditionExpression: '#partition = :partition AND #feedKey <= :visible',
        ...(filters.length > 0 ? { FilterExpression: filters.join(' AND ') } : {}),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        Limit: query.limit,
        ...(after
          ? {
              ExclusiveStartKey: {
                pk: { S: `event#${after[2]}` },
                [partition]: { S: value },
                feedKey: { S: query.after! },
              },
            }
          : {}),
      }),
    );
    const items = Items ?? [];
    const events = items.map((item) => JSON.parse(item.body?.S ?? '{}') as EventBody);
    const last = LastEvaluatedKey?.feedKey?.S ?? items.at(-1)?.feedKey?.S;
    return { events, position: last ?? query.after, more: LastEvaluatedKey !== undefined };
  }
}
