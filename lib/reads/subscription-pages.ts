import * as z from 'zod/mini';
import { SubscriptionList, type SubscriptionRecord } from '../gateway/schemas.ts';
import { describeError, log } from '../log/log.ts';
import type { SharedReads } from './shared-reads.ts';
import { MAX_ANSWER_BYTES, SHARED_READS, type SharedRead, type SharedReadStore } from './store.ts';

/**
 * The merchant's subscriptions a page at a time (docs/contract.md "Subscription lists"), newest
 * first by subscription id. PayHere answers its list only whole (no paging, no filter), so a page is
 * cut from one fetched list, a snapshot, shared by every page of every caller and container:
 *
 *   read#subscriptions-latest             which snapshot a first page reads (the list's 30 s window)
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
type Index = z.infer<typeof Index>;
const Latest = z.object({ fetchedAt: z.number() });

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
}

export class SubscriptionPages {
  readonly #reads: SharedReads;
  readonly #store: SharedReadStore;

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
    let snapshot = await this.#stored(after?.snapshot, deadline);
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
      if (snapshot.parts && (next !== null || !snapshot.sharedWhole)) await this.#keep(snapshot, deadline);
      return {
        records: shown,
        next,
        fetchedAt: snapshot.fetchedAt,
        shared: snapshot.shared,
      };
    }
    throw new Error('the subscription list could not be read twice in a row');
  }

  /** The snapshot a cursor names, or the latest one while fresh; undefined when the table has neither. */
  async #stored(named: number | undefined, deadline: number): Promise<Snapshot | undefined> {
    try {
      let fetchedAt = named;
      if (fetchedAt === undefined) {
        const latest = await this.#store.get(SHARED_READS.subscriptionsLatest, this.#tableTime(deadline));
        const parsed = latest?.answer === undefined ? undefined : Latest.safeParse(latest.answer);
        if (!parsed?.success) return undefined;
        fetchedAt = parsed.data.fetchedAt;
      }
      const stored = await this.#store.get(snapshotIndex(fetchedAt), this.#tableTime(deadline));
      const index = stored?.answer === undefined ? undefined : Index.safeParse(stored.answer);
      return index?.success ? { fetchedAt, index: index.data, shared: true } : undefined;
    } catch (error) {
      log.warn('could not read a stored subscription list: it is fetched', { error: describeError(error) });
      return undefined;
    }
  }

  /** The list (the shared one while fresh, else PayHere's), sorted and cut into parts, not kept yet. */
  async #fetch(deadline: number): Promise<Snapshot> {
    const served = await this.#reads.listSubscriptions(deadline);
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
      // One part: the shared reads keep the whole list as one answer too (read#subscriptions).
      sharedWhole: parts.length <= 1,
    };
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
      await this.#store.put(SHARED_READS.subscriptionsLatest, { fetchedAt }, fetchedAt, ms);
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

/** The sorted list in parts: at most PART records each, and at most PART_BYTES of JSON (a record alone may be more). */
function partsOf(records: readonly SubscriptionRecord[]): SubscriptionRecord[][] {
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
function partsFor(index: Index, below: number, limit: number, wanted: number[] | undefined): number[] {
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
