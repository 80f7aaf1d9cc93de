import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  sendConditional,
  UpdateItemCommand,
} from '../dynamodb/index.ts';

/**
 * What every container shares about PayHere (docs/contract.md "PayHere's budget"), in a DynamoDB table of
 * its own keyed by `pk`: the budget's slots and pause (item `budget`) and the access token (item
 * `token`). Everything here can be rebuilt, so the table has no backups; every change is a named
 * conditional write, so concurrent containers agree without locks.
 */

/** The budget as the table holds it: when each slot may last have been seen by PayHere, and the pause. */
export interface BudgetSnapshot {
  /** Slot index → epoch ms by which the slot's last request certainly arrived (or was abandoned). */
  busyUntil: Map<number, number>;
  /** Which take set each slot (`t<slot>`): a retry after a lost answer knows its own write by it. */
  takenBy: Map<number, string>;
  /** Epoch ms until which nobody sends (PayHere answered 429); 0 when not paused. */
  pausedUntil: number;
  /**
   * Epoch ms until which a call within its caller's share is waiting for a slot: calls beyond their
   * caller's share take none before then (docs/budget.md "Each caller's share"); 0 when none waits.
   */
  owedUntil: number;
  /**
   * Epoch ms until which a call beyond its caller's share may be waiting for a slot: only then does
   * a call within a share that waits mark `owedUntil` (no write where no spare call competes); 0.
   */
  spareUntil: number;
  /**
   * Epoch ms until which a money call may be waiting for a slot of the shared part: reads (and
   * spare calls) take none before then, so that customers' reads together never hold every slot a
   * customer's charge needs (docs/budget.md "The reserve"); 0 when none waits.
   */
  moneyUntil: number;
  /**
   * Epoch ms until which a token request may be waiting for a slot: every other call takes none
   * before then, since without the token no call reaches PayHere at all; 0 when none waits.
   */
  tokenUntil: number;
  /**
   * Epoch ms of the last take by a live call (anything but idle work): while none was made for a
   * window and its margin, idle work leaves fewer slots free (lib/budget/limiter.ts); 0 when none.
   */
  liveAt: number;
}

/**
 * A mark a waiting call leaves on the budget item, which some takes yield to (each checked in
 * the take's own conditional write): `owed`, a call within its caller's share (spare calls yield);
 * `money`, a money call waiting for a slot of the shared part (reads and spare calls yield);
 * `token`, a token request (every other call yields).
 */
export type WaitMark = 'owed' | 'money' | 'token';

/** The shared access token, as one container stored it. */
export interface SharedToken {
  value: string;
  /** Epoch ms when PayHere stops accepting it. */
  expiresAt: number;
  /** Epoch ms from which one container may fetch the next one. */
  refreshAt: number;
}

export interface StateTableOptions {
  client: DynamoDBClient;
  table: string;
  /** Each request to the table is abandoned after this long (ms): a slow table counts as down. */
  timeoutMs: number;
}

export const BUDGET_KEY = { pk: { S: 'budget' } };
export const TOKEN_KEY = { pk: { S: 'token' } };
/** Items expire a day after their last write; a table left alone empties itself (TTL). */
const TTL_SECONDS = 86_400;

const number = (value: number): AttributeValue => ({ N: String(Math.round(value)) });
const expiry = (now: number) => number(Math.floor(now / 1000) + TTL_SECONDS);

export class SharedStateTable {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #timeoutMs: number;

  constructor(options: StateTableOptions) {
    this.#client = options.client;
    this.#table = options.table;
    this.#timeoutMs = options.timeoutMs;
  }

  /** The budget item, read consistently (a missing item is an untouched budget). */
  async readBudget(): Promise<BudgetSnapshot> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: BUDGET_KEY, ConsistentRead: true }),
      { timeoutMs: this.#timeoutMs },
    );
    return budgetOf(Item);
  }

  /**
   * Take `slot` until `busyUntil` if its last request arrived by `freeBefore` and no pause runs at
   * `now`. Either way the answer shows the whole budget, so that no read is needed: a taken slot
   * shows it as the write left it (a container that knew nothing yet, a cold one, learns it from
   * its first slot), and a refused one as it was, with the slot another container was first to
   * (or the pause that began); DynamoDB sends that item with its refusal when asked to.
   * `keepFree`: slots that must be free too, untouched (idle work leaves them to live calls), checked
   * in the same write so that no container's take in between can make the check wrong.
   * `yieldTo`: the marks of waiting calls this take leaves the slot to while they run
   * (`owedUntil`, `moneyUntil`, `tokenUntil`: a spare call all three, a read the money and token
   * marks, a money call the token's), checked in the same write.
   * `options.live`: the take is a live call's, noted on the budget (`liveAt`, `now`).
   * `options.quietBefore`: the take counts on no live call having taken a slot since then (idle
   * work in a quiet spell, which leaves fewer slots free), checked in the same write.
   */
  async takeSlot(
    slot: number,
    busyUntil: number,
    freeBefore: number,
    now: number,
    take: string,
    keepFree: readonly number[] = [],
    yieldTo: readonly WaitMark[] = [],
    options: { ends?: WaitMark | undefined; live?: boolean; quietBefore?: number | undefined } = {},
  ): Promise<
    | { taken: true; budget: BudgetSnapshot; previous: number | undefined }
    | { taken: false; budget: BudgetSnapshot | undefined }
  > {
    const kept = keepFree.map((other, i) => ({ name: `#keep${i}`, slot: `s${other}` }));
    try {
      const { Attributes } = await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: BUDGET_KEY,
          UpdateExpression: `SET #slot = :busyUntil, #take = :take, expiresAt = :expiresAt${
            options.live ? ', liveAt = :now' : ''
          }${options.ends ? ` REMOVE ${options.ends}Until` : ''}`,
          ConditionExpression: [
            '(attribute_not_exists(#slot) OR #slot <= :freeBefore)',
            '(attribute_not_exists(pausedUntil) OR pausedUntil <= :now)',
            ...kept.map(({ name }) => `(attribute_not_exists(${name}) OR ${name} <= :freeBefore)`),
            ...yieldTo.map((mark) => `(attribute_not_exists(${mark}Until) OR ${mark}Until <= :now)`),
            ...(options.quietBefore === undefined
              ? []
              : ['(attribute_not_exists(liveAt) OR liveAt <= :quietBefore)']),
          ].join(' AND '),
          ExpressionAttributeNames: {
            '#slot': `s${slot}`,
            '#take': `t${slot}`,
            ...Object.fromEntries(kept.map(({ name, slot: kept }) => [name, kept])),
          },
          ExpressionAttributeValues: {
            ':busyUntil': number(busyUntil),
            ':take': { S: take },
            ':freeBefore': number(freeBefore),
            ':now': number(now),
            ':expiresAt': expiry(now),
            ...(options.quietBefore === undefined ? {} : { ':quietBefore': number(options.quietBefore) }),
          },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        { timeoutMs: this.#timeoutMs },
      );
      const budget = budgetOf(Attributes);
      const previous = budget.busyUntil.get(slot);
      budget.busyUntil.set(slot, busyUntil);
      budget.takenBy.set(slot, take);
      if (options.ends) budget[`${options.ends}Until`] = 0;
      if (options.live) budget.liveAt = Math.round(now);
      return { taken: true, budget, previous };
    } catch (error) {
      if ((error as { name?: unknown } | null)?.name !== 'ConditionalCheckFailedException') throw error;
      const item = (error as { Item?: Record<string, AttributeValue> }).Item;
      // A retry after a lost answer meets its own write (the slot names this take): taken. What the
      // slot held before is lost with the answer; it was free, so nothing is owed back.
      if (item?.[`t${slot}`]?.S === take) return { taken: true, budget: budgetOf(item), previous: undefined };
      return { taken: false, budget: item ? budgetOf(item) : undefined };
    }
  }

  /**
   * The request on `slot` got its answer (or never left) by `doneAt`: the slot frees a window after
   * that instead of a window after its deadline. Only while the slot is still the one `takeSlot` set.
   */
  releaseSlot(slot: number, busyUntil: number, doneAt: number): Promise<boolean> {
    return this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: BUDGET_KEY,
        UpdateExpression: 'SET #slot = :doneAt',
        ConditionExpression: '#slot = :busyUntil',
        ExpressionAttributeNames: { '#slot': `s${slot}` },
        ExpressionAttributeValues: { ':busyUntil': number(busyUntil), ':doneAt': number(doneAt) },
      }),
    );
  }

  /**
   * The request on `slot` never left (its read was answered from shared data, or its caller was
   * refused): the slot is as it was before `takeSlot`, `previous` (none: never used). Only while the
   * slot is still the one `takeSlot` set.
   */
  handBackSlot(slot: number, busyUntil: number, previous: number | undefined): Promise<boolean> {
    const name = { '#slot': `s${slot}` };
    return this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: BUDGET_KEY,
        ...(previous === undefined
          ? {
              UpdateExpression: 'REMOVE #slot',
              ExpressionAttributeValues: { ':busyUntil': number(busyUntil) },
            }
          : {
              UpdateExpression: 'SET #slot = :previous',
              ExpressionAttributeValues: { ':busyUntil': number(busyUntil), ':previous': number(previous) },
            }),
        ConditionExpression: '#slot = :busyUntil',
        ExpressionAttributeNames: name,
      }),
    );
  }

  /**
   * A take whose every answer was lost (its write may have been applied): the slot is freed, only
   * while it still bears that take's name and deadline. The request never left on it.
   */
  dropTake(slot: number, busyUntil: number, take: string): Promise<boolean> {
    return this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: BUDGET_KEY,
        UpdateExpression: 'REMOVE #slot, #take',
        ConditionExpression: '#slot = :busyUntil AND #take = :take',
        ExpressionAttributeNames: { '#slot': `s${slot}`, '#take': `t${slot}` },
        ExpressionAttributeValues: { ':busyUntil': number(busyUntil), ':take': { S: take } },
      }),
    );
  }

  /** Nobody sends before `until` (PayHere answered 429); a longer pause already set is kept. */
  async pause(until: number, now: number): Promise<void> {
    await this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: BUDGET_KEY,
        UpdateExpression: 'SET pausedUntil = :until, expiresAt = :expiresAt',
        ConditionExpression: 'attribute_not_exists(pausedUntil) OR pausedUntil < :until',
        ExpressionAttributeValues: { ':until': number(until), ':expiresAt': expiry(now) },
      }),
    );
  }

  /**
   * A call waits for a slot until about `until`: `owed`, one within its caller's share (calls beyond
   * their callers' shares leave it the slots that free until then), `money`, a money call waiting
   * for a slot of the shared part (reads and spare calls leave it those slots), or `spare`, one
   * beyond its share (so that calls within their shares mark when they wait). A later mark already
   * set is kept, so a write retried after it was applied and its answer lost changes nothing.
   */
  async markWaiting(who: WaitMark | 'spare', until: number, now: number): Promise<void> {
    await this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: BUDGET_KEY,
        UpdateExpression: 'SET #until = :until, expiresAt = :expiresAt',
        ConditionExpression: 'attribute_not_exists(#until) OR #until < :until',
        ExpressionAttributeNames: { '#until': `${who}Until` },
        ExpressionAttributeValues: { ':until': number(until), ':expiresAt': expiry(now) },
      }),
    );
  }

  /** The shared token, if any container stored one. */
  async readToken(): Promise<(SharedToken & { leasedUntil: number }) | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: TOKEN_KEY, ConsistentRead: true }),
      { timeoutMs: this.#timeoutMs },
    );
    if (!Item) return undefined;
    const leasedUntil = Number(Item.leasedUntil?.N ?? 0);
    if (Item.value?.S === undefined) return { value: '', expiresAt: 0, refreshAt: 0, leasedUntil };
    return {
      value: Item.value.S,
      expiresAt: Number(Item.tokenExpiresAt?.N ?? 0),
      refreshAt: Number(Item.refreshAt?.N ?? 0),
      leasedUntil,
    };
  }

  /**
   * The right to fetch the next token, for `owner` until `until`, unless another container holds
   * it or the stored token is not due. One container asks PayHere; the others keep using the current token or wait for its result.
   */
  leaseToken(owner: string, until: number, now: number): Promise<boolean> {
    return this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: TOKEN_KEY,
        UpdateExpression: 'SET leaseOwner = :owner, leasedUntil = :until, expiresAt = :expiresAt',
        // And only while the token is missing or due: a container that read the item before
        // another stored a fresh token must not fetch yet another.
        // Or this very lease's own write, met again by a retry after its answer was lost (owner is the lease's own).
        ConditionExpression:
          '(attribute_not_exists(leasedUntil) OR leasedUntil <= :now OR (leaseOwner = :owner AND leasedUntil = :until)) AND (attribute_not_exists(refreshAt) OR refreshAt <= :now)',
        ExpressionAttributeValues: {
          ':owner': { S: owner },
          ':until': number(until),
          ':now': number(now),
          ':expiresAt': expiry(now),
        },
      }),
    );
  }

  /** Store the token `owner` fetched and end its lease; only while it still holds the lease. */
  storeToken(owner: string, token: SharedToken, now: number): Promise<boolean> {
    return this.#conditional(
      new PutItemCommand({
        TableName: this.#table,
        Item: {
          ...TOKEN_KEY,
          value: { S: token.value },
          tokenExpiresAt: number(token.expiresAt),
          refreshAt: number(token.refreshAt),
          expiresAt: expiry(now),
        },
        ConditionExpression: 'leaseOwner = :owner',
        ExpressionAttributeValues: { ':owner': { S: owner } },
      }),
    );
  }

  /**
   * Give back the lease `owner` took until `until` without a token (the fetch failed): the next
   * container may try at once. Only that lease: another call of the same container may hold one.
   */
  async endLease(owner: string, until: number): Promise<void> {
    await this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: TOKEN_KEY,
        UpdateExpression: 'REMOVE leaseOwner, leasedUntil',
        ConditionExpression: 'leaseOwner = :owner AND leasedUntil = :until',
        ExpressionAttributeValues: { ':owner': { S: owner }, ':until': number(until) },
      }),
    );
  }

  /**
   * PayHere rejected `value`: forget it, but only if it is still the current token (no newer one
   * replaced it). A lease running meanwhile is kept.
   */
  dropToken(value: string): Promise<boolean> {
    return this.#conditional(
      new UpdateItemCommand({
        TableName: this.#table,
        Key: TOKEN_KEY,
        UpdateExpression: 'REMOVE #value, tokenExpiresAt, refreshAt',
        ConditionExpression: '#value = :value',
        ExpressionAttributeNames: { '#value': 'value' },
        ExpressionAttributeValues: { ':value': { S: value } },
      }),
    );
  }

  /** False when the condition failed; any other failure (timeout, throttling, no table) throws. */
  async #conditional(command: UpdateItemCommand | PutItemCommand): Promise<boolean> {
    const options = { timeoutMs: this.#timeoutMs };
    return (await sendConditional(this.#client, command, options)) !== undefined;
  }
}

/** The budget an item holds (a missing item is an untouched budget). */
function budgetOf(item: Record<string, AttributeValue> | undefined): BudgetSnapshot {
  const busyUntil = new Map<number, number>();
  const takenBy = new Map<number, string>();
  for (const [name, value] of Object.entries(item ?? {})) {
    const slot = /^s(\d+)$/.exec(name);
    if (slot && value.N !== undefined) busyUntil.set(Number(slot[1]), Number(value.N));
    const taker = /^t(\d+)$/.exec(name);
    if (taker && value.S !== undefined) takenBy.set(Number(taker[1]), value.S);
  }
  return {
    busyUntil,
    takenBy,
    pausedUntil: Number(item?.pausedUntil?.N ?? 0),
    owedUntil: Number(item?.owedUntil?.N ?? 0),
    spareUntil: Number(item?.spareUntil?.N ?? 0),
    moneyUntil: Number(item?.moneyUntil?.N ?? 0),
    tokenUntil: Number(item?.tokenUntil?.N ?? 0),
    liveAt: Number(item?.liveAt?.N ?? 0),
  };
}
