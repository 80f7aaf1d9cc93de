import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomUUID } from 'node:crypto';
import { ConfigError, type Env } from '../config/config.ts';
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '../dynamodb/index.ts';
import { CallerRateLimitedError, notSent } from '../envelope/errors.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { LruMap } from '../memory/lru-map.ts';
import type { StateTableOptions } from './state-table.ts';

/**
 * Each caller's share of PayHere's budget (docs/contract.md "Each caller has a share"), counted in
 * the shared state table so that every container counts alike, with one conditional write per
 * PayHere call. A caller's first `calls` calls of a window are within its share: they take slots
 * as they always did. Its calls beyond that, up to its `cap`, are *spare*: not refused, they take
 * a slot of the budget's shared part only while no call within its caller's share waits for one
 * (lib/budget/limiter.ts), so a caller alone uses what nobody else does, and under contention each
 * caller still gets its share. Beyond the cap, or beyond `money` money requests per longer window:
 * 429 `caller_rate_limited` with Retry-After, before any PayHere call and before waiting for a
 * budget slot (a read that took its slot beside the share hands it back unused:
 * GatewayClient.reserve).
 *
 * Who the caller is comes with the request (`callers.run`): a customer (the token's `sub`), the
 * merchant (its own, larger share), or PayHere's notifications (a bounded part of the budget for
 * what they make the service confirm). Work of the service's own (the settle job) has no caller.
 */
export interface Share {
  /** PayHere calls per `callWindowMs` within the share: what the caller gets under contention. */
  calls: number;
  /** PayHere calls per `callWindowMs` at most, spare ones included (Infinity: no cap). */
  cap: number;
  callWindowMs: number;
  /** Money requests per `moneyWindowMs` (a multiple of `callWindowMs`). */
  money: number;
  moneyWindowMs: number;
}

export type ShareKind = 'customer' | 'merchant' | 'notifications';

export interface SharesConfig {
  customer: Share;
  merchant: Share;
  notifications: Share;
}

/** Who a request is for the shares. */
export interface CallerShareContext {
  /** The caller's identity (a token's `sub`, or the notifications' own name). */
  id: string;
  kind: ShareKind;
}

/** The request being served: who its PayHere calls are counted for. */
export const callers = new AsyncLocalStorage<CallerShareContext>();

const number = (value: number): AttributeValue => ({ N: String(value) });

/** How long after the money window a caller's item is kept (TTL). */
const KEEP_SECONDS = 3_600;

export class CallerShares {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #timeoutMs: number;
  readonly #config: SharesConfig;
  readonly #now: () => number;

  /** Callers this container saw refused, until their full window ends. */
  readonly #refusedUntil = new LruMap<number>(REFUSALS_KEPT);
  /** Callers this container saw beyond their share, until their call window ends. */
  readonly #beyondUntil = new LruMap<number>(REFUSALS_KEPT);

  constructor(options: StateTableOptions & { config: SharesConfig; now?: () => number }) {
    this.#client = options.client;
    this.#table = options.table;
    this.#timeoutMs = options.timeoutMs;
    this.#config = options.config;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Count one PayHere call of the request being served (`money`: the money request's own call, which
   * counts as a money request too): one write. Beyond the caller's share it throws
   * CallerRateLimitedError, nothing sent. Work with no caller (the settle job) is not counted.
   */
  async take(money: boolean): Promise<ShareTaken | undefined> {
    const caller = callers.getStore();
    return caller ? this.#take(caller, money) : undefined;
  }

  /**
   * This container saw the caller refused in a window that has not ended: its next call checks the
   * share alone first (GatewayClient.reserve), so that a caller over its share cannot make the
   * service take slots of PayHere's budget, even for the moment until they are handed back.
   */
  likelyRefused(): boolean {
    const caller = callers.getStore();
    return caller !== undefined && (this.#refusedUntil.get(refusalKey(caller)) ?? 0) > this.#now();
  }

  /**
   * This container saw the caller beyond its share in a call window that has not ended: its next
   * call's slot is a spare one, taken once its share is counted (GatewayClient.reserve), not one
   * taken beside the count as a call within the share.
   */
  likelyBeyondShare(): boolean {
    const caller = callers.getStore();
    return caller !== undefined && (this.#beyondUntil.get(refusalKey(caller)) ?? 0) > this.#now();
  }

  /**
   * One conditional write on the caller's item for the current money window: this call window's
   * count (and the money count) up by one, unless either is at its limit (the cap, and the money
   * share), and unless this very call is counted already; the count it leaves says whether the
   * call is within the share. A table that cannot be reached counts nothing: PayHere's budget (and
   * its fallback) still bounds every call, each as one within its share.
   */
  async #take(caller: CallerShareContext, money: boolean): Promise<ShareTaken | undefined> {
    const share = this.#config[caller.kind];
    const now = this.#now();
    const moneyWindow = Math.floor(now / share.moneyWindowMs);
    const callWindow = Math.floor(now / share.callWindowMs);
    const calls = `c${callWindow}`;
    let answer:
      | { counted: Record<string, AttributeValue> | undefined }
      | { refused: Record<string, AttributeValue> | undefined };
    // The call's own name in the item's set of counted calls: a write retried after its answer was
    // lost finds itself there and is neither applied again nor refused.
    const callId = randomUUID();
    const write = shareWrite(this.#table, caller, share, money, now, callId);
    try {
      answer = await this.#client
        .send(new UpdateItemCommand(write), {
          timeoutMs: this.#timeoutMs,
        })
        .then(
          ({ Attributes }) => ({ counted: Attributes }),
          (error: unknown) => {
            const { name, Item } = (error ?? {}) as { name?: unknown; Item?: Record<string, AttributeValue> };
            if (name !== 'ConditionalCheckFailedException') throw error;
            return { refused: Item };
          },
        );
    } catch (error) {
      log.warn('the callers’ shares cannot be counted: this call is not', { error: describeError(error) });
      countMetric('CallerShareUncounted');
      return undefined;
    }
    if ('refused' in answer) {
      const item = answer.refused ?? (await this.#item(write));
      if (item?.ids?.SS?.includes(callId)) answer = { counted: item };
    }
    if ('counted' in answer) {
      // A table that does not show the count: within the share (the cap still counted it).
      const beyond = Number(answer.counted?.[calls]?.N ?? 0) > share.calls;
      if (beyond) this.#beyondUntil.set(refusalKey(caller), (callWindow + 1) * share.callWindowMs);
      return { beyond, giveBack: () => this.#giveBack(caller, share, money, now, callId) };
    }
    const refused = answer.refused;
    // Over the cap: until the call window ends, or the money window when that is the one full (a
    // table that does not show the counts: the later of the two, never too early).
    const count = (name: string, unseen: number) => (refused ? Number(refused[name]?.N ?? 0) : unseen);
    const callsFull = count(calls, share.cap) >= share.cap;
    const moneyFull = money && count('money', share.money) >= share.money;
    const retryAt = moneyFull
      ? (moneyWindow + 1) * share.moneyWindowMs
      : (callWindow + 1) * share.callWindowMs;
    this.#refusedUntil.set(refusalKey(caller), retryAt);
    countMetric('CallerRateLimited');
    log.info('a caller reached its cap of PayHere’s budget', { kind: caller.kind, money: moneyFull });
    throw notSent(
      new CallerRateLimitedError(
        moneyFull && !callsFull
          ? 'Too many payment requests from this caller: wait, then retry.'
          : "This caller used its share of the payment gateway's requests: wait, then retry.",
        Math.max(1, Math.ceil((retryAt - now) / 1000)),
      ),
    );
  }

  /** The caller's item as it is (a table that does not show it with a refusal). */
  async #item(write: UpdateItemCommandInput): Promise<Record<string, AttributeValue> | undefined> {
    try {
      const { Item } = await this.#client.send(
        new GetItemCommand({ TableName: write.TableName, Key: write.Key, ConsistentRead: true }),
        { timeoutMs: this.#timeoutMs },
      );
      return Item;
    } catch {
      return undefined;
    }
  }

  /**
   * The call counted at `takenAt` as `callId` was not made (its read was answered from shared
   * data): its count comes off again, in the same windows, and its name out of the set, so that a
   * give-back retried after its answer was lost takes nothing off twice. Best effort: a give-back
   * lost counts one call too many, for one window.
   */
  async #giveBack(
    caller: CallerShareContext,
    share: Share,
    money: boolean,
    takenAt: number,
    callId: string,
  ): Promise<void> {
    const write = shareWrite(this.#table, caller, share, money, takenAt);
    const names = write.ExpressionAttributeNames ?? {};
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: write.TableName,
          Key: write.Key,
          UpdateExpression: `${money ? 'ADD #calls :less, #money :less' : 'ADD #calls :less'} DELETE #ids :ids`,
          ConditionExpression: 'contains(#ids, :callId)',
          ExpressionAttributeNames: {
            '#calls': names['#calls']!,
            '#ids': 'ids',
            ...(money ? { '#money': 'money' } : {}),
          },
          ExpressionAttributeValues: {
            ':less': number(-1),
            ':ids': { SS: [callId] },
            ':callId': { S: callId },
          },
        }),
        { timeoutMs: this.#timeoutMs },
      );
    } catch (error) {
      log.debug('could not give back a caller’s share of a call not made', { error: describeError(error) });
    }
  }
}

/** A call counted against its caller's share, which can be given back if the call is not made. */
export interface ShareTaken {
  /** Beyond the caller's share (within its cap): its slot is a spare one (lib/budget/limiter.ts). */
  beyond: boolean;
  giveBack(): Promise<void>;
}

/** How many refused callers a container remembers (the oldest is forgotten first). */
const REFUSALS_KEPT = 1_000;

function refusalKey(caller: CallerShareContext): string {
  return `${caller.kind}#${caller.id}`;
}

/**
 * The one write that counts a call of `caller` at `now` (the bench times it alone): this call
 * window's count, and the money count, up by one, unless either is at its limit (the calls' cap,
 * the money share); the answer shows the count, so that the caller knows whether the call is
 * within its share, and a refusal shows the counts, so that Retry-After names the window that is
 * full. `callId` joins the item's set of counted calls (`ids`, as long as the item lives: a money
 * window) unless it is there already: the write, retried after it was applied and its answer
 * lost, is refused and finds itself counted, never counted twice.
 */
export function shareWrite(
  table: string,
  caller: CallerShareContext,
  share: Share,
  money: boolean,
  now: number,
  callId?: string,
): UpdateItemCommandInput {
  const moneyWindow = Math.floor(now / share.moneyWindowMs);
  const names: Record<string, string> = { '#calls': `c${Math.floor(now / share.callWindowMs)}` };
  const values: Record<string, AttributeValue> = {
    ':one': number(1),
    ':expiresAt': number(Math.ceil(((moneyWindow + 1) * share.moneyWindowMs) / 1000) + KEEP_SECONDS),
  };
  const adds = ['#calls :one'];
  const conditions: string[] = [];
  if (Number.isFinite(share.cap)) {
    conditions.push('(attribute_not_exists(#calls) OR #calls < :cap)');
    values[':cap'] = number(share.cap);
  }
  if (money) {
    adds.push('#money :one');
    conditions.push('(attribute_not_exists(#money) OR #money < :money)');
    names['#money'] = 'money';
    values[':money'] = number(share.money);
  }
  if (callId) {
    adds.push('#ids :ids');
    conditions.unshift('NOT contains(#ids, :callId)');
    names['#ids'] = 'ids';
    values[':ids'] = { SS: [callId] };
    values[':callId'] = { S: callId };
  }
  return {
    TableName: table,
    Key: { pk: { S: `share#${caller.kind}#${hashed(caller.id)}#${moneyWindow}` } },
    UpdateExpression: `ADD ${adds.join(', ')} SET expiresAt = :expiresAt`,
    ...(conditions.length > 0 ? { ConditionExpression: conditions.join(' AND ') } : {}),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ReturnValues: 'UPDATED_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** The caller's id as the table keeps it: bounded in length, and no personal data. */
function hashed(id: string): string {
  return createHash('sha256').update(id).digest('base64url').slice(0, 22);
}

/** `<count>/<ms>` from `name`, or `fallback`. */
function rate(env: Env, name: string, fallback: string): { count: number; windowMs: number } {
  const text = env[name]?.trim() || fallback;
  const match = /^([1-9][0-9]{0,5})\/([1-9][0-9]{2,8})$/.exec(text);
  if (!match)
    throw new ConfigError(
      `Invalid configuration: ${name} must be <requests>/<milliseconds>, e.g. ${fallback}.`,
    );
  return { count: Number(match[1]), windowMs: Number(match[2]) };
}

/**
 * `name`: the calls a caller may make per its share's window, spare ones included: a whole number
 * no smaller than the share, or `none`; unset, `fallback` (or the share, when larger).
 */
function cap(env: Env, name: string, calls: number, fallback: number): number {
  const text = env[name]?.trim();
  if (!text) return Math.max(calls, fallback);
  if (text === 'none') return Number.POSITIVE_INFINITY;
  if (!/^[1-9][0-9]{0,5}$/.test(text) || Number(text) < calls) {
    throw new ConfigError(
      `Invalid configuration: ${name} must be a whole number of calls no smaller than the share (${calls}), or none.`,
    );
  }
  return Number(text);
}

function share(env: Env, calls: [string, string], ceiling: [string, number], money: [string, string]): Share {
  const call = rate(env, ...calls);
  const pay = rate(env, ...money);
  if (pay.windowMs % call.windowMs !== 0) {
    throw new ConfigError(`Invalid configuration: ${money[0]}'s window must be a multiple of ${calls[0]}'s.`);
  }
  return {
    calls: call.count,
    cap: cap(env, ceiling[0], call.count, ceiling[1]),
    callWindowMs: call.windowMs,
    money: pay.count,
    moneyWindowMs: pay.windowMs,
  };
}

/**
 * The shares (docs/budget.md "Each caller's share"): a customer 3 PayHere calls per 10 s, 8 with
 * spare ones, and 6 money requests a minute; the merchant 10 calls with no cap and 120 money
 * requests; PayHere's notifications 4 calls per 10 s and no spare ones (what confirming them may
 * take of the budget's 20: a notification that may not ask now is kept as a report).
 */
export function loadSharesConfig(env: Env): SharesConfig {
  return {
    customer: share(
      env,
      ['CALLER_RATE_LIMIT', '3/10000'],
      ['CALLER_RATE_CAP', 8],
      ['CALLER_MONEY_RATE_LIMIT', '6/60000'],
    ),
    merchant: share(
      env,
      ['MERCHANT_RATE_LIMIT', '10/10000'],
      ['MERCHANT_RATE_CAP', Number.POSITIVE_INFINITY],
      ['MERCHANT_MONEY_RATE_LIMIT', '120/60000'],
    ),
    notifications: share(
      env,
      ['NOTIFY_RATE_LIMIT', '4/10000'],
      ['NOTIFY_RATE_CAP', 0],
      ['NOTIFY_RATE_LIMIT', '4/10000'],
    ),
  };
}
