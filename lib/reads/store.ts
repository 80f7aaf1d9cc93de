import type { StateTableOptions } from '../budget/state-table.ts';
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  sendConditional,
} from '../dynamodb/index.ts';
import { describeError, log } from '../log/log.ts';
import type { ReadInvalidation } from './invalidation.ts';

/**
 * Answers PayHere gave to reads, shared by every container and caller for a short freshness window
 * (docs/contract.md "PayHere's budget"), as items of the shared state table under keys of their own:
 *
 *   read#payments#<order_id>               an order's payments (10 s)
 *   read#subscriptions                     the merchant's subscriptions (30 s)
 *   read#subscription#<id>                 one subscription (30 s)
 *   read#subscription-payments#<id>        a subscription's payments (30 s)
 *   read#one-subscription-missing          PayHere has no one-subscription endpoint (an hour)
 *   read#subscriptions-latest              the snapshot of the list a first page reads (30 s)
 *   read#subscriptions@<fetchedAt>[#<n>]   a snapshot of the list, in parts (10 minutes;
 *                                          lib/reads/subscription-pages.ts)
 *
 * Each holds PayHere's unfiltered answer (callers filter it for their caller after reading it) and
 * when it was fetched. The service's own money call on an object replaces its items with a
 * tombstone (`droppedAt`) rather than deleting them: a read sent before that call and answered after
 * it carries the old state, and the tombstone is what refuses to store it.
 */

export interface SharedRead {
  key: string;
  /** How long after it was fetched an answer may be served. */
  windowMs: number;
}

const subscriptionId = (id: string) => String(Number(id));

/** What is shared, and for how long. Subscription ids as PayHere reads them: 0420075032251 is 420075032251. */
export const SHARED_READS = {
  orderPayments: (orderId: string): SharedRead => ({ key: `read#payments#${orderId}`, windowMs: 10_000 }),
  subscriptions: { key: 'read#subscriptions', windowMs: 30_000 } as SharedRead,
  subscription: (id: string): SharedRead => ({
    key: `read#subscription#${subscriptionId(id)}`,
    windowMs: 30_000,
  }),
  subscriptionPayments: (id: string): SharedRead => ({
    key: `read#subscription-payments#${subscriptionId(id)}`,
    windowMs: 30_000,
  }),
  /** Which snapshot of the list a first page reads (lib/reads/subscription-pages.ts): as fresh as the list. */
  subscriptionsLatest: { key: 'read#subscriptions-latest', windowMs: 30_000 } as SharedRead,
  /** PayHere answered the one-subscription endpoint with a bare 404: go to the list for an hour. */
  oneSubscriptionMissing: { key: 'read#one-subscription-missing', windowMs: 3_600_000 } as SharedRead,
};

export interface StoredAnswer {
  /** The answer while within its window; undefined once past it (the item says when it was fetched). */
  answer: unknown;
  /** Epoch ms when the answer's request to PayHere started: an answer is never younger than this. */
  fetchedAt: number;
}

/** DynamoDB refuses items over 400 KB; a larger answer is served, not stored. */
export const MAX_ANSWER_BYTES = 300_000;
/**
 * Clocks of different containers disagree a little: an answer is stored only if its request
 * started at least this long after the last drop of its item.
 */
export const CLOCK_SKEW_MS = 1_000;
/** A tombstone outlives every read that may have started before it (a request's upstream work lasts 20 s). */
const TOMBSTONE_SECONDS = 3_600;
/** An answer's item is left for TTL this long after its window ends (TTL deletes lazily anyway). */
const EXPIRY_SLACK_SECONDS = 60;

const number = (value: number): AttributeValue => ({ N: String(Math.round(value)) });

export class SharedReadStore implements ReadInvalidation {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  /** Each request to the table is abandoned after this long (STATE_TABLE_TIMEOUT_MS). */
  readonly timeoutMs: number;
  readonly #now: () => number;

  constructor(options: StateTableOptions & { now?: () => number }) {
    this.#client = options.client;
    this.#table = options.table;
    this.timeoutMs = options.timeoutMs;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The stored answer of `read`, if any: its answer only while within its window. Undefined when
   * absent or dropped. Abandoned after the table's timeout, or `maxMs` when shorter.
   */
  async get(read: SharedRead, maxMs = this.timeoutMs): Promise<StoredAnswer | undefined> {
    const { Item } = await this.#client.send(
      // Strongly consistent: the read right after a money call's drop must see the tombstone.
      new GetItemCommand({ TableName: this.#table, Key: { pk: { S: read.key } }, ConsistentRead: true }),
      { timeoutMs: Math.min(this.timeoutMs, maxMs) },
    );
    const answer = Item?.answer?.S;
    const fetchedAt = Number(Item?.fetchedAt?.N);
    if (answer === undefined || !Number.isFinite(fetchedAt)) return undefined;
    const age = this.#now() - fetchedAt;
    const fresh = age < read.windowMs && age >= -CLOCK_SKEW_MS;
    return { answer: fresh ? (JSON.parse(answer) as unknown) : undefined, fetchedAt };
  }

  /**
   * Keep `answer`, fetched from `fetchedAt`, for its window: not when it is too large, when the item
   * was dropped after (or just before) its request started, or when a newer answer is stored. False
   * when not stored. Abandoned after the table's timeout, or `maxMs` when shorter.
   */
  async put(read: SharedRead, answer: unknown, fetchedAt: number, maxMs = this.timeoutMs): Promise<boolean> {
    const json = JSON.stringify(answer);
    if (Buffer.byteLength(json, 'utf8') > MAX_ANSWER_BYTES) return false;
    const written = await sendConditional(
      this.#client,
      new PutItemCommand({
        TableName: this.#table,
        Item: {
          pk: { S: read.key },
          answer: { S: json },
          fetchedAt: number(fetchedAt),
          expiresAt: number(Math.ceil((fetchedAt + read.windowMs) / 1000) + EXPIRY_SLACK_SECONDS),
        },
        ConditionExpression:
          '(attribute_not_exists(droppedAt) OR droppedAt <= :startedBefore) AND ' +
          '(attribute_not_exists(fetchedAt) OR fetchedAt < :fetchedAt)',
        ExpressionAttributeValues: {
          ':startedBefore': number(fetchedAt - CLOCK_SKEW_MS),
          ':fetchedAt': number(fetchedAt),
        },
      }),
      { timeoutMs: Math.min(this.timeoutMs, maxMs) },
    );
    return written !== undefined;
  }

  /** Replace the items of `reads` with tombstones: the next read goes to PayHere. */
  async drop(reads: readonly SharedRead[]): Promise<void> {
    const now = this.#now();
    await Promise.all(
      reads.map((read) =>
        this.#client.send(
          new PutItemCommand({
            TableName: this.#table,
            Item: {
              pk: { S: read.key },
              droppedAt: number(now),
              expiresAt: number(Math.ceil(now / 1000) + TOMBSTONE_SECONDS),
            },
          }),
          { timeoutMs: this.timeoutMs },
        ),
      ),
    );
  }

  forgetOrder(orderId: string | undefined): Promise<void> {
    if (orderId === undefined) return Promise.resolve();
    return this.#dropQuietly([SHARED_READS.orderPayments(orderId)], { orderId });
  }

  forgetSubscription(id: string): Promise<void> {
    const reads = [
      SHARED_READS.subscription(id),
      SHARED_READS.subscriptionPayments(id),
      SHARED_READS.subscriptions,
      // A first page reads a new snapshot; a paging under way keeps the one its cursor names.
      SHARED_READS.subscriptionsLatest,
    ];
    return this.#dropQuietly(reads, { subscriptionId: subscriptionId(id) });
  }

  /**
   * A drop that fails must not hide the money call's answer from its caller: it is logged, and the
   * stale answer lives out its window (seconds).
   */
  async #dropQuietly(reads: readonly SharedRead[], context: Record<string, string>): Promise<void> {
    try {
      await this.drop(reads);
    } catch (error) {
      log.warn('could not drop a shared read after a change: it is served until its window ends', {
        ...context,
        error: describeError(error),
      });
    }
  }
}
