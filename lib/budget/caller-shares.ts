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
 * Each caller's share of PayHere's budget (docs/contract.md "Each caller has a share"):
 * a caller makes at most `calls` PayHere calls per window and `money` money requests per longer
 * window, counted in the shared state table so that every container counts alike, with one
 * conditional write per check. Beyond it: 429 `caller_rate_limited` with Retry-After, before any
 * PayHere call and before waiting for a budget slot (a read that took its slot beside the share
 * hands it back unused: GatewayClient.reserve).
 *
 * Who the caller is comes with the request (`callers.run`): a customer (the token's `sub`), the
 * merchant (its own, larger share), or PayHere's notifications (a bounded part of the budget for
 * what they make the service confirm). Work of the service's own (the settle job) has no caller.
 */
export interface Share {
  /** PayHere calls per `callWindowMs`. */
  calls: number;
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
   * One conditional write on the caller's item for the current money window: this call window's
   * count (and the money count) up by one, unless either is at its limit. A table that cannot be
   * reached counts nothing: PayHere's budget (and its fallback) still bounds every call.
   */
  async #take(caller: CallerShareContext, money: boolean): Promise<ShareTaken | undefined> {
    const share = this.#config[caller.kind];
    const now = this.#now();
    const moneyWindow = Math.floor(now / share.moneyWindowMs);
    const callWindow = Math.floor(now / share.callWindowMs);
    let refused: { item: Record<string, AttributeValue> | undefined } | undefined;
    // The call's own name on the item: a write retried after its answer was lost knows it counted.
    const callId = randomUUID();
    const write = shareWrite(this.#table, caller, share, money, now, callId);
    try {
      refused = await this.#client
        .send(new UpdateItemCommand(write), {
          abortSignal: AbortSignal.timeout(this.#timeoutMs),
        })
        .then(
          () => undefined,
          (error: unknown) => {
            const { name, Item } = (error ?? {}) as { name?: unknown; Item?: Record<string, AttributeValue> };
            if (name !== 'ConditionalCheckFailedException') throw error;
            return { item: Item };
          },
        );
    } catch (error) {
      log.warn('the callers’ shares cannot be counted: this call is not', { error: describeError(error) });
      countMetric('CallerShareUncounted');
      return undefined;
    }
    if (refused && (refused.item ?? (await this.#item(write)))?.last?.S === callId) refused = undefined;
    if (!refused) return { giveBack: () => this.#giveBack(caller, share, money, now) };
    // Over the share: until the call window ends, or the money window when that is the one full (a
    // table that does not show the counts: the later of the two, never too early).
    const count = (name: string, unseen: number) =>
      refused.item ? Number(refused.item[name]?.N ?? 0) : unseen;
    const callsFull = count(`c${callWindow}`, share.calls) >= share.calls;
    const moneyFull = money && count('money', share.money) >= share.money;
    const retryAt = moneyFull
      ? (moneyWindow + 1) * share.moneyWindowMs
      : (callWindow + 1) * share.callWindowMs;
    this.#refusedUntil.set(refusalKey(caller), retryAt);
    countMetric('CallerRateLimited');
    log.info('a caller used its share of PayHere’s budget', { kind: caller.kind, money: moneyFull });
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
        { abortSignal: AbortSignal.timeout(this.#timeoutMs) },
      );
      return Item;
    } catch {
      return undefined;
    }
  }

  /**
   * The call counted at `takenAt` was not made (its read was answered from shared data): its count
   * comes off again, in the same windows. Best effort: a give-back lost counts one call too many,
   * for one window.
   */
  async #giveBack(caller: CallerShareContext, share: Share, money: boolean, takenAt: number): Promise<void> {
    const write = shareWrite(this.#table, caller, share, money, takenAt);
    const names = write.ExpressionAttributeNames ?? {};
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: write.TableName,
          Key: write.Key,
          UpdateExpression: money ? 'ADD #calls :less, #money :less' : 'ADD #calls :less',
          ConditionExpression: '#calls > :none',
          ExpressionAttributeNames: money
            ? { '#calls': names['#calls']!, '#money': 'money' }
            : { '#calls': names['#calls']! },
          ExpressionAttributeValues: { ':less': number(-1), ':none': number(0) },
        }),
        { abortSignal: AbortSignal.timeout(this.#timeoutMs) },
      );
    } catch (error) {
      log.debug('could not give back a caller’s share of a call not made', { error: describeError(error) });
    }
  }
}

/** A call counted against its caller's share, which can be given back if the call is not made. */
export interface ShareTaken {
  giveBack(): Promise<void>;
}

/** How many refused callers a container remembers (the oldest is forgotten first). */
const REFUSALS_KEPT = 1_000;

function refusalKey(caller: CallerShareContext): string {
  return `${caller.kind}#${caller.id}`;
}

/**
 * The one write that counts a call of `caller` at `now` (the bench times it alone): this call
 * window's count, and the money count, up by one, unless either is at its limit; a refusal shows
 * the counts, so that Retry-After names the window that is full.
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
    ':calls': number(share.calls),
    ':expiresAt': number(Math.ceil(((moneyWindow + 1) * share.moneyWindowMs) / 1000) + KEEP_SECONDS),
  };
  let update = 'ADD #calls :one SET expiresAt = :expiresAt';
  let condition = '(attribute_not_exists(#calls) OR #calls < :calls)';
  if (money) {
    update = 'ADD #calls :one, #money :one SET expiresAt = :expiresAt';
    condition += ' AND (attribute_not_exists(#money) OR #money < :money)';
    names['#money'] = 'money';
    values[':money'] = number(share.money);
  }
  // The last call counted names itself: its own retry is refused, and knows it was counted. (A
  // call of the same caller counted in between hides it: one call counted twice, at most.)
  if (callId) {
    update += ', #last = :callId';
    condition = `(attribute_not_exists(#last) OR #last <> :callId) AND ${condition}`;
    names['#last'] = 'last';
    values[':callId'] = { S: callId };
  }
  return {
    TableName: table,
    Key: { pk: { S: `share#${caller.kind}#${hashed(caller.id)}#${moneyWindow}` } },
    UpdateExpression: update,
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
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

function share(env: Env, calls: [string, string], money: [string, string]): Share {
  const call = rate(env, ...calls);
  const pay = rate(env, ...money);
  if (pay.windowMs % call.windowMs !== 0) {
    throw new ConfigError(`Invalid configuration: ${money[0]}'s window must be a multiple of ${calls[0]}'s.`);
  }
  return { calls: call.count, callWindowMs: call.windowMs, money: pay.count, moneyWindowMs: pay.windowMs };
}

/**
 * The shares (docs/budget.md "PayHere's budget"): a customer 3 PayHere calls per 10 s and 6 money requests
 * a minute; the merchant 10 and 120; PayHere's notifications 4 calls per 10 s (what confirming
 * them may take of the budget's 20).
 */
export function loadSharesConfig(env: Env): SharesConfig {
  return {
    customer: share(env, ['CALLER_RATE_LIMIT', '3/10000'], ['CALLER_MONEY_RATE_LIMIT', '6/60000']),
    merchant: share(env, ['MERCHANT_RATE_LIMIT', '10/10000'], ['MERCHANT_MONEY_RATE_LIMIT', '120/60000']),
    notifications: share(env, ['NOTIFY_RATE_LIMIT', '4/10000'], ['NOTIFY_RATE_LIMIT', '4/10000']),
  };
}
