import * as z from 'zod/mini';
import type { Result } from '../gateway/payhere.ts';
import { SubscriptionList, type SubscriptionRecord } from '../gateway/schemas.ts';
import { describeError, log } from '../log/log.ts';
import type { Served, SharedReads } from './shared-reads.ts';
import { MAX_ANSWER_BYTES, SHARED_READS, type SharedRead, type SharedReadStore } from './store.ts';

/**
 * The merchant's subscriptions a page at a time (docs/contract.md "Subscription lists"), newest
 * first by subscription id. PayHere answers its list only whole (no paging, no filter), so a page is
 * cut from one fetched list, a snapshot, shared by every page of every caller and container:
 *
 *   read#subscriptions-latest             the snapshot a first page reads, its index (the list's 30 s)
 *   read#subscriptions@<fetchedAt>        a snapshot's index: each part's first and last ids
 *   read#subscriptions@<fetchedAt>#<n>    its part n: up to 100 records, newest first, of at most
 *                                         what the table keeps of one answer
 *
 * A snapshot is kept for SNAPSHOT_WINDOW_MS, so the pages after the first are read from it, whoever
 * asks and however long the list: one PayHere call per snapshot, never one per page, and a page
 * reads from the table the parts that hold it (two, for a merchant's page of records of usual size). A cursor names its snapshot and the
 * last id shown: a snapshot gone (its window over, or a write lost) is fetched anew and the list goes
 * on after that id, so every subscription is listed once across the pages. A part over the table's
 * item size is not kept: the page that needs it fetches the list again.
 */
export const PART = 100;
/** A part's records as JSON are at most the size the shared reads keep (MAX_ANSWER_BYTES). */
const PART_BYTES = MAX_ANSWER_BYTES;
/** How long a snapshot serves the pages after its first: a merchant paging through 10,000 subscriptions. */
export const SNAPSHOT_WINDOW_MS = 600_000;

const snapshotIndex = (fetchedAt: number): SharedRead => ({
  key: `read#subscriptions@${fetchedAt}`,
  windowMs: SNAPSHOT_WINDOW_MS,
});
const snapshotPart = (fetchedAt: number, part: number): SharedRead => ({
  key: `read#subscriptions@${fetchedAt}#${part}`,
  windowMs: SNAPSHOT_WINDOW_MS,
});

const Index = z.object({
  count: z.number(),
  /** Each part's first (largest) and last (smallest) subscription id, and how many it holds. */
  parts: z.array(z.object({ first: z.number(), last: z.number(), count: z.number() })),
});
export type Index = z.infer<typeof Index>;
/** The latest snapshot, its index beside it: a first page reads it and the parts, nothing between. */
const Latest = z.object({ fetchedAt: z.number(), index: Index });

/** Where a page ends: the snapshot it was cut from and the last subscription id it showed. */
export interface Position {
  snapshot: number;
  id: number;
}

export interface SubscriptionPage {
  records: SubscriptionRecord[];
  /** Where the next page starts; null on the last one. */
  next: Position | null;
  /** Epoch ms when the snapshot's request to PayHere started. */
  fetchedAt: number;
  /** From a stored snapshot (the answer carries `Age`), not fetched for this page. */
  shared: boolean;
}

/** A subscription id as the list sorts it; one that is not a number sorts last. */
export function idOf(record: Pick<SubscriptionRecord, 'subscription_id'>): number {
  const id = Number(String(record.subscription_id));
  return Number.isSafeInteger(id) ? id : -1;
}

const newestFirst = (a: SubscriptionRecord, b: SubscriptionRecord) => idOf(b) - idOf(a);

/**
 * A snapshot: its index, and when this request fetched it its records and parts (else read part by
 * part from the table).
 */
interface Snapshot {
  fetchedAt: number;
  index: Index;
  records?: SubscriptionRecord[];
  parts?: SubscriptionRecord[][];
  shared: boolean;
  /** The list is small enough for the shared reads to keep whole: a first page needs no snapshot kept. */
  sharedWhole?: boolean;
  /** Its writes to the table, once started. */
  keeping?: Promise<void>;
}

export class SubscriptionPages {
  readonly #reads: SharedReads;
  readonly #store: SharedReadStore;
  #firstRunning: Promise<Snapshot> | undefined;

  constructor(options: { reads: SharedReads; store: SharedReadStore }) {
    this.#reads = options.reads;
    this.#store = options.store;
  }

  /**
   * Up to `limit` subscriptions after `after` (from the start without it), newest first: every one,
   * or only those whose ids are in `only` (a customer's own).
   */
  async page(options: {
    limit: number;
    after?: Position;
    only?: ReadonlySet<string>;
    deadline: number;
  }): Promise<SubscriptionPage> {
    const { limit, after, only, deadline } = options;
    const below = after?.id ?? Number.POSITIVE_INFINITY;
    let snapshot =
      after === undefined ? await this.#firstOnce(deadline) : await this.#named(after.snapshot, deadline);
    for (let round = 0; round < 2; round++) {
      snapshot ??= await this.#fetch(deadline);
      const wanted = only === undefined ? undefined : ownIds(only, below);
      const parts = partsFor(snapshot.index, below, limit, wanted);
      const records = await this.#records(snapshot, parts, deadline);
      if (records === undefined) {
        // A part is gone (its write lost, or too large to keep): the list is fetched again.
        snapshot = undefined;
        continue;
      }
      const listed = records
        .filter((record) => idOf(record) < below)
        .filter((record) => only === undefined || only.has(String(idOf(record))));
      const shown = listed.slice(0, limit);
      const lastPart = parts.length === 0 ? -1 : parts[parts.length - 1]!;
      const more =
        listed.length > limit ||
        (only === undefined
          ? lastPart < snapshot.index.parts.length - 1 && shown.length === limit
          : (wanted?.length ?? 0) > limit);
      const last = shown.at(-1);
      const next = more && last ? { snapshot: snapshot.fetchedAt, id: idOf(last) } : null;
      // Kept before the page is answered, so that the next page, in whatever container, finds it.
      // (once: first pages sharing a snapshot fetched for them share its writes too).
      if (snapshot.parts && (next !== null || !snapshot.sharedWhole)) {
        snapshot.keeping ??= this.#keep(snapshot, deadline);
        await snapshot.keeping;
      }
      return {
        records: shown,
        next,
        fetchedAt: snapshot.fetchedAt,
        shared: snapshot.shared,
      };
    }
    throw new Error('the subscription list could not be read twice in a row');
  }

  /**
   * First pages asked at once in one container share one look at the table (as the shared reads'
   * callers share one lookup and one fetch): many customers opening the app at once cost the table
   * two reads, not two each.
   */
  #firstOnce(deadline: number): Promise<Snapshot> {
    this.#firstRunning ??= this.#first(deadline).finally(() => {
      this.#firstRunning = undefined;
    });
    return this.#firstRunning;
  }

  /**
   * What a first page reads: the latest snapshot while fresh, looked up beside the list the shared
   * reads keep whole, and that list (or PayHere's, its call's slot taken beside the lookups) when
   * there is no snapshot: a small list's first page costs what the shared list costs.
   */
  async #first(deadline: number): Promise<Snapshot> {
    const found = await this.#reads.listSubscriptionsUnless(
      this.#get(SHARED_READS.subscriptionsLatest, Latest, deadline),
      deadline,
    );
    if ('instead' in found)
      return { fetchedAt: found.instead.fetchedAt, index: found.instead.index, shared: true };
    return snapshotOf(found);
  }

  /** The snapshot a cursor names, while the table holds it. */
  async #named(fetchedAt: number, deadline: number): Promise<Snapshot | undefined> {
    const index = await this.#get(snapshotIndex(fetchedAt), Index, deadline);
    return index ? { fetchedAt, index, shared: true } : undefined;
  }

  /** A stored item's answer while fresh and well formed; undefined otherwise, or when the table fails. */
  async #get<T>(read: SharedRead, schema: z.ZodMiniType<T>, deadline: number): Promise<T | undefined> {
    try {
      const stored = await this.#store.get(read, this.#tableTime(deadline));
      const parsed = stored?.answer === undefined ? undefined : schema.safeParse(stored.answer);
      return parsed?.success ? parsed.data : undefined;
    } catch (error) {
      log.warn('could not read a stored subscription list: it is fetched', { error: describeError(error) });
      return undefined;
    }
  }

  /** The list (the shared one while fresh, else PayHere's), sorted and cut into parts, not kept yet. */
  async #fetch(deadline: number): Promise<Snapshot> {
    return snapshotOf(await this.#reads.listSubscriptions(deadline));
  }

  /**
   * Keep a snapshot fetched for this page: its parts first, then the index that finds them, then the
   * pointer that finds the index. Not kept, the page is answered all the same, and the next one
   * fetches the list again.
   */
  async #keep(snapshot: Snapshot, deadline: number): Promise<void> {
    const { fetchedAt, index, parts = [] } = snapshot;
    try {
      const ms = this.#tableTime(deadline);
      await Promise.all(
        parts.map((part, n) => this.#store.put(snapshotPart(fetchedAt, n), part, fetchedAt, ms)),
      );
      await this.#store.put(snapshotIndex(fetchedAt), index, fetchedAt, ms);
      await this.#store.put(SHARED_READS.subscriptionsLatest, { fetchedAt, index }, fetchedAt, ms);
    } catch (error) {
      log.warn('could not keep the subscription list for its next pages', { error: describeError(error) });
    }
  }

  /** The records of `parts` of the snapshot; undefined when one is gone from the table. */
  async #records(
    snapshot: Snapshot,
    parts: readonly number[],
    deadline: number,
  ): Promise<SubscriptionRecord[] | undefined> {
    if (snapshot.records) {
      const { records, index } = snapshot;
      const starts = index.parts.map((_, n) =>
        index.parts.slice(0, n).reduce((sum, part) => sum + part.count, 0),
      );
      return parts.flatMap((n) => records.slice(starts[n], starts[n]! + index.parts[n]!.count));
    }
    try {
      const read = await Promise.all(
        parts.map((n) => this.#store.get(snapshotPart(snapshot.fetchedAt, n), this.#tableTime(deadline))),
      );
      const records: SubscriptionRecord[] = [];
      for (const stored of read) {
        const parsed = stored?.answer === undefined ? undefined : SubscriptionList.safeParse(stored.answer);
        if (!parsed?.success) return undefined;
        records.push(...parsed.data);
      }
      return records;
    } catch (error) {
      log.warn('could not read a stored subscription list: it is fetched', { error: describeError(error) });
      return undefined;
    }
  }

  /** As the shared reads: the table's timeout, and never more than a quarter of the time left. */
  #tableTime(deadline: number): number {
    return Math.max(1, Math.min(this.#store.timeoutMs, Math.floor((deadline - Date.now()) / 4)));
  }
}

/** The list as served, sorted and cut into parts: a snapshot not kept yet. */
function snapshotOf(served: Served<Result<SubscriptionRecord[]>>): Snapshot {
  const records = [...served.answer.data].sort(newestFirst);
  const parts = partsOf(records);
  const index: Index = {
    count: records.length,
    parts: parts.map((part) => ({ first: idOf(part[0]!), last: idOf(part.at(-1)!), count: part.length })),
  };
  return {
    fetchedAt: served.fetchedAt,
    index,
    records,
    parts,
    shared: served.shared,
    // Small enough for the shared reads to keep the whole list as one answer (read#subscriptions).
    sharedWhole: Buffer.byteLength(JSON.stringify(served.answer), 'utf8') <= MAX_ANSWER_BYTES,
  };
}

/** The sorted list in parts: at most PART records each, and at most PART_BYTES of JSON (a record alone may be more). */
export function partsOf(records: readonly SubscriptionRecord[]): SubscriptionRecord[][] {
  const parts: SubscriptionRecord[][] = [];
  let part: SubscriptionRecord[] = [];
  let bytes = 2;
  for (const record of records) {
    const size = Buffer.byteLength(JSON.stringify(record), 'utf8') + 1;
    if (part.length > 0 && (part.length === PART || bytes + size > PART_BYTES)) {
      parts.push(part);
      part = [];
      bytes = 2;
    }
    part.push(record);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/** A customer's own ids below `below`, newest first, as numbers. */
function ownIds(only: ReadonlySet<string>, below: number): number[] {
  return [...only]
    .map(Number)
    .filter((id) => Number.isSafeInteger(id) && id < below)
    .sort((a, b) => b - a);
}

/**
 * The parts a page reads: for every subscription, the part where ids below `below` start and the
 * next (a page of at most 100 spans two); for a customer's own, the parts that may hold the first
 * `limit` + 1 of them (one more tells whether there is a next page).
 */
export function partsFor(index: Index, below: number, limit: number, wanted: number[] | undefined): number[] {
  if (wanted === undefined) {
    const start = index.parts.findIndex((part) => part.last < below);
    if (start === -1) return [];
    // The part where the page starts, and those after it until they hold a page.
    const parts = [start];
    for (let n = start + 1, held = 0; n < index.parts.length && held < limit; n++) {
      parts.push(n);
      held += index.parts[n]!.count;
    }
    return parts;
  }
  const parts = new Set<number>();
  for (const id of wanted.slice(0, limit + 1)) {
    const n = index.parts.findIndex((part) => part.last <= id && id <= part.first);
    if (n !== -1) parts.add(n);
  }
  return [...parts].sort((a, b) => a - b);
}
