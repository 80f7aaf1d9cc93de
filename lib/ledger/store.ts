import {
  type AttributeValue,
  PutItemCommand,
  QueryCommand,
  sendConditional,
  UpdateItemCommand,
} from '../dynamodb/index.ts';
import type {
  ChargeClaim,
  ChargeOutcome,
  NewOrder,
  Order,
  OrderMove,
  PaymentsCopy,
  Reference,
  ReferenceKind,
  SubscriptionChange,
  UnmatchedNotification,
} from './model.ts';
import { type KeptNotification, LedgerNotifications } from './notifications.ts';
import {
  fromOrderItem,
  jsonOrNull,
  LISTED,
  listedAt,
  namesIn,
  orderKey,
  toOrderItem,
  valuesIn,
} from './order-item.ts';
import { LedgerOrderLists, type OrderListPage, type OrderListQuery } from './order-lists.ts';
import { appendEvents, type LedgerEvent } from './outbox.ts';
import { LedgerReferences } from './references.ts';
import {
  LedgerRefunds,
  type PayHereStatus,
  type PaymentRefunds,
  type RefundRecord,
  type RefundSlot,
} from './refunds.ts';
import {
  type LedgerStoreOptions,
  LedgerTable,
  nullableNumber,
  nullableString,
  number,
  text,
} from './table.ts';

export type { KeptNotification } from './notifications.ts';
export type { ListedOrder, OrderListPage, OrderListQuery, OrderListSource } from './order-lists.ts';
export type { AcceptedRefund, PayHereStatus, PaymentRefunds, RefundRecord, RefundSlot } from './refunds.ts';
export type { LedgerStoreOptions } from './table.ts';

/**
 * The ledger: every order the service created, with its owner, its price and what PayHere reported
 * about it, and the index from the ids PayHere hands out (payments, holds, subscriptions, customer
 * tokens) to their order. One DynamoDB table keyed by `pk`:
 *
 *   order#<order_id>            the order (Order below), with its place in the order lists
 *                               (`listed`, `listedAt`: order-lists.ts)
 *   payment#<id>, authorization#<token>, subscription#<id>, customer_token#<token>
 *                               a reference: { orderId, owner[, chargeKey] }
 *   owner#<sub>                 the subscription ids a customer owns (listSubscriptions), and its
 *                               failed pre-approvals per window (card testing)
 *   refund#<payment_id>         a payment's refund slot and the refunds PayHere accepted (refunds.ts)
 *   notification#<identity>     a notification received (its signed fields, signature and payment
 *                               id), and what it did: a replay is answered from it (TTL)
 *   unmatched#<time>#<uuid>     a notification kept apart for the operator (TTL)
 *
 * Every write is conditional, so concurrent requests cannot take one order's payment slot twice,
 * point one id at two orders, or move a state backwards.
 *
 * This file holds the writes of the order item (about 470 lines): each is a conditional move of one
 * order whose condition reads what the others write (the charge slot, the report, the copy of its
 * payments, its failed attempts), so they stay side by side. The references, the notifications and
 * the item's mapping are files of their own (references.ts, notifications.ts, order-item.ts).
 */

/**
 * The ledger's settle index (serverless.yml): sparse, only items with a `settleQueue` are in it,
 * ordered by `settleAt` (epoch ms). Orders with a reported, unconfirmed success are in the queue
 * `reported` until it is settled.
 */
export const SETTLE_INDEX = 'settle';
const SETTLE_REPORTED = 'reported';
/**
 * The settle index's other queue: running subscriptions whose status PayHere's records are to be
 * read (`settleAt`: when), because a notification of it came when its order could not be checked.
 */
const SETTLE_STANDING = 'standing';
/** What a report leaves on an order; a settled report removes it all. */
const REPORT_ATTRIBUTES = [
  '#reportedAt',
  '#reportedPaymentId',
  '#reportedSubscriptionId',
  '#reportedNextInstallment',
  '#settleQueue',
  '#settleAt',
] as const;
/**
 * The ledger's charges index (serverless.yml): sparse, only orders whose charge through the service
 * is still open (in flight, pending or unknown), by when the settle job is due to look at them. It
 * is the backstop for what no request will finish: a claim whose answer was lost, a request that
 * died, an outcome whose ledger write failed, a pending charge without a notification.
 */
export const CHARGES_INDEX = 'charges';
const CHARGES_QUEUE = 'charge';
/** What puts an order in the charges index; removing them takes it out. */
const CHARGE_QUEUE_ATTRIBUTES = ['#chargeQueue', '#chargeDueAt'] as const;
/**
 * An order's failed charges counted in one window (card testing): one attribute a window, the set
 * of the failed charges' keys, so that a write retried after its answer was lost counts once.
 */
const failedAttribute = (window: number) => `declined${window}`;

export class LedgerStore extends LedgerTable {
  readonly #references: LedgerReferences;
  readonly #notifications: LedgerNotifications;
  readonly #refunds: LedgerRefunds;
  readonly #lists: LedgerOrderLists;

  constructor(options: LedgerStoreOptions) {
    super(options);
    this.#references = new LedgerReferences(options);
    this.#notifications = new LedgerNotifications(options);
    this.#refunds = new LedgerRefunds(options);
    this.#lists = new LedgerOrderLists(options);
  }

  /** The order as last written, read strongly consistent. */
  async getOrder(orderId: string): Promise<Order | undefined> {
    const item = await this.get(orderKey(orderId));
    return item ? fromOrderItem(item) : undefined;
  }

  /** Record a new order; if the order id is taken, the order that holds it. */
  async createOrder(order: NewOrder): Promise<{ created: Order } | { existing: Order | undefined }> {
    const now = this.now();
    const created: Order = {
      ...order,
      paymentId: null,
      state: 'created',
      createdAt: now,
      updatedAt: now,
      charge: null,
      installmentsPaid: null,
      reported: { paymentId: null, subscriptionId: null, installmentsPaid: null, nextInstallment: null },
      reportedAt: null,
      settleAt: null,
      standingCheckAt: null,
      standingSince: null,
      standingAsks: 0,
      holdVerified: null,
      paymentsCopy: null,
      failedAttempts: {},
      duplicatePayments: [],
      nextInstallment: null,
      subscriptionStatus: null,
      failedInstallment: null,
    };
    const written = await this.conditional(
      new PutItemCommand({
        TableName: this.table,
        Item: toOrderItem(created),
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return written ? { created } : { existing: await this.getOrder(order.orderId) };
  }

  /**
   * Take the order's payment slot for one charge, creating the order if the rule allows: only when
   * no charge is in flight and the order has no successful, pending or unknown payment. Returns the
   * order as it now is, or undefined when the condition failed (the caller reads it to say why).
   */
  async claimCharge(claim: ChargeClaim): Promise<Order | undefined> {
    const now = this.now();
    const values: Record<string, AttributeValue> = {
      ':key': { S: claim.slot.key },
      ':orderId': { S: claim.orderId },
      ':sentAt': number(claim.slot.sentAt),
      ':until': number(claim.slot.until),
      ':now': number(now),
      ':owner': { S: claim.owner },
      ':items': { S: claim.price.items },
      ':currency': { S: claim.price.currency },
      ':amount': nullableNumber(claim.price.amountCents),
      ':created': { S: 'created' },
      ':queue': { S: CHARGES_QUEUE },
      ':dueAt': number(claim.dueAt ?? claim.slot.until),
    };
    const states = claim.chargeable.map((state, i) => {
      values[`:chargeable${i}`] = { S: state };
      return `:chargeable${i}`;
    });
    let chargeable = `#state IN (${states.join(', ')}) AND attribute_not_exists(#inflight)`;
    if (claim.attempts) {
      chargeable += ' AND (attribute_not_exists(#failed) OR size(#failed) < :failedLimit)';
      values[':failedLimit'] = number(claim.attempts.limit);
    }
    let condition: string;
    let set =
      '#inflight = :key, #chargeKey = :key, #chargeSentAt = :sentAt, #chargeUntil = :until, #updatedAt = :now, ' +
      '#chargeQueue = :queue, #chargeDueAt = :dueAt, ' +
      '#state = if_not_exists(#state, :created), #createdAt = if_not_exists(#createdAt, :now)';
    const creates =
      '#orderId = :orderId, #owner = if_not_exists(#owner, :owner), #kind = if_not_exists(#kind, :kind), ' +
      '#listed = :listed, #listedAt = if_not_exists(#listedAt, :listedAt)';
    // The back office's line items, customer details and metadata go with the price, when the
    // charge gives them (an order's checkout may have given them before).
    let prices =
      '#items = :items, #currency = :currency, #amount = :amount, #custom1 = :custom1, #custom2 = :custom2';
    values[':custom1'] = nullableString(claim.custom1);
    values[':custom2'] = nullableString(claim.custom2);
    for (const [name, value] of [
      ['lineItems', claim.lineItems],
      ['customerDetails', claim.customerDetails],
      ['metadata', claim.metadata],
    ] as const) {
      if (value === undefined || value === null) continue;
      prices += `, #${name} = :${name}`;
      values[`:${name}`] = { S: jsonOrNull(value)! };
    }
    values[':kind'] = { S: claim.kind };
    if (claim.rule !== 'customer-priced') {
      // A new order joins the order lists at its creation (order-lists.ts); an existing one keeps its place.
      values[':listed'] = { S: LISTED };
      values[':listedAt'] = { S: listedAt(now, claim.orderId) };
    }
    if (claim.rule === 'merchant') {
      condition = `attribute_not_exists(pk) OR (${chargeable})`;
      set += `, ${creates}, ${prices}`;
    } else if (claim.rule === 'customer') {
      condition = `attribute_not_exists(pk) OR (#owner = :owner AND ${chargeable})`;
      set += `, ${creates}, ${prices}`;
    } else {
      condition =
        'attribute_exists(pk) AND #owner = :owner AND #kind = :kind AND #items = :items AND ' +
        `#currency = :currency AND #amount = :amount AND ${chargeable}`;
    }
    // A new slot starts with no look at PayHere's records behind it.
    const update = `SET ${set} REMOVE #nothingAt`;
    // Names used by the expressions that need them; DynamoDB refuses unused ones.
    const expression = `${update} ${condition}`;
    const written = await sendConditional(
      this.client,
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: orderKey(claim.orderId) } },
        UpdateExpression: update,
        ConditionExpression: condition,
        ExpressionAttributeNames: {
          ...namesIn(expression),
          ...(claim.attempts ? { '#failed': failedAttribute(claim.attempts.window) } : {}),
        },
        ExpressionAttributeValues: valuesIn(expression, values),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return written?.Attributes ? fromOrderItem(written.Attributes) : undefined;
  }

  /**
   * Record what the charge holding the slot learned (as lib/orders/evidence.ts decided), and free
   * the slot: only while the order is in one of `outcome.from`. A success it records settles a
   * report a notification left (PayHere answered this very charge; a hold's token came from PayHere
   * itself). False when the charge no longer holds the order or its state is not one of `from`.
   */
  async finishCharge(orderId: string, key: string, outcome: ChargeOutcome): Promise<boolean> {
    const { events, duplicateEvents, ...write } = outcome;
    if (!events?.length) return this.#finishCharge(orderId, key, write);
    // The events go with a move, not with the outcome recorded again over itself: the move first;
    // failing, the order may be there already (a notification got there first, or this very write
    // was applied and its answer lost), and only the slot is freed, the possible duplicates noted
    // apart (with their event where any is new).
    const moving = outcome.from.filter((state) => state !== outcome.state);
    const all = [...events, ...(duplicateEvents ?? [])];
    const { possibleDuplicates, ...freeing } = write;
    if (moving.length > 0 && (await this.#finishCharge(orderId, key, { ...write, from: moving }, all)))
      return true;
    if (!outcome.from.includes(outcome.state)) return false;
    // Freeing a paid order writes no payment over another one it shows (a notification's, say):
    // that is a second payment of the order, for the caller to note (false here).
    const freed = await this.#finishCharge(
      orderId,
      key,
      { ...freeing, from: [outcome.state] },
      undefined,
      outcome.state === 'succeeded',
    );
    if (freed) {
      if (possibleDuplicates?.length)
        await this.noteDuplicatePayments(orderId, possibleDuplicates, duplicateEvents);
      // The move may be the one that was applied, its answer lost: the relay reads the item.
      this.onEvents(orderKey(orderId));
    }
    return freed;
  }

  async #finishCharge(
    orderId: string,
    key: string,
    outcome: Omit<ChargeOutcome, 'events' | 'duplicateEvents'>,
    events?: readonly LedgerEvent[],
    samePayment = false,
  ): Promise<boolean> {
    const values: Record<string, AttributeValue> = {
      ':key': { S: key },
      ':state': { S: outcome.state },
      ':now': number(this.now()),
    };
    const from = outcome.from.map((state, i) => {
      values[`:from${i}`] = { S: state };
      return `:from${i}`;
    });
    let set = '#state = :state, #updatedAt = :now';
    const remove: string[] = ['#inflight'];
    if (outcome.dueAt === undefined) remove.push(...CHARGE_QUEUE_ATTRIBUTES);
    else {
      set += ', #chargeDueAt = :dueAt';
      values[':dueAt'] = number(outcome.dueAt);
    }
    if (outcome.paymentId) {
      set += ', #paymentId = :paymentId';
      values[':paymentId'] = { S: outcome.paymentId };
    }
    if (outcome.authorizationToken) {
      set += ', #authorizationToken = :authorizationToken, #holdVerified = :true';
      values[':authorizationToken'] = { S: outcome.authorizationToken };
      values[':true'] = { BOOL: true };
    }
    if (outcome.state === 'succeeded') remove.push(...REPORT_ATTRIBUTES);
    let condition = `#chargeKey = :key AND #state IN (${from.join(', ')})`;
    if (!outcome.overReport) condition += ' AND attribute_not_exists(#reportedAt)';
    if (samePayment && outcome.paymentId)
      condition += ' AND (attribute_not_exists(#paymentId) OR #paymentId = :paymentId)';
    let names: Record<string, string> = {};
    if (events?.length) {
      const outbox = appendEvents(events, this.now());
      set += `, ${outbox.set}`;
      Object.assign(values, outbox.values);
      names = outbox.names;
    }
    const stale = (outcome.staleFailedWindows ?? []).map((window, i) => [`#stale${i}`, window] as const);
    remove.push(...stale.map(([name]) => name));
    let update = `SET ${set} REMOVE ${remove.join(', ')}`;
    names = { ...namesIn(`${update} ${condition}`), ...names };
    for (const [name, window] of stale) names[name] = failedAttribute(window);
    const adds: string[] = [];
    for (const [i, window] of (outcome.failedWindows ?? []).entries()) {
      adds.push(`#failed${i} :failedKey`);
      names[`#failed${i}`] = failedAttribute(window);
      values[':failedKey'] = { SS: [key] };
    }
    if (outcome.possibleDuplicates && outcome.possibleDuplicates.length > 0) {
      adds.push('#duplicatePayments :duplicates');
      names['#duplicatePayments'] = 'duplicatePayments';
      values[':duplicates'] = { SS: [...outcome.possibleDuplicates] };
    }
    if (adds.length > 0) update += ` ADD ${adds.join(', ')}`;
    const command = new UpdateItemCommand({
      TableName: this.table,
      Key: { pk: { S: orderKey(orderId) } },
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
    return events?.length ? this.recording(orderKey(orderId), command) : this.conditional(command);
  }

  /**
   * Move an order as lib/orders/evidence.ts decided, only from the state and facts it was read
   * with, recording what the evidence may record. A customer token, once recorded, is never written
   * over. False when the order changed meanwhile (the caller reads it again).
   */
  async moveOrder(orderId: string, move: OrderMove): Promise<boolean> {
    const values: Record<string, AttributeValue> = {
      ':from': { S: move.from },
      ':to': { S: move.to },
      ':now': number(this.now()),
    };
    const set = ['#state = :to', '#updatedAt = :now'];
    const remove: string[] = [];
    const put = (attribute: string, value: AttributeValue) => {
      set.push(`#${attribute} = :${attribute}`);
      values[`:${attribute}`] = value;
    };
    if (move.paymentId) put('paymentId', { S: move.paymentId });
    if (move.customerToken) put('customerToken', { S: move.customerToken });
    if (move.authorizationToken) put('authorizationToken', { S: move.authorizationToken });
    if (move.subscriptionId) put('subscriptionId', { S: move.subscriptionId });
    if (move.card) put('card', { S: JSON.stringify(move.card) });
    if (move.holdVerified !== undefined) put('holdVerified', { BOOL: move.holdVerified });
    if (move.nextInstallment) put('nextInstallment', { S: move.nextInstallment });
    if (move.report) {
      put('reportedAt', number(move.report.at));
      if (move.report.paymentId) put('reportedPaymentId', { S: move.report.paymentId });
      if (move.report.subscriptionId) put('reportedSubscriptionId', { S: move.report.subscriptionId });
      if (move.report.nextInstallment) put('reportedNextInstallment', { S: move.report.nextInstallment });
      put('settleQueue', { S: SETTLE_REPORTED });
      put('settleAt', number(move.report.settleAt));
    } else if (move.clearReport) {
      remove.push(...REPORT_ATTRIBUTES);
    }
    // The charges index is left as it is: a charge's slot may still be in flight (its request's own
    // write of the outcome failed), and only the settle job, reading the order, may close it.
    const conditions = [
      '#state = :from',
      move.seen.charged ? 'attribute_exists(#chargeKey)' : 'attribute_not_exists(#chargeKey)',
      // A report settled here is the one that was read: a newer one is left for its own settlement.
      move.seen.reported ? 'attribute_exists(#reportedAt)' : 'attribute_not_exists(#reportedAt)',
    ];
    if (move.customerToken) conditions.push('attribute_not_exists(#customerToken)');
    const outbox = move.events?.length ? appendEvents(move.events, this.now()) : undefined;
    if (outbox) {
      set.push(outbox.set);
      Object.assign(values, outbox.values);
    }
    const update = `SET ${set.join(', ')}${remove.length > 0 ? ` REMOVE ${remove.join(', ')}` : ''}`;
    return this.#updateOrder(orderId, update, conditions.join(' AND '), values, outbox?.names);
  }

  /**
   * Record the installments PayHere's payments of the order's subscription show as paid (only
   * upwards), clearing a report of them.
   */
  async confirmInstallments(
    orderId: string,
    installmentsPaid: number,
    nextInstallment?: string | null,
    events?: readonly LedgerEvent[],
  ): Promise<boolean> {
    // The next installment's date goes with the installment that brought it (null: none is due).
    const next =
      nextInstallment === undefined
        ? { set: '', remove: '' }
        : nextInstallment === null
          ? { set: '', remove: ', #nextInstallment' }
          : { set: ', #nextInstallment = :next', remove: '' };
    const outbox = events?.length ? appendEvents(events, this.now()) : undefined;
    const update =
      `SET #updatedAt = :now, #installmentsPaid = :installments${next.set}${outbox ? `, ${outbox.set}` : ''} ` +
      `REMOVE #reportedInstallmentsPaid${next.remove}`;
    const condition =
      'attribute_exists(pk) AND (attribute_not_exists(#installmentsPaid) OR #installmentsPaid < :installments)';
    return this.#updateOrder(
      orderId,
      update,
      condition,
      {
        ':now': number(this.now()),
        ':installments': number(installmentsPaid),
        ...(typeof nextInstallment === 'string' ? { ':next': { S: nextInstallment } } : {}),
        ...outbox?.values,
      },
      outbox?.names,
    );
  }

  /**
   * A capture or release through the service used the hold's token and PayHere accepted it: the
   * token is proven (it was only a notification's word before).
   */
  async proveHold(
    orderId: string,
    authorizationToken: string,
    outcome?: { action: 'captured' | 'released'; events: readonly LedgerEvent[] },
  ): Promise<boolean> {
    // The hold's first capture or release is recorded with its event; a repeat (a lost answer
    // settled, the same capture sent again) only proves the token.
    if (outcome) {
      const outbox = appendEvents(outcome.events, this.now());
      const recorded = await this.#updateOrder(
        orderId,
        `SET #holdVerified = :true, #updatedAt = :now, #holdOutcome = :outcome, ${outbox.set}`,
        '#authorizationToken = :token AND attribute_not_exists(#holdOutcome)',
        {
          ':true': { BOOL: true },
          ':now': number(this.now()),
          ':token': { S: authorizationToken },
          ':outcome': { S: outcome.action },
          ...outbox.values,
        },
        { ...outbox.names, '#holdOutcome': 'holdOutcome' },
      );
      if (recorded) return true;
    }
    // (A first capture applied with its answer lost is proven here; the scheduled relay publishes its event.)
    return this.#updateOrder(
      orderId,
      'SET #holdVerified = :true, #updatedAt = :now',
      '#authorizationToken = :token',
      { ':true': { BOOL: true }, ':now': number(this.now()), ':token': { S: authorizationToken } },
    );
  }

  /**
   * The orders whose reported success is due for settlement at `now` (the settle index: keys
   * only, read again strongly before acting), oldest first, at most `limit`.
   */
  reportedDue(now: number, limit: number): Promise<string[]> {
    return this.#due(SETTLE_REPORTED, now, limit);
  }

  /**
   * The orders whose subscription's standing is due to be read from PayHere's records at `now`
   * (keys only, read again strongly before acting), oldest first, at most `limit`.
   */
  standingDue(now: number, limit: number): Promise<string[]> {
    return this.#due(SETTLE_STANDING, now, limit);
  }

  async #due(queue: string, now: number, limit: number): Promise<string[]> {
    const { Items } = await this.client.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: SETTLE_INDEX,
        KeyConditionExpression: '#settleQueue = :queue AND #settleAt <= :now',
        ExpressionAttributeNames: { '#settleQueue': 'settleQueue', '#settleAt': 'settleAt' },
        ExpressionAttributeValues: { ':queue': { S: queue }, ':now': number(now) },
        Limit: limit,
      }),
    );
    return (Items ?? []).map((item) => text(item, 'pk').slice('order#'.length));
  }

  /**
   * Have the settle job read the order's subscription from PayHere's records at `at`: a
   * notification of its status could not be confirmed now. An earlier check already due stays
   * (so a stream of notifications cannot push it back), and counts this ask (`standingAsks`): a
   * check already reading when the ask came is not ended by that read (standingChecked). False
   * when the order has no subscription or holds a report (a subscription the records do not show
   * yet has no standing to read). Applied with its answer lost, its retry finds its own check, or
   * counts the ask again: one more read, never a check left behind or dropped.
   */
  async checkStandingAt(orderId: string, at: number): Promise<boolean> {
    const values = { ':standing': { S: SETTLE_STANDING }, ':at': number(at), ':one': number(1) };
    const queued = await this.#updateOrder(
      orderId,
      'SET #settleQueue = :standing, #settleAt = :at, #standingSince = if_not_exists(#standingSince, :now) ' +
        'ADD #standingAsks :one',
      'attribute_exists(#subscriptionId) AND attribute_not_exists(#reportedAt) AND ' +
        '(attribute_not_exists(#settleQueue) OR (#settleQueue = :standing AND #settleAt > :at))',
      { ...values, ':now': number(this.now()) },
    );
    return (
      queued ||
      this.#updateOrder(
        orderId,
        'ADD #standingAsks :one',
        '#settleQueue = :standing AND #settleAt <= :at',
        values,
      )
    );
  }

  /**
   * The standing check due at `at`, read after its `asks`-th ask, is done: the order leaves the
   * queue, unless it was asked for again meanwhile (moved to another `at`, or asked again while
   * being read: false, and it stays for another read).
   */
  standingChecked(orderId: string, at: number, asks: number): Promise<boolean> {
    return this.#updateOrder(
      orderId,
      'REMOVE #settleQueue, #settleAt, #standingSince, #standingAsks',
      // A check queued before asks were counted has none.
      `#settleQueue = :standing AND #settleAt = :at AND ${asks === 0 ? 'attribute_not_exists(#standingAsks)' : '#standingAsks = :asks'}`,
      {
        ':standing': { S: SETTLE_STANDING },
        ':at': number(at),
        ...(asks === 0 ? {} : { ':asks': number(asks) }),
      },
    );
  }

  /** A standing check PayHere could not answer is looked at again at `later`. */
  postponeStanding(orderId: string, at: number, later: number): Promise<boolean> {
    return this.#updateOrder(
      orderId,
      'SET #settleAt = :later',
      '#settleQueue = :standing AND #settleAt = :at',
      { ':standing': { S: SETTLE_STANDING }, ':at': number(at), ':later': number(later) },
    );
  }

  /** A report that could not be settled now is looked at again at `settleAt`. */
  async postponeReport(orderId: string, settleAt: number): Promise<boolean> {
    return this.#updateOrder(orderId, 'SET #settleAt = :settleAt', 'attribute_exists(#reportedAt)', {
      ':settleAt': number(settleAt),
    });
  }

  /** Keep installments a notification reported but PayHere could not confirm yet (only upwards). */
  async reportInstallments(orderId: string, installmentsPaid: number): Promise<boolean> {
    return this.conditional(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: orderKey(orderId) } },
        UpdateExpression: 'SET #reportedInstallmentsPaid = :installments',
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(#reportedInstallmentsPaid) OR #reportedInstallmentsPaid < :installments)',
        ExpressionAttributeNames: { '#reportedInstallmentsPaid': 'reportedInstallmentsPaid' },
        ExpressionAttributeValues: { ':installments': number(installmentsPaid) },
      }),
    );
  }

  /**
   * Drop a report of installments PayHere's records did not bear out when read: the report as it
   * was read (a higher one reported since stays). Installments paid are recorded from PayHere's
   * records alone, by the next notification's confirmation or the settle job's standing check.
   */
  async dropInstallmentsReport(orderId: string, reported: number): Promise<boolean> {
    return this.conditional(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: orderKey(orderId) } },
        UpdateExpression: 'REMOVE #reportedInstallmentsPaid',
        ConditionExpression: '#reportedInstallmentsPaid = :reported',
        ExpressionAttributeNames: { '#reportedInstallmentsPaid': 'reportedInstallmentsPaid' },
        ExpressionAttributeValues: { ':reported': number(reported) },
      }),
    );
  }

  /**
   * Take the right to ask PayHere about the order now: at most once per `intervalMs` for all
   * readers together (each PayHere call counts against the merchant's 20 per 10 s). Views of a
   * checkout and notifications have a right each (`by`), so that viewing never delays a notification.
   */
  async claimCheck(
    orderId: string,
    intervalMs: number,
    by: 'view' | 'notification' = 'view',
  ): Promise<boolean> {
    const now = this.now();
    return this.conditional(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: orderKey(orderId) } },
        UpdateExpression: 'SET #checkedAt = :now',
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(#checkedAt) OR #checkedAt <= :before)',
        ExpressionAttributeNames: { '#checkedAt': by === 'view' ? 'checkedAt' : 'confirmedAt' },
        ExpressionAttributeValues: { ':now': number(now), ':before': number(now - intervalMs) },
      }),
    );
  }

  /**
   * Keep PayHere's answer to the order's payments while the order is still in `copy.state`, no
   * newer copy is kept, and none was dropped after `droppedBefore` (a refund's drop must win over a
   * search sent before it). False when not kept.
   */
  async keepPayments(orderId: string, copy: PaymentsCopy, droppedBefore: number): Promise<boolean> {
    const update =
      'SET #paymentsCopy = :answer, #paymentsCopyState = :state, #paymentsFetchedAt = :fetchedAt';
    const condition =
      '#state = :state AND (attribute_not_exists(#paymentsDroppedAt) OR #paymentsDroppedAt <= :droppedBefore) ' +
      'AND (attribute_not_exists(#paymentsFetchedAt) OR #paymentsFetchedAt < :fetchedAt)';
    return this.#updateOrder(orderId, update, condition, {
      ':answer': { S: copy.answer },
      ':state': { S: copy.state },
      ':fetchedAt': number(copy.fetchedAt),
      ':droppedBefore': number(droppedBefore),
    });
  }

  /**
   * Drop the order's kept payments (the service changed them at PayHere: a refund). The order as
   * the drop left it, so the caller knows what else the refund touched (an installment's
   * subscription) without reading it; undefined when there is no such order.
   */
  async dropPayments(orderId: string): Promise<Order | undefined> {
    const update =
      'SET #paymentsDroppedAt = :now REMOVE #paymentsCopy, #paymentsCopyState, #paymentsFetchedAt';
    const written = await sendConditional(
      this.client,
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: orderKey(orderId) } },
        UpdateExpression: update,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: namesIn(update),
        ExpressionAttributeValues: { ':now': number(this.now()) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return written?.Attributes ? fromOrderItem(written.Attributes) : undefined;
  }

  /**
   * Free the slot of a charge that provably sent nothing, or whose outcome other evidence settled:
   * the order's state stands, and it leaves the settle job's charges.
   */
  async releaseCharge(orderId: string, key: string): Promise<boolean> {
    return this.conditional(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: orderKey(orderId) } },
        UpdateExpression: 'REMOVE #inflight, #chargeQueue, #chargeDueAt',
        ConditionExpression: '#inflight = :key',
        ExpressionAttributeNames: {
          '#inflight': 'inflight',
          '#chargeQueue': 'chargeQueue',
          '#chargeDueAt': 'chargeDueAt',
        },
        ExpressionAttributeValues: { ':key': { S: key } },
      }),
    );
  }

  /**
   * The first look past the settle delay that found nothing of the charge holding the order: kept
   * once (a later look does not move it), so that "not done" waits for a second look.
   */
  async noteNothing(orderId: string, key: string, at: number): Promise<boolean> {
    return this.#updateOrder(
      orderId,
      'SET #nothingAt = :at',
      '#chargeKey = :key AND attribute_not_exists(#nothingAt)',
      { ':at': number(at), ':key': { S: key } },
    );
  }

  /**
   * The orders whose charge is still open and due for the settle job at `now` (the charges index:
   * keys only, read again strongly before acting), oldest first, at most `limit`.
   */
  async chargesDue(now: number, limit: number): Promise<string[]> {
    const { Items } = await this.client.send(
      new QueryCommand({
        TableName: this.table,
        IndexName: CHARGES_INDEX,
        KeyConditionExpression: '#chargeQueue = :queue AND #chargeDueAt <= :now',
        ExpressionAttributeNames: { '#chargeQueue': 'chargeQueue', '#chargeDueAt': 'chargeDueAt' },
        ExpressionAttributeValues: { ':queue': { S: CHARGES_QUEUE }, ':now': number(now) },
        Limit: limit,
      }),
    );
    return (Items ?? []).map((item) => text(item, 'pk').slice('order#'.length));
  }

  /** An open charge the settle job could not settle now is looked at again at `dueAt`. */
  async postponeCharge(orderId: string, key: string, dueAt: number): Promise<boolean> {
    return this.#updateOrder(
      orderId,
      'SET #chargeDueAt = :dueAt',
      '#chargeKey = :key AND attribute_exists(#chargeQueue)',
      { ':dueAt': number(dueAt), ':key': { S: key } },
    );
  }

  /** An order no charge holds open any more leaves the charges index. */
  async closeCharge(orderId: string): Promise<boolean> {
    return this.#updateOrder(
      orderId,
      'REMOVE #chargeQueue, #chargeDueAt',
      'attribute_exists(#chargeQueue) AND attribute_not_exists(#inflight)',
      {},
    );
  }

  /**
   * Record what PayHere said of the order's subscription, as lib/orders/subscription-evidence.ts
   * decided, with its event: only while the order's subscription is the one decided on and its
   * recorded status and failed installment are still those the decision read (`change.from`). An
   * ended subscription has no next installment. False when they changed meanwhile, or when this
   * very write was applied and its answer lost (its retry finds them changed); the relay is told
   * either way, so that an event written by a write whose answer was lost is published at once.
   */
  async recordSubscription(orderId: string, change: SubscriptionChange): Promise<boolean> {
    const values: Record<string, AttributeValue> = {
      ':subscriptionId': { S: change.subscriptionId },
      ':status': { S: change.to },
      ':now': number(this.now()),
    };
    const conditions = ['#subscriptionId = :subscriptionId'];
    if (change.from.subscriptionStatus === null) conditions.push('attribute_not_exists(#subscriptionStatus)');
    else {
      conditions.push('#subscriptionStatus = :fromStatus');
      values[':fromStatus'] = { S: change.from.subscriptionStatus };
    }
    if (change.from.failedInstallment === null) conditions.push('attribute_not_exists(#failedInstallment)');
    else {
      conditions.push('#failedInstallment = :fromFailed');
      values[':fromFailed'] = number(change.from.failedInstallment);
    }
    const set = ['#subscriptionStatus = :status', '#updatedAt = :now'];
    if (change.failedInstallment !== undefined) {
      set.push('#failedInstallment = :failed');
      values[':failed'] = number(change.failedInstallment);
    }
    const outbox = appendEvents(change.events, this.now());
    set.push(outbox.set);
    Object.assign(values, outbox.values);
    const ended = change.to === 'CANCELLED' || change.to === 'COMPLETED';
    const update = `SET ${set.join(', ')}${ended ? ' REMOVE #nextInstallment' : ''}`;
    const written = await this.#updateOrder(orderId, update, conditions.join(' AND '), values, outbox.names);
    if (!written) this.onEvents(orderKey(orderId));
    return written;
  }

  /** Payments of the order besides its own that could be duplicates (the merchant checks them). */
  async noteDuplicatePayments(
    orderId: string,
    paymentIds: readonly string[],
    events?: readonly LedgerEvent[],
  ): Promise<boolean> {
    if (!events?.length)
      return this.#updateOrder(orderId, 'ADD #duplicatePayments :ids', 'attribute_exists(pk)', {
        ':ids': { SS: [...paymentIds] },
      });
    // With its event only where one of them is new: noted again, it writes nothing.
    const values: Record<string, AttributeValue> = { ':ids': { SS: [...paymentIds] } };
    const news = paymentIds.map((id, i) => {
      values[`:id${i}`] = { S: id };
      return `NOT contains(#duplicatePayments, :id${i})`;
    });
    const outbox = appendEvents(events, this.now());
    return this.#updateOrder(
      orderId,
      `SET ${outbox.set} ADD #duplicatePayments :ids`,
      `attribute_exists(pk) AND (attribute_not_exists(#duplicatePayments) OR ${news.join(' OR ')})`,
      { ...values, ...outbox.values },
      outbox.names,
    );
  }

  /** A conditional update of an order item, with the attribute names its expressions use. */
  #updateOrder(
    orderId: string,
    update: string,
    condition: string,
    values: Record<string, AttributeValue>,
    names: Record<string, string> = {},
  ): Promise<boolean> {
    const command = new UpdateItemCommand({
      TableName: this.table,
      Key: { pk: { S: orderKey(orderId) } },
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: { ...namesIn(`${update} ${condition}`), ...names },
      // DynamoDB refuses an empty map of values.
      ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
    });
    // A write that appends events (its update names the outbox) tells the relay.
    return update.includes('#outbox')
      ? this.recording(orderKey(orderId), command)
      : this.conditional(command);
  }

  // The references and notifications are items of their own (lib/ledger/references.ts,
  // lib/ledger/notifications.ts); the ledger is one store to its callers.

  link(kind: ReferenceKind, id: string, reference: Reference, chargeKey?: string): Promise<boolean> {
    return this.#references.link(kind, id, reference, chargeKey);
  }

  lookup(kind: ReferenceKind, id: string): Promise<Reference | undefined> {
    return this.#references.lookup(kind, id);
  }

  setSubscriptionStatus(subscriptionId: string, status: string): Promise<boolean> {
    return this.#references.setSubscriptionStatus(subscriptionId, status);
  }

  addSubscription(owner: string, subscriptionId: string): Promise<boolean> {
    return this.#references.addSubscription(owner, subscriptionId);
  }

  addFailedPreapproval(
    owner: string,
    attempt: string,
    windows: readonly number[],
    staleWindows: readonly number[] = [],
  ): Promise<boolean> {
    return this.#references.addFailedPreapproval(owner, attempt, windows, staleWindows);
  }

  failedPreapprovals(owner: string): Promise<Record<number, number>> {
    return this.#references.failedPreapprovals(owner);
  }

  subscriptionsOf(owner: string): Promise<string[]> {
    return this.#references.subscriptionsOf(owner);
  }

  recordUnmatched(notification: UnmatchedNotification, expiresAt: number): Promise<boolean> {
    return this.#notifications.recordUnmatched(notification, expiresAt);
  }

  notificationOutcome(identity: string): Promise<string | undefined> {
    return this.#notifications.notificationOutcome(identity);
  }

  noteNotification(identity: string, outcome: string, expiresAt: number): Promise<void> {
    return this.#notifications.noteNotification(identity, outcome, expiresAt);
  }

  unmatched(orderId?: string): Promise<KeptNotification[]> {
    return this.#notifications.unmatched(orderId);
  }

  /** A page of an order list, newest first (order-lists.ts): at most two Query calls. */
  listOrders(query: OrderListQuery): Promise<OrderListPage> {
    return this.#lists.listOrders(query);
  }

  paymentRefunds(paymentId: string): Promise<PaymentRefunds> {
    return this.#refunds.paymentRefunds(paymentId);
  }

  takeRefundSlot(paymentId: string, slot: RefundSlot, events?: readonly LedgerEvent[]): Promise<boolean> {
    return this.#refunds.takeRefundSlot(paymentId, slot, events);
  }

  finishRefund(
    paymentId: string,
    key: string,
    record: RefundRecord,
    events?: readonly LedgerEvent[],
    takenAt?: number,
  ): Promise<boolean> {
    return this.#refunds.finishRefund(paymentId, key, record, events, takenAt);
  }

  keepPayHereStatus(paymentId: string, seen: PayHereStatus): Promise<boolean> {
    return this.#refunds.keepPayHereStatus(paymentId, seen);
  }
}
