import type { CredentialsProvider } from '../config/config.ts';
import { InvalidSignatureError } from '../envelope/errors.ts';
import type { Card, Order, OrderMove, OrderState, UnmatchedNotification } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { audit } from '../log/audit.ts';
import { log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { maskCard } from '../log/redact.ts';
import { forgetWithin, type ReadInvalidation } from '../reads/invalidation.ts';
import type { Notification } from '../schemas/notification.ts';
import type { Confirmations } from './confirm.ts';
import { verifySignature } from './signature.ts';

/** What a verified notification did, for the log, the metrics and the tests. */
export type Outcome =
  | 'recorded'
  | 'unchanged'
  | 'unknown_order'
  | 'amount_mismatch'
  | 'unknown_status'
  | 'token_conflict';

/**
 * How far along an order is: a notification moves it only forward (SPEC.md: created → pending →
 * succeeded | failed | cancelled; succeeded → chargedback). `unknown` is the service's own doubt
 * about a lost charge, which any verified news settles. A later success after a failure is a
 * successful new attempt (money moved); nothing goes back from a success.
 */
const PROGRESS: Record<OrderState, number> = {
  created: 0,
  unknown: 0,
  pending: 1,
  failed: 2,
  cancelled: 2,
  succeeded: 3,
  chargedback: 4,
};

function movesForward(from: OrderState, to: OrderState): boolean {
  if (to === 'chargedback') return from === 'succeeded';
  return PROGRESS[to] > PROGRESS[from];
}

/** The order state a signed status code means for this kind of order, if it means one. */
function stateOf(statusCode: string, order: Order): OrderState | undefined {
  switch (statusCode) {
    case '2':
      return 'succeeded';
    case '3':
      // PayHere's code for a successful hold.
      return order.kind === 'authorize' ? 'succeeded' : undefined;
    case '0':
      return 'pending';
    case '-1':
      return 'cancelled';
    case '-2':
      return 'failed';
    case '-3':
      return 'chargedback';
    default:
      return undefined;
  }
}

/**
 * The audit line of a notification that changed `order`: PayHere acts, authenticated by the
 * signature.
 */
const auditChange = (order: Order, change: Record<string, unknown>) =>
  audit({
    route: 'notify',
    caller: 'payhere',
    role: 'gateway',
    replayed: false,
    outcome: 'recorded',
    orderId: order.orderId,
    owner: order.owner,
    kind: order.kind,
    ...change,
  });

const cents = (amount: string) => Math.round(Number(amount) * 100);

/** The fields kept of a notification that matched nothing: no token, no signature. */
function keptFields(notification: Notification): Record<string, string> {
  const { customer_token: _token, authorization_token: _hold, md5sig: _signature, ...rest } = notification;
  return Object.fromEntries(
    Object.entries(rest).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/**
 * PayHere's notifications (SPEC.md "notify"). Only merchant_id, order_id, payhere_amount,
 * payhere_currency and status_code are signed, so a notification changes nothing unless the
 * signature verifies, the order is one the ledger created, the signed amount and currency are the
 * order's, and the order's state allows the change. Each unsigned field it then records is bound
 * or checked: a customer token to one owner and one pre-approval, never replaced; an authorization
 * token to one order; a payment or subscription id only as PayHere's records confirm it.
 */
export class NotificationReceiver {
  readonly #ledger: LedgerStore;
  readonly #credentials: CredentialsProvider;
  readonly #confirmations: Confirmations;
  readonly #invalidation: ReadInvalidation | undefined;

  constructor(options: {
    ledger: LedgerStore;
    credentials: CredentialsProvider;
    confirmations: Confirmations;
    /** What a recorded change makes stale in the shared reads is dropped. */
    invalidation?: ReadInvalidation;
  }) {
    this.#ledger = options.ledger;
    this.#credentials = options.credentials;
    this.#confirmations = options.confirmations;
    this.#invalidation = options.invalidation;
  }

  /** Verify, then act on a notification; `deadline` bounds the calls that confirm what it reports. */
  async receive(notification: Notification, deadline: number): Promise<Outcome> {
    const credentials = await this.#credentials.get();
    const secrets = [credentials.merchantSecret, ...credentials.appMerchantSecrets];
    if (
      notification.merchant_id !== credentials.merchantId ||
      !verifySignature(notification, notification.md5sig, secrets)
    ) {
      countMetric('NotificationRejected');
      log.warn('notification refused: the signature does not verify', { orderId: notification.order_id });
      throw new InvalidSignatureError();
    }
    countMetric('NotificationVerified');
    // Two rounds: a notification racing another for the same order reads it once more.
    for (let round = 0; round < 2; round++) {
      const order = await this.#ledger.getOrder(notification.order_id);
      const outcome = await this.#act(notification, order, deadline);
      if (outcome !== 'raced') return outcome;
    }
    log.info('notification left unchanged: its order kept changing', { orderId: notification.order_id });
    return 'unchanged';
  }

  async #act(
    notification: Notification,
    order: Order | undefined,
    deadline: number,
  ): Promise<Outcome | 'raced'> {
    if (!order) return this.#unmatched('unknown_order', notification);
    const amountMatches =
      order.amountCents === null || cents(notification.payhere_amount) === order.amountCents;
    if (notification.payhere_currency !== order.currency || !amountMatches) {
      return this.#unmatched('amount_mismatch', notification);
    }
    const to = stateOf(notification.status_code, order);
    if (!to) {
      log.error('notification with a status code the service does not act on', {
        orderId: order.orderId,
        statusCode: notification.status_code,
        kind: order.kind,
      });
      return this.#unmatched('unknown_status', notification);
    }
    if (to === order.state) return this.#again(notification, order, deadline);
    if (!movesForward(order.state, to)) {
      log.info('notification older than the order’s state: nothing changed', {
        orderId: order.orderId,
        state: order.state,
        reported: to,
      });
      return 'unchanged';
    }
    const move = await this.#move(notification, order, to, deadline);
    if (move === 'token_conflict') return this.#unmatched('token_conflict', notification);
    if (!(await this.#ledger.moveOrder(order.orderId, move))) return 'raced';
    await this.#forget(order.orderId, move.subscriptionId ?? order.subscriptionId);
    countMetric('NotificationRecorded');
    auditChange(order, {
      from: order.state,
      to,
      statusCode: notification.status_code,
      amount: notification.payhere_amount,
      currency: notification.payhere_currency,
      paymentId: move.paymentId,
      subscriptionId: move.subscriptionId,
    });
    if (order.kind === 'recurring' && move.subscriptionId)
      await this.#installments(notification, { ...order, subscriptionId: move.subscriptionId }, deadline);
    return 'recorded';
  }

  /** What the move records besides the state: each unsigned field bound or confirmed first. */
  async #move(
    notification: Notification,
    order: Order,
    to: OrderState,
    deadline: number,
  ): Promise<OrderMove | 'token_conflict'> {
    const move: OrderMove = { from: order.state, to };
    const card = cardOf(notification);
    if (card) move.card = card;
    if (to !== 'succeeded') return move;
    const reference = { orderId: order.orderId, owner: order.owner };
    const { customer_token: customerToken, authorization_token: holdToken } = notification;
    if (order.kind === 'preapproval' && customerToken) {
      // A token another customer saved cannot become this one's card.
      if (!(await this.#ledger.link('customer_token', customerToken, reference))) return 'token_conflict';
      move.customerToken = customerToken;
    }
    if (order.kind === 'authorize' && holdToken) {
      if (!(await this.#ledger.link('authorization', holdToken, reference))) return 'token_conflict';
      move.authorizationToken = holdToken;
    }
    const { payment_id: paymentId, subscription_id: subscriptionId } = notification;
    if ((order.kind === 'payment' || order.kind === 'charge') && paymentId) {
      const confirmed = await this.#confirmations.paymentOfOrder(order, paymentId, deadline);
      if (confirmed === true && (await this.#ledger.link('payment', paymentId, reference)))
        move.paymentId = paymentId;
      else if (confirmed === undefined) move.reported = { paymentId };
    }
    if (order.kind === 'recurring' && subscriptionId) {
      const confirmed = await this.#confirmations.subscriptionOfOrder(order, subscriptionId, deadline);
      if (confirmed === true && (await this.#ledger.link('subscription', subscriptionId, reference))) {
        await this.#ledger.addSubscription(order.owner, subscriptionId);
        move.subscriptionId = subscriptionId;
      } else if (confirmed === undefined) {
        move.reported = { subscriptionId };
      }
    }
    return move;
  }

  /** A notification for the state the order is already in: a redelivery, or the next installment. */
  async #again(notification: Notification, order: Order, deadline: number): Promise<Outcome> {
    const token = notification.customer_token;
    if (order.kind === 'preapproval' && token && order.customerToken && token !== order.customerToken) {
      log.error('a second, different customer token for one pre-approval was refused', {
        orderId: order.orderId,
      });
      countMetric('NotificationTokenConflict');
      return 'unchanged';
    }
    if (order.kind === 'recurring' && order.state === 'succeeded' && order.subscriptionId) {
      await this.#installments(notification, order, deadline);
    }
    return 'unchanged';
  }

  /**
   * Every installment carries the same signature, so what a notification says was paid counts only
   * once PayHere's payments of the subscription show it; until then it is kept as reported.
   */
  async #installments(notification: Notification, order: Order, deadline: number): Promise<void> {
    const subscriptionId = order.subscriptionId!;
    if (notification.subscription_id !== undefined && notification.subscription_id !== subscriptionId) return;
    const paid = await this.#confirmations.installmentsPaid(order, subscriptionId, deadline);
    if (paid !== undefined) {
      if (await this.#ledger.confirm(order.orderId, { installmentsPaid: paid })) {
        auditChange(order, { subscriptionId, installmentsPaid: paid });
        await this.#forget(order.orderId, subscriptionId);
      }
      return;
    }
    const reported = Number(notification.item_rec_install_paid);
    if (Number.isSafeInteger(reported) && reported > 0)
      await this.#ledger.reportInstallments(order.orderId, reported);
  }

  /** The order (and its subscription) changed at PayHere: the shared reads of them are dropped. */
  async #forget(orderId: string, subscriptionId: string | null | undefined): Promise<void> {
    const invalidation = this.#invalidation;
    if (!invalidation) return;
    // PayHere wants its answer within a second: the drop waits at most half of one.
    await forgetWithin(async () => {
      await Promise.all([
        invalidation.forgetOrder(orderId),
        subscriptionId ? invalidation.forgetSubscription(subscriptionId) : undefined,
      ]);
    });
  }

  /** Kept apart for the operator and counted; PayHere is answered 200 so that it does not retry. */
  async #unmatched(reason: UnmatchedNotification['reason'], notification: Notification): Promise<Outcome> {
    await this.#ledger.recordUnmatched({
      reason,
      orderId: notification.order_id,
      statusCode: notification.status_code,
      amount: notification.payhere_amount,
      currency: notification.payhere_currency,
      fields: keptFields(notification),
    });
    countMetric(reason === 'unknown_order' ? 'NotificationUnmatched' : 'NotificationMismatched');
    const alert = reason === 'token_conflict' || reason === 'unknown_status';
    log[alert ? 'error' : 'warn']('notification kept apart for the operator', {
      orderId: notification.order_id,
      reason,
    });
    return reason;
  }
}

/** The card as PayHere sends it (already masked), for the order's owner to recognise. */
function cardOf(notification: Notification): Card | undefined {
  const { method, card_no: number, card_expiry: expiry } = notification;
  if (!method && !number && !expiry) return undefined;
  // Masked again: the field is unsigned, and a full card number must never be stored.
  return { method: method ?? null, card_no: number ? maskCard(number) : null, card_expiry: expiry ?? null };
}
