// About 410 lines, one file: the idempotency record's conditional writes (begin, claim, finish,
// settle index, delete), each guarding the others' states; read side by side, their conditions show
// that no two requests can both send.
import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  sendConditional,
  UpdateItemCommand,
} from '../dynamodb/index.ts';

/**
 * in_progress: an invocation holds the key until `lockedUntil` (its Lambda deadline).
 * complete: the gateway's answer (or a definitive refusal) is stored and replayed.
 * outcome_unknown: the request may have reached the gateway without a usable answer; kept,
 * never deleted, so a repeat reconciles instead of sending the money request again.
 */
export type RecordState = 'in_progress' | 'complete' | 'outcome_unknown';

/** What the client got: replayed with the same status and the same body bytes. */
export interface StoredResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

export interface IdempotencyRecord {
  key: string;
  state: RecordState;
  fingerprint: string;
  /** Epoch ms when the first attempt started: reconciliation looks for payments from then on. */
  startedAt: number;
  /** The invocation that holds or last held the record; only it may finish or release it. */
  attempt: string;
  /** Epoch ms; set while in_progress: after it the holder is certainly dead. */
  lockedUntil?: number;
  /**
   * Set on an in_progress record whose attempt provably sent nothing but could not be deleted:
   * a repeat may then send the request (it never left) instead of treating it as unknown.
   */
  notSent?: boolean;
  /** Epoch seconds: the table's TTL attribute and, for reads, the end of the record's life. */
  expiresAt: number;
  response?: StoredResponse;
  /**
   * Until the record is complete: what the settle job needs to settle it without the request (the
   * route's own settlement subject, JSON), and from when (epoch ms). A record in the settle index.
   */
  settle?: { subject: string; at: number };
  /** Epoch ms: when its outcome was last looked for at PayHere and stayed unknown. */
  triedAt?: number;
}

/**
 * The idempotency table's settle index (serverless.yml): sparse, only records not complete yet
 * (in progress, or outcome_unknown) are in it, ordered by when they are due for settlement.
 */
export const SETTLE_INDEX = 'settle';
const SETTLE_QUEUE = 'money';

/**
 * An unknown outcome is looked for at PayHere at most this often per key (UNKNOWN_LOOK_AGAIN_SECONDS):
 * every look is a search on the money share, and a client told "repeat later" may repeat at once.
 */
export const LOOK_AGAIN_MS = 30_000;

export interface IdempotencyStoreOptions {
  client: DynamoDBClient;
  table: string;
  /** How long an answer is kept: at least 7 days (docs/contract.md "Idempotency"). */
  ttlSeconds: number;
  /** Epoch ms; injectable so tests can move through a day without waiting. */
  now?: () => number;
  /** When a money request not answered yet is due for the settle job: this long after its lock (default 10 minutes). */
  settleDelayMs?: number;
  /** A repeat of an unknown outcome looks at PayHere at most this often (default LOOK_AGAIN_MS). */
  lookAgainMs?: number;
}

/** Every attribute name goes through a placeholder: several (`state`, ...) are DynamoDB reserved words. */
const NAMES = {
  '#key': 'pk',
  '#state': 'state',
  '#attempt': 'attempt',
  '#lockedUntil': 'lockedUntil',
  '#expiresAt': 'expiresAt',
  '#statusCode': 'statusCode',
  '#headers': 'headers',
  '#body': 'body',
  '#notSent': 'notSent',
  '#settleQueue': 'settleQueue',
  '#settleAt': 'settleAt',
  '#subject': 'subject',
  '#triedAt': 'triedAt',
};

/**
 * The idempotency records in one DynamoDB table, keyed by `pk`. Every write is conditional, so
 * concurrent invocations agree on one owner per key. DynamoDB deletes expired items lazily (up
 * to days late), so every read and condition treats an item past `expiresAt` as absent.
 */
export class IdempotencyStore {
  readonly now: () => number;
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #ttlSeconds: number;
  readonly settleDelayMs: number;
  /** How long a repeat of an unknown outcome gets its last answer again rather than a look at PayHere. */
  readonly lookAgainMs: number;

  constructor(options: IdempotencyStoreOptions) {
    this.#client = options.client;
    this.#table = options.table;
    this.#ttlSeconds = options.ttlSeconds;
    this.now = options.now ?? Date.now;
    this.settleDelayMs = options.settleDelayMs ?? 600_000;
    this.lookAgainMs = options.lookAgainMs ?? LOOK_AGAIN_MS;
  }

  /**
   * Create an in_progress record for `key` unless a live record exists. Returns the new record,
   * or the live one (undefined if it vanished between the two reads: the caller tries again).
   */
  async begin(
    key: string,
    fingerprint: string,
    lockedUntil: number,
    settle?: IdempotencyRecord['settle'],
  ): Promise<{ acquired: IdempotencyRecord } | { existing: IdempotencyRecord | undefined }> {
    const now = this.now();
    const record: IdempotencyRecord = {
      key,
      state: 'in_progress',
      fingerprint,
      startedAt: now,
      attempt: randomUUID(),
      lockedUntil,
      // Until it is settled, a record may hide a request the gateway processed: it never expires.
      expiresAt: NEVER_EXPIRES,
      ...(settle ? { settle } : {}),
    };
    let written: boolean;
    try {
      written = await this.#conditional(
        new PutItemCommand({
          TableName: this.#table,
          Item: toItem(record),
          ConditionExpression: 'attribute_not_exists(#key) OR #expiresAt <= :now',
          ExpressionAttributeNames: pick('#key', '#expiresAt'),
          ExpressionAttributeValues: { ':now': seconds(now) },
        }),
      );
    } catch (error) {
      // Every try failed, perhaps each applied with its answer lost: a record of this attempt would
      // lock the key as a request that may have been sent (nothing was). Found, it is ours to go on with.
      const left = await this.get(key).catch(() => undefined);
      if (left?.attempt === record.attempt) return { acquired: left };
      throw error;
    }
    if (written) return { acquired: record };
    const existing = await this.get(key);
    // The SDK repeats a write whose answer it lost: a failed condition may be our own write, done.
    if (existing?.attempt === record.attempt) return { acquired: existing };
    return { existing };
  }

  /** The live record for `key`, read strongly consistent. */
  async get(key: string): Promise<IdempotencyRecord | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: { pk: { S: key } }, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    const record = fromItem(Item);
    return record.expiresAt * 1000 > this.now() ? record : undefined;
  }

  /**
   * Take over `seen` (an abandoned in_progress record, or an outcome_unknown one to reconcile)
   * as a new attempt, if nobody changed it since it was read. The first start time is kept.
   */
  async claim(seen: IdempotencyRecord, lockedUntil: number): Promise<IdempotencyRecord | undefined> {
    const now = this.now();
    const attempt = randomUUID();
    const claimed = await this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: seen.key } },
        UpdateExpression:
          'SET #state = :inProgress, #attempt = :attempt, #lockedUntil = :lockedUntil REMOVE #notSent',
        ConditionExpression: '#attempt = :seenAttempt AND #state = :seenState AND #expiresAt > :now',
        ExpressionAttributeNames: pick('#state', '#attempt', '#lockedUntil', '#expiresAt', '#notSent'),
        ExpressionAttributeValues: {
          ':inProgress': { S: 'in_progress' },
          ':attempt': { S: attempt },
          ':lockedUntil': number(lockedUntil),
          ':seenAttempt': { S: seen.attempt },
          ':seenState': { S: seen.state },
          ':now': seconds(now),
        },
      }),
    );
    if (claimed) return { ...seen, state: 'in_progress', attempt, lockedUntil, notSent: false };
    const current = await this.get(seen.key);
    return current?.attempt === attempt ? current : undefined;
  }

  /**
   * Store the answer of the attempt that holds the record. A complete answer then lives
   * `ttlSeconds` from now; an outcome_unknown one never expires (docs/contract.md "Idempotency"), so its
   * key can never send the money request again. False when the attempt no longer holds it
   * (another invocation took it over).
   */
  async finish(
    held: IdempotencyRecord,
    state: Exclude<RecordState, 'in_progress'>,
    response: StoredResponse,
    /** outcome_unknown: when the settle job looks at it again (unchanged when absent). */
    settleAt?: number,
  ): Promise<boolean> {
    const values: Record<string, AttributeValue> = {
      ':state': { S: state },
      ':statusCode': number(response.statusCode),
      ':headers': { S: JSON.stringify(response.headers) },
      ':body': { S: response.body },
      ':expiresAt': number(state === 'complete' ? this.#expiry(this.now()) : NEVER_EXPIRES),
      ':attempt': { S: held.attempt },
      ':inProgress': { S: 'in_progress' },
    };
    let update =
      'SET #state = :state, #statusCode = :statusCode, #headers = :headers, #body = :body, #expiresAt = :expiresAt';
    // A complete record leaves the settle index; an unknown one stays in it until it is settled.
    let remove = 'REMOVE #lockedUntil';
    if (state === 'complete') remove += ', #settleQueue, #settleAt, #subject, #triedAt';
    else {
      // Unknown after a look at PayHere (the attempt's own, or a settlement's): a repeat within a
      // while gets this answer again rather than another look (lib/idempotency/idempotent.ts).
      update += ', #triedAt = :triedAt';
      values[':triedAt'] = number(this.now());
      if (settleAt !== undefined) {
        update += ', #settleAt = :settleAt';
        values[':settleAt'] = number(settleAt);
      }
    }
    const stored = await this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: held.key } },
        UpdateExpression: `${update} ${remove}`,
        ConditionExpression: '#attempt = :attempt AND #state = :inProgress',
        ExpressionAttributeNames: namesIn(`${update} ${remove} #attempt`),
        ExpressionAttributeValues: values,
      }),
    );
    if (stored) return true;
    // A repeat by the SDK of a write that was done finds its own answer stored.
    const current = await this.get(held.key);
    return current?.attempt === held.attempt && current.state === state;
  }

  /** The keys of records due for settlement at `now` (keys only: read each again before acting), oldest first. */
  async due(now: number, limit: number): Promise<string[]> {
    const { Items } = await this.#client.send(
      new QueryCommand({
        TableName: this.#table,
        IndexName: SETTLE_INDEX,
        KeyConditionExpression: '#settleQueue = :queue AND #settleAt <= :now',
        ExpressionAttributeNames: pick('#settleQueue', '#settleAt'),
        ExpressionAttributeValues: { ':queue': { S: SETTLE_QUEUE }, ':now': number(now) },
        Limit: limit,
      }),
    );
    return (Items ?? []).flatMap((item) => (item.pk?.S ? [item.pk.S] : []));
  }

  /** An unknown record that could not be settled now is looked at again at `settleAt`. */
  async postpone(seen: IdempotencyRecord, settleAt: number): Promise<boolean> {
    return this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: seen.key } },
        UpdateExpression: 'SET #settleAt = :settleAt',
        ConditionExpression: '#attempt = :attempt AND attribute_exists(#settleQueue)',
        ExpressionAttributeNames: pick('#settleAt', '#attempt', '#settleQueue'),
        ExpressionAttributeValues: { ':settleAt': number(settleAt), ':attempt': { S: seen.attempt } },
      }),
    );
  }

  /** Delete the record of an attempt that provably sent nothing, so the key can be used again. */
  async release(held: IdempotencyRecord): Promise<boolean> {
    const deleted = await this.#conditional(
      new DeleteItemCommand({
        TableName: this.#table,
        Key: { pk: { S: held.key } },
        ConditionExpression: '#attempt = :attempt AND #state = :inProgress',
        ExpressionAttributeNames: pick('#attempt', '#state'),
        ExpressionAttributeValues: { ':attempt': { S: held.attempt }, ':inProgress': { S: 'in_progress' } },
      }),
    );
    // A repeat by the SDK of a delete that was done finds nothing there.
    return deleted || (await this.get(held.key)) === undefined;
  }

  /**
   * Say on the record that its attempt provably sent nothing, when deleting it failed: a repeat
   * then sends the request (it never left) instead of taking it for an unknown outcome.
   */
  async markNotSent(held: IdempotencyRecord): Promise<boolean> {
    return this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: { pk: { S: held.key } },
        UpdateExpression: 'SET #notSent = :true',
        ConditionExpression: '#attempt = :attempt AND #state = :inProgress',
        ExpressionAttributeNames: pick('#notSent', '#attempt', '#state'),
        ExpressionAttributeValues: {
          ':true': { BOOL: true },
          ':attempt': { S: held.attempt },
          ':inProgress': { S: 'in_progress' },
        },
      }),
    );
  }

  #expiry(now: number): number {
    return Math.ceil(now / 1000) + this.#ttlSeconds;
  }

  /** Send a conditional write: false when its condition failed, any other error thrown. */
  async #conditional(command: PutItemCommand | UpdateItemCommand | DeleteItemCommand): Promise<boolean> {
    return (await sendConditional(this.#client, command)) !== undefined;
  }
}

function pick(...placeholders: (keyof typeof NAMES)[]): Record<string, string> {
  return Object.fromEntries(placeholders.map((placeholder) => [placeholder, NAMES[placeholder]]));
}

/** The names an expression uses, from NAMES. */
function namesIn(expression: string): Record<string, string> {
  return pick(
    ...(Object.keys(NAMES) as (keyof typeof NAMES)[]).filter((placeholder) =>
      new RegExp(`${placeholder}\\b`).test(expression),
    ),
  );
}

function number(value: number): AttributeValue {
  return { N: String(value) };
}

/**
 * The expiry of records that must outlive any TTL: in_progress and outcome_unknown. Far beyond
 * any clock, so DynamoDB's TTL never removes them and every `expiresAt <= now` test is false.
 */
export const NEVER_EXPIRES = 253_402_300_799; // 9999-12-31T23:59:59Z in epoch seconds

/** Whole epoch seconds at or before `ms`: `expiresAt <= seconds(now)` is "expired at now". */
function seconds(ms: number): AttributeValue {
  return number(Math.floor(ms / 1000));
}

function toItem(record: IdempotencyRecord): Record<string, AttributeValue> {
  return {
    pk: { S: record.key },
    state: { S: record.state },
    fingerprint: { S: record.fingerprint },
    startedAt: number(record.startedAt),
    attempt: { S: record.attempt },
    expiresAt: number(record.expiresAt),
    ...(record.lockedUntil === undefined ? {} : { lockedUntil: number(record.lockedUntil) }),
    ...(record.settle === undefined
      ? {}
      : {
          settleQueue: { S: SETTLE_QUEUE },
          settleAt: number(record.settle.at),
          subject: { S: record.settle.subject },
        }),
  };
}

const STATES: readonly string[] = ['in_progress', 'complete', 'outcome_unknown'];

/** Read an item back; an item this module did not write is an error, not something to guess at. */
function fromItem(item: Record<string, AttributeValue>): IdempotencyRecord {
  const text = (name: string) => {
    const value = item[name]?.S;
    if (value === undefined) throw new Error(`idempotency record without ${name}`);
    return value;
  };
  const numeric = (name: string) => {
    const value = Number(item[name]?.N);
    if (item[name]?.N === undefined || !Number.isFinite(value)) {
      throw new Error(`idempotency record without a numeric ${name}`);
    }
    return value;
  };
  const state = text('state');
  if (!STATES.includes(state)) throw new Error(`idempotency record in an unknown state ${state}`);
  const record: IdempotencyRecord = {
    key: text('pk'),
    state: state as RecordState,
    fingerprint: text('fingerprint'),
    startedAt: numeric('startedAt'),
    attempt: text('attempt'),
    expiresAt: numeric('expiresAt'),
  };
  if (item.lockedUntil !== undefined) record.lockedUntil = numeric('lockedUntil');
  if (item.notSent?.BOOL === true) record.notSent = true;
  if (item.triedAt?.N !== undefined) record.triedAt = numeric('triedAt');
  if (item.subject?.S !== undefined && item.settleAt?.N !== undefined)
    record.settle = { subject: item.subject.S, at: numeric('settleAt') };
  if (state !== 'in_progress') {
    record.response = {
      statusCode: numeric('statusCode'),
      headers: JSON.parse(text('headers')) as Record<string, string>,
      body: text('body'),
    };
  }
  return record;
}
