// One file, long on purpose: one notification's path (signature, replay, flow and terms, PayHere's
// confirmation, the move through lib/orders/evidence.ts, audit, installments, what is kept apart),
// read top to bottom as PayHere's message is handled.
import { createHash } from 'node:crypto';
import type { CredentialsProvider } from '../config/config.ts';
import { GatewayUnavailableError, InvalidSignatureError, RateLimitedError } from '../envelope/errors.ts';
import type { Card, Order, OrderKind, UnmatchedNotification } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { audit } from '../log/audit.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { maskCard } from '../log/redact.ts';
import { AttemptWindows } from '../orders/attempts.ts';
import { DEFAULT_FAILED_ATTEMPTS } from '../orders/config.ts';
import type { Confirmations } from '../orders/confirmations.ts';
import { installmentPaid, possibleDuplicates } from '../orders/events.ts';
import {
  type Applied,
  applyEvidence,
  type Evidence,
  notifiedAmountFits,
  type Recorded,
} from '../orders/evidence.ts';
import { SubscriptionStandings, unchanged } from '../orders/standings.ts';
import { sameTerms, termsOf } from '../orders/terms.ts';
import { forgetChanged, type ReadInvalidation } from '../reads/invalidation.ts';
import type { Notification } from '../schemas/notification.ts';
import { keptFields } from './kept.ts';
import { verifySignature } from './signature.ts';

/** What a verified notification did, for the log, the metrics and the tests. */
export type Outcome = 'recorded' | 'unchanged' | 'replayed' | UnmatchedNotification['reason'];

/** How long a notification's identity and what is kept apart stay (docs/contract.md "notify"). */
export const DEFAULT_KEEP_DAYS = 90;

/** How often PayHere's records may be asked about one order on behalf of its notifications. */
export const CONFIRM_INTERVAL_MS = 10_000;

/** What a signed status code reports, for this kind of order (3 is PayHere's code for a successful hold). */
function reportOf(statusCode: string, kind: OrderKind): 'success' | Evidence | undefined {
  switch (statusCode) {
    case '2':
      return 'success';
    case '3':
      return kind === 'authorize' ? 'success' : undefined;
    case '0':
      return 'notified_pending';
    case '-1':
      return 'notified_cancelled';
    case '-2':
      return 'notified_failed';
    case '-3':
      return 'notified_chargeback';
    default:
      return undefined;
  }
}

type Flow = 'preapproval' | 'hold' | 'subscription';

/** The flows a notification's (unsigned) fields belong to besides a plain payment. */
function flowsOf(notification: Notification): Set<Flow> {
  const flows = new Set<Flow>();
  if (notification.customer_token) flows.add('preapproval');
  if (notification.authorization_token || notification.captured_amount) flows.add('hold');
  if (
    notification.subscription_id ||
    notification.message_type ||
    notification.recurring === '1' ||
    notification.item_recurrence ||
    notification.item_duration
  )
    flows.add('subscription');
  return flows;
}

/** The one flow an order's kind may hear of besides a payment's fields; none for a payment. */
const FLOW_OF_KIND: Record<OrderKind, Flow | undefined> = {
  payment: undefined,
  charge: undefined,
  preapproval: 'preapproval',
  authorize: 'hold',
  recurring: 'subscription',
};

/** The field a success of this kind must carry: what the order is for. */
function fitsKind(notification: Notification, kind: OrderKind, success: boolean): boolean {
  const expected = FLOW_OF_KIND[kind];
  for (const flow of flowsOf(notification)) if (flow !== expected) return false;
  if (!success) return true;
  if (kind === 'preapproval') return Boolean(notification.customer_token);
  if (kind === 'authorize') return Boolean(notification.authorization_token);
  if (kind === 'recurring') return Boolean(notification.subscription_id);
  return true;
}

const cents = (amount: string) => Math.round(Number(amount) * 100);

/**
 * The fields a notification is acted on by: the signed ones and the unsigned ones this receiver
 * reads (a flow's token or id, an installment's number, the card it keeps). Whatever else it carries
 * (custom fields, messages, fields PayHere may add, anything a replayer adds) changes nothing it
 * does. Keep in step with what #act and its helpers read.
 */
const ACTED_ON = [
  'merchant_id',
  'order_id',
  'payhere_amount',
  'payhere_currency',
  'status_code',
  'payment_id',
  'customer_token',
  'authorization_token',
  'captured_amount',
  'subscription_id',
  'message_type',
  'recurring',
  'item_recurrence',
  'item_duration',
  'item_rec_install_paid',
  'item_rec_date_next',
  'method',
  'card_no',
  'card_expiry',
] as const satisfies ReadonlyArray<keyof Notification>;

/**
 * A notification's identity: its signed and acted-on fields, as PayHere would send it again (an
 * empty field is an absent one, as everywhere it is read). Not its signed fields alone: every
 * installment of a subscription is signed alike, and a variant with another acted-on field is no
 * replay (it is acted on, and alerted where it conflicts). Not its other fields, nor `md5sig`
 * (any case of it, under any of the merchant's secrets, verifies the same signed fields): a variant
 * of a recorded notification in those is the same notification, answered from the ledger,
 * writing nothing and costing PayHere nothing.
 */
function identityOf(notification: Notification): string {
  const fields = ACTED_ON.flatMap((name) => (notification[name] ? [[name, notification[name]]] : []));
  return createHash('sha256').update(JSON.stringify(fields)).digest('base64url');
}

/**
 * A failure's signed identity: only what PayHere signs (and its signature). Its unsigned payment id
 * can be altered in a replay, so a failure whose signed identity was seen before never ends a
 * pending charge (its payment id is not its own word).
 */
function signedFailureOf(notification: Notification): string | undefined {
  if (notification.status_code !== '-1' && notification.status_code !== '-2') return undefined;
  const signed = [
    notification.merchant_id,
    notification.order_id,
    notification.payhere_amount,
    notification.payhere_currency,
    notification.status_code,
    notification.md5sig.toUpperCase(),
  ];
  return `signed#${createHash('sha256').update(JSON.stringify(signed)).digest('base64url')}`;
}

/**
 * PayHere's notifications (docs/contract.md "notify"). Only merchant_id, order_id, payhere_amount,
 * payhere_currency and status_code are signed, and a captured notification can be replayed at any
 * time, so a notification changes nothing unless the signature verifies, the order is one the
 * ledger created, the signed amount and currency are the order's, its fields are the flow of the
 * order's kind, and lib/orders/evidence.ts allows the move: a notification never reopens a charge,
 * and a payment's or subscription's success counts only once PayHere's records show it (until then
 * the order is pending, reported). A notification identical to one already received is answered
 * from the ledger: no PayHere read, nothing new written.
 */
export class NotificationReceiver {
  readonly #ledger: LedgerStore;
  readonly #credentials: CredentialsProvider;
  readonly #confirmations: Confirmations;
  readonly #invalidation: ReadInvalidation | undefined;
  readonly #standings: SubscriptionStandings;
  readonly #settleDelayMs: number;
  readonly #keepSeconds: number;
  readonly #failedWindows: AttemptWindows;
  readonly #failedLimit: number;

  constructor(options: {
    ledger: LedgerStore;
    credentials: CredentialsProvider;
    confirmations: Confirmations;
    /** What a recorded change makes stale in the shared reads is dropped. */
    invalidation?: ReadInvalidation;
    /** How long after a report the settle job settles it if PayHere's records never show it. */
    settleDelayMs: number;
    keepDays?: number;
    /** How many failed pre-approvals a customer may have in a window (ORDER_FAILED_ATTEMPTS). */
    failedAttempts?: { count: number; windowMs: number };
  }) {
    const failedAttempts = options.failedAttempts ?? DEFAULT_FAILED_ATTEMPTS;
    this.#failedWindows = new AttemptWindows(failedAttempts.windowMs);
    this.#failedLimit = failedAttempts.count;
    this.#ledger = options.ledger;
    this.#credentials = options.credentials;
    this.#confirmations = options.confirmations;
    this.#invalidation = options.invalidation;
    this.#standings = new SubscriptionStandings({
      ledger: options.ledger,
      confirmations: options.confirmations,
      settleDelayMs: options.settleDelayMs,
      ...(options.invalidation ? { invalidation: options.invalidation } : {}),
    });
    this.#settleDelayMs = options.settleDelayMs;
    this.#keepSeconds = (options.keepDays ?? DEFAULT_KEEP_DAYS) * 86_400;
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
    const identity = identityOf(notification);
    const before = await this.#ledger.notificationOutcome(identity);
    if (before !== undefined) {
      countMetric('NotificationReplayed');
      log.info('notification received before: answered from the ledger', {
        orderId: notification.order_id,
        outcome: before,
      });
      return 'replayed';
    }
    const outcome = await this.#receive(notification, deadline);
    // Noted after it was acted on: one that failed half-way is acted on again when PayHere resends it.
    const signedFailure = signedFailureOf(notification);
    try {
      await Promise.all([
        this.#ledger.noteNotification(identity, outcome, this.#expiresAt()),
        signedFailure && this.#ledger.noteNotification(signedFailure, outcome, this.#expiresAt()),
      ]);
    } catch (error) {
      log.warn('could not note a notification as received', { error: describeError(error) });
    }
    return outcome;
  }

  async #receive(notification: Notification, deadline: number): Promise<Outcome> {
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
    const amountMatches = notifiedAmountFits(order, cents(notification.payhere_amount));
    if (notification.payhere_currency !== order.currency || !amountMatches) {
      return this.#unmatched('amount_mismatch', notification);
    }
    const report = reportOf(notification.status_code, order.kind);
    if (!report) {
      log.error('notification with a status code the service does not act on', {
        orderId: order.orderId,
        statusCode: notification.status_code,
        kind: order.kind,
      });
      return this.#unmatched('unknown_status', notification);
    }
    if (!fitsKind(notification, order.kind, report === 'success')) {
      return this.#unmatched('flow_mismatch', notification);
    }
    if (aboutSubscription(notification, order))
      return this.#subscriptionStanding(notification, order, deadline);
    if (report === 'notified_failed' && order.kind === 'preapproval')
      await this.#failedPreapproval(notification, order);
    let evidence: Evidence;
    let recorded: Recorded = {};
    // Already paid (or charged back): a success says nothing new, and costs PayHere no read.
    if (report === 'success' && (order.state === 'succeeded' || order.state === 'chargedback'))
      return this.#again(notification, order, deadline);
    if (report === 'success') {
      const success = await this.#success(notification, order, deadline);
      if (typeof success === 'string') return this.#unmatched(success, notification);
      ({ evidence, recorded } = success);
    } else if (
      (report === 'notified_failed' || report === 'notified_cancelled') &&
      order.charge?.inflight === true &&
      notification.payment_id
    ) {
      // A charge through the service is in flight: its answer, not recorded yet, may name the very
      // payment this failure names (PayHere notified before it answered). Unnoted now (503), PayHere
      // sends it again, and the charge's recorded answer decides then: a pending charge of that
      // payment ends failed, any other outcome ignores it.
      throw uncheckable();
    } else if (
      (report === 'notified_failed' || report === 'notified_cancelled') &&
      order.charge !== null &&
      order.state === 'pending' &&
      !(await this.#signedFailureSeen(notification))
    ) {
      // A charge through the service left pending: only its own payment's failure may end it.
      evidence = 'notified_charge_failed';
      recorded.about = notification.payment_id || null;
    } else {
      evidence = report;
    }
    const card = cardOf(notification);
    if (card) recorded.card = card;
    const applied = await applyEvidence(this.#ledger, order, evidence, recorded);
    return this.#after(notification, order, evidence, recorded, applied, deadline);
  }

  /**
   * What a success notification is evidence of. The flows whose only record is the notification
   * record their token, bound to the order's owner; a payment or a subscription is looked up in
   * PayHere's records (and kept as a report when they do not show it yet).
   */
  async #success(
    notification: Notification,
    order: Order,
    deadline: number,
  ): Promise<{ evidence: Evidence; recorded: Recorded } | 'token_conflict' | 'terms_mismatch'> {
    const reference = { orderId: order.orderId, owner: order.owner };
    const { customer_token: customerToken, authorization_token: holdToken } = notification;
    if (order.kind === 'preapproval' && customerToken) {
      // A token another customer saved cannot become this one's card.
      if (!(await this.#ledger.link('customer_token', customerToken, reference))) return 'token_conflict';
      return { evidence: 'notified_token', recorded: { customerToken } };
    }
    if (order.kind === 'authorize' && holdToken) {
      if (!(await this.#ledger.link('authorization', holdToken, reference))) return 'token_conflict';
      // Unsigned and unverifiable (PayHere has no way to look a hold up): shown unverified until a
      // capture or release through the service proves it.
      const verified = order.authorizationToken === holdToken && order.holdVerified === true;
      return {
        evidence: 'notified_token',
        recorded: { authorizationToken: holdToken, holdVerified: verified },
      };
    }
    const reportedAt = Date.now();
    const settleAt = reportedAt + this.#settleDelayMs;
    if (order.kind === 'recurring') {
      const subscriptionId = notification.subscription_id!;
      const notified = termsOf(notification.item_recurrence ?? '', notification.item_duration ?? '');
      const ordered = termsOf(order.recurrence ?? '', order.duration ?? '');
      if (notified && (!ordered || !sameTerms(notified, ordered))) return 'terms_mismatch';
      const found =
        (await this.#mayConfirm(order)) &&
        (await this.#confirmations.subscriptionOfOrder(order, subscriptionId, deadline));
      if (found === 'other_terms') return 'terms_mismatch';
      if (typeof found === 'object' && (await this.#ledger.link('subscription', subscriptionId, reference))) {
        await this.#ledger.addSubscription(order.owner, subscriptionId);
        // The first payment's notification, the subscription confirmed: its next installment's date.
        const next = nextInstallmentOf(notification);
        return {
          evidence: 'records_show_subscription',
          recorded: { subscriptionId, ...(next ? { nextInstallment: next } : {}) },
        };
      }
      // Its next installment's date, taken with the subscription once PayHere's records show it.
      const next = nextInstallmentOf(notification);
      const report = {
        paymentId: null,
        subscriptionId,
        ...(next ? { nextInstallment: next } : {}),
        at: reportedAt,
        settleAt,
      };
      return { evidence: 'notified_success', recorded: { report } };
    }
    const found =
      (await this.#mayConfirm(order)) &&
      (await this.#confirmations.paymentOfOrder(order, notification.payment_id, deadline));
    if (typeof found === 'object') {
      const paymentId = String(found.payment.payment_id);
      // Bound to the charge that holds the order, if any, so that its key's settlement finds it.
      const linked =
        (await this.#ledger.link('payment', paymentId, reference, order.charge?.key)) ||
        (await this.#ledger.lookup('payment', paymentId))?.orderId === order.orderId;
      if (linked) return { evidence: 'records_show_payment', recorded: { paymentId } };
    }
    if (found === 'several')
      log.warn('several payments could be the one reported', { orderId: order.orderId });
    const report = {
      paymentId: notification.payment_id || null,
      subscriptionId: null,
      at: reportedAt,
      settleAt,
    };
    return { evidence: 'notified_success', recorded: { report } };
  }

  /**
   * Card testing through pre-approvals: each customer opens as many pre-approval checkouts as it
   * likes and tries a card on each in PayHere's SDK, so a failure counts against the customer, not
   * only its order (lib/orders/checkout.ts refuses its next pre-approvals past the limit). A failure
   * past the limit in both its windows changes no decision and is not written: a signed notification
   * replayed with new unsigned payment ids cannot grow the customer's item. A count that cannot be
   * written is logged; the notification is still acted on.
   */
  async #failedPreapproval(notification: Notification, order: Order): Promise<void> {
    const attempt = `${order.orderId}#${notification.payment_id || '-'}`;
    const windows = this.#failedWindows;
    try {
      const counts = await this.#ledger.failedPreapprovals(order.owner);
      if (windows.atLimit(counts, this.#failedLimit)) return;
      await this.#ledger.addFailedPreapproval(
        order.owner,
        attempt,
        windows.failureWindows(),
        windows.stale(counts),
      );
    } catch (error) {
      log.warn('could not count a failed pre-approval against its customer', {
        orderId: order.orderId,
        error: describeError(error),
      });
    }
  }

  /** What follows a decision: the log, the metrics, the audit trail, dropped shared reads, installments. */
  async #after(
    notification: Notification,
    order: Order,
    evidence: Evidence,
    recorded: Recorded,
    applied: Applied,
    deadline: number,
  ): Promise<Outcome | 'raced'> {
    if ('unchanged' in applied) {
      if (applied.unchanged === 'raced') return 'raced';
      if (applied.unchanged === 'same') return this.#again(notification, order, deadline);
      countMetric('NotificationNotActed');
      log.info('notification recorded, not acted on: it is not evidence for this move', {
        orderId: order.orderId,
        state: order.state,
        evidence,
        why: applied.unchanged,
      });
      auditNotification(order, {
        outcome: 'unchanged',
        evidence,
        why: applied.unchanged,
        statusCode: notification.status_code,
      });
      return 'unchanged';
    }
    await this.#forget(order.orderId, recorded.subscriptionId ?? order.subscriptionId);
    countMetric('NotificationRecorded');
    auditNotification(order, {
      outcome: 'recorded',
      from: order.state,
      to: applied.moved,
      evidence,
      statusCode: notification.status_code,
      amount: notification.payhere_amount,
      currency: notification.payhere_currency,
      paymentId: recorded.paymentId,
      subscriptionId: recorded.subscriptionId,
    });
    if (order.kind === 'recurring' && recorded.subscriptionId)
      await this.#installments(notification, { ...order, subscriptionId: recorded.subscriptionId }, deadline);
    return 'recorded';
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
    // Another subscription of a paid recurring order: the customer paid it twice. One whose payment
    // is noted already (PayHere sending its notification again) asks PayHere nothing more.
    const otherSubscription = notification.subscription_id;
    if (
      order.kind === 'recurring' &&
      order.state === 'succeeded' &&
      order.subscriptionId &&
      notification.status_code === '2' &&
      otherSubscription !== undefined &&
      otherSubscription !== order.subscriptionId
    ) {
      const noted =
        notification.payment_id !== undefined && order.duplicatePayments.includes(notification.payment_id);
      if (!noted) await this.#secondSubscription(order, otherSubscription, deadline);
      return 'unchanged';
    }
    // A later installment's notification: what cannot be confirmed now is, by the settle job, later.
    // (The first payment's installment is counted by any later read of the subscription's payments.)
    // A chargeback of one installment does not stop the subscription: its next ones still count.
    const running = order.state === 'succeeded' || order.state === 'chargedback';
    if (order.kind === 'recurring' && running && order.subscriptionId) {
      if ((await this.#installments(notification, order, deadline)) === 'deferred')
        await this.#checkStandingLater(order, Date.now() + CONFIRM_INTERVAL_MS);
    }
    const paymentId = notification.payment_id;
    if (
      (order.kind === 'charge' || order.kind === 'payment') &&
      notification.status_code === '2' &&
      paymentId &&
      order.paymentId !== null &&
      paymentId !== order.paymentId &&
      !order.duplicatePayments.includes(paymentId)
    ) {
      await this.#secondPayment(order, paymentId, deadline);
    }
    return 'unchanged';
  }

  /** Whether a failure with these signed fields was received before (a replay, perhaps altered). */
  async #signedFailureSeen(notification: Notification): Promise<boolean> {
    const signed = signedFailureOf(notification);
    return signed !== undefined && (await this.#ledger.notificationOutcome(signed)) !== undefined;
  }

  /**
   * A paid order's success notification for another payment (paid again through PayHere's SDK, say):
   * recorded on the order for the merchant, counted and alarmed, once PayHere's records show that
   * payment of the order (the signature does not cover the payment id, so its word alone is not
   * enough). It moves no state: the order is paid; the merchant decides what to refund. Nothing
   * keeps it for a later look: one that cannot be checked now fails, unnoted, and PayHere sends it
   * again: 429 when its order was checked lately (a double tap's second payment; a replay with
   * altered payment ids gets no 5xx either, which would alarm), 503 when PayHere did not answer.
   */
  async #secondPayment(order: Order, paymentId: string, deadline: number): Promise<void> {
    await this.#mustConfirmNow(order);
    const found = await this.#confirmations.paymentOfOrder(order, paymentId, deadline);
    if (found === undefined) throw uncheckable();
    if (typeof found !== 'object' || String(found.payment.payment_id) !== paymentId) return;
    const reference = { orderId: order.orderId, owner: order.owner };
    // Owned by the order from now on: no lost charge can adopt it as its own.
    if (!(await this.#ledger.link('payment', paymentId, reference))) return;
    await this.#ledger.noteDuplicatePayments(
      order.orderId,
      [paymentId],
      [possibleDuplicates(order, order.state, [paymentId])],
    );
    countMetric('PossibleDuplicateCharge');
    log.warn('a paid order was paid again: the merchant must check it and refund what was paid twice', {
      orderId: order.orderId,
      paymentId: order.paymentId,
      secondPaymentId: paymentId,
    });
    audit({
      route: 'notify',
      outcome: 'recorded',
      replayed: false,
      orderId: order.orderId,
      paymentId,
      evidence: 'second_payment',
    });
  }

  /**
   * A paid recurring order's success notification for another subscription (its checkout run twice:
   * PayHere makes a second subscription, which charges the card on its own schedule). Once PayHere's
   * records show that subscription for this order, it is linked to the order's owner (who may then
   * read and cancel it) and the payments PayHere shows of it are noted on the order as possible
   * duplicates, counted and alarmed, as a second payment is (the signature covers neither id, so the
   * notification's word alone is not enough). It moves no state. One that cannot be checked now
   * fails unnoted, and PayHere sends it again (429 or 503, as #secondPayment says).
   */
  async #secondSubscription(order: Order, subscriptionId: string, deadline: number): Promise<void> {
    await this.#mustConfirmNow(order);
    const found = await this.#confirmations.subscriptionOfOrder(order, subscriptionId, deadline);
    const paymentIds =
      found === undefined || found === 'none'
        ? undefined
        : await this.#confirmations.subscriptionPaymentIds(order, subscriptionId, deadline);
    if (found === undefined || (found !== 'none' && paymentIds === undefined)) throw uncheckable();
    // Not a subscription of this order: someone else's notification, altered.
    if (found === 'none') return;
    const reference = { orderId: order.orderId, owner: order.owner };
    if (!(await this.#ledger.link('subscription', subscriptionId, reference))) return;
    await this.#ledger.addSubscription(order.owner, subscriptionId);
    // Noted once: a notification of it again (its next installment) notes only what is new.
    const duplicates = paymentIds!.filter((id) => !order.duplicatePayments.includes(id));
    if (duplicates.length === 0) return;
    await this.#ledger.noteDuplicatePayments(order.orderId, duplicates, [
      possibleDuplicates(order, order.state, duplicates),
    ]);
    countMetric('PossibleDuplicateCharge');
    log.warn('a paid recurring order got a second subscription: the merchant must cancel it and refund it', {
      orderId: order.orderId,
      subscriptionId: order.subscriptionId,
      secondSubscriptionId: subscriptionId,
    });
    audit({
      route: 'notify',
      outcome: 'recorded',
      replayed: false,
      orderId: order.orderId,
      subscriptionId,
      evidence: 'second_subscription',
    });
  }

  /**
   * Every installment carries the same signature, so what a notification says was paid counts only
   * once PayHere's payments of the subscription show it; until then it is kept as reported
   * (`deferred`: PayHere was not asked, or could not say).
   */
  async #installments(
    notification: Notification,
    order: Order,
    deadline: number,
  ): Promise<'done' | 'deferred'> {
    const subscriptionId = order.subscriptionId!;
    if (notification.subscription_id !== undefined && notification.subscription_id !== subscriptionId)
      return 'done';
    const paid = (await this.#mayConfirm(order))
      ? await this.#confirmations.installmentsPaid(order, subscriptionId, deadline)
      : undefined;
    if (paid !== undefined) {
      // Unsigned, so taken only with an installment PayHere's records confirm: a replay that
      // changes it alone changes nothing.
      // The next date goes with the installment that brought it: unknown when the notification has none.
      const next = nextInstallmentOf(notification) ?? null;
      const event = installmentPaid(order, paid, next);
      if (await this.#ledger.confirmInstallments(order.orderId, paid, next, [event])) {
        auditNotification(order, {
          outcome: 'recorded',
          subscriptionId,
          installmentsPaid: paid,
          nextInstallment: next,
        });
        await this.#forget(order.orderId, subscriptionId);
      }
      return 'done';
    }
    const reported = Number(notification.item_rec_install_paid);
    if (Number.isSafeInteger(reported) && reported > 0)
      await this.#ledger.reportInstallments(order.orderId, reported);
    return 'deferred';
  }

  /**
   * A running subscription's notification that may tell of its status (an installment failed, the
   * subscription stopped or completed, or nothing more falls due): what PayHere's records show of
   * it is recorded, never what the notification says (its `message_type` is unsigned, and every
   * installment, stop and completion of one subscription is signed alike but for the status code).
   * One confirmation within the notification's right to ask reads the subscription's standing
   * (lib/orders/standings.ts). One that may not ask now, or that PayHere cannot answer, records
   * nothing now and has the settle job read the standing once the right to ask is free again.
   */
  async #subscriptionStanding(notification: Notification, order: Order, deadline: number): Promise<Outcome> {
    const subscriptionId = order.subscriptionId!;
    if (notification.subscription_id !== undefined && notification.subscription_id !== subscriptionId)
      return 'unchanged';
    // Only a success's next date goes with the installments it confirms; an end has none.
    const next = notification.status_code === '2' ? nextInstallmentOf(notification) : undefined;
    const standing = (await this.#mayConfirm(order))
      ? await this.#standings.record(order, subscriptionId, deadline, next)
      : undefined;
    // PayHere could not say, or its record changed under the write: the settle job reads it later.
    const raced = standing !== undefined && standing !== 'none' && unchanged(standing) === 'raced';
    if (standing === undefined || raced)
      await this.#checkStandingLater(order, Date.now() + CONFIRM_INTERVAL_MS);
    if (standing === undefined) return 'unchanged';
    // Read now: a check the settle job had due for the order would read the same.
    if (!raced && order.standingCheckAt !== null && order.standingCheckAt <= Date.now())
      await this.#ledger.standingChecked(order.orderId, order.standingCheckAt, order.standingAsks);
    if (standing === 'none') {
      log.error('PayHere’s records hold no such subscription of the order', { orderId: order.orderId });
      return 'unchanged';
    }
    // PayHere's record may show an end or a failure later than its notification came: one more
    // look, by the settle job once the settle delay has passed (then what it shows stands).
    if ('unchanged' in standing.applied && standing.applied.unchanged === 'running')
      await this.#checkStandingLater(order, Date.now() + this.#settleDelayMs);
    const { applied, installmentsPaid: paid } = standing;
    if (standing.confirmed)
      auditNotification(order, { outcome: 'recorded', subscriptionId, installmentsPaid: paid });
    if ('unchanged' in applied) {
      auditNotification(order, {
        outcome: 'unchanged',
        subscriptionId,
        subscriptionStatus: standing.status,
        why: applied.unchanged,
        statusCode: notification.status_code,
      });
      return 'unchanged';
    }
    countMetric('NotificationRecorded');
    auditNotification(order, {
      outcome: 'recorded',
      subscriptionId,
      subscriptionStatus: applied.recorded,
      installmentsPaid: paid,
      statusCode: notification.status_code,
    });
    return 'recorded';
  }

  /**
   * The order's subscription is read from PayHere's records by the settle job at `at` (once the
   * order's right to ask is free again): what a notification could not confirm now is confirmed
   * later, not dropped. A write that fails fails the notification, which is then not noted as
   * received: PayHere sends it again, where a stop or a completion has no later notification to
   * ask for it.
   */
  async #checkStandingLater(order: Order, at: number): Promise<void> {
    await this.#ledger.checkStandingAt(order.orderId, at);
  }

  /**
   * A notification that must be checked before anything is noted, and cannot wait as a report: it
   * fails unnoted when its order was checked lately (429), and PayHere sends it again.
   */
  async #mustConfirmNow(order: Order): Promise<void> {
    if (!(await this.#mayConfirm(order)))
      throw new RateLimitedError(
        'This notification’s order was checked with PayHere’s records moments ago; send it again later.',
        CONFIRM_INTERVAL_MS / 1000,
      );
  }

  /**
   * Whether this notification may ask PayHere's records about its order: at most once per order per
   * CONFIRM_INTERVAL_MS, whatever notifications arrive (each read is one of the merchant's 20 per
   * 10 s). One that may not is kept as a report, which the settle job or a view confirms later.
   */
  async #mayConfirm(order: Order): Promise<boolean> {
    if (await this.#ledger.claimCheck(order.orderId, CONFIRM_INTERVAL_MS, 'notification')) return true;
    countMetric('NotificationConfirmDeferred');
    log.info('notification not confirmed now: its order was confirmed lately', { orderId: order.orderId });
    return false;
  }

  /** The order (and its subscription) changed at PayHere: the shared reads of them are dropped. */
  #forget(orderId: string, subscriptionId: string | null | undefined): Promise<void> {
    return forgetChanged(this.#invalidation, orderId, subscriptionId);
  }

  /** Kept apart for the operator and counted; PayHere is answered 200 so that it does not retry. */
  async #unmatched(reason: UnmatchedNotification['reason'], notification: Notification): Promise<Outcome> {
    await this.#ledger.recordUnmatched(
      {
        reason,
        orderId: notification.order_id,
        statusCode: notification.status_code,
        amount: notification.payhere_amount,
        currency: notification.payhere_currency,
        fields: keptFields(notification),
      },
      this.#expiresAt(),
    );
    countMetric(
      reason === 'unknown_order'
        ? 'NotificationUnmatched'
        : reason === 'terms_mismatch'
          ? 'NotificationTermsMismatch'
          : 'NotificationMismatched',
    );
    const alert = reason === 'token_conflict' || reason === 'unknown_status' || reason === 'terms_mismatch';
    log[alert ? 'error' : 'warn']('notification kept apart for the operator', {
      orderId: notification.order_id,
      reason,
    });
    return reason;
  }

  /** Epoch seconds, DynamoDB's TTL: when a notification's identity and what is kept apart go. */
  #expiresAt(): number {
    return Math.ceil(Date.now() / 1000) + this.#keepSeconds;
  }
}

/** The audit line of a notification about `order`: PayHere acts, authenticated by the signature. */
function auditNotification(
  order: Order,
  change: { outcome: 'recorded' | 'unchanged'; [field: string]: unknown },
) {
  audit({
    route: 'notify',
    caller: 'payhere',
    role: 'gateway',
    replayed: false,
    orderId: order.orderId,
    owner: order.owner,
    kind: order.kind,
    ...change,
  });
}

/** The message types that tell of a subscription's status (docs/payhere.md "Notifications"): unsigned. */
const STANDING_MESSAGES = new Set([
  'RECURRING_INSTALLMENT_FAILED',
  'RECURRING_STOPPED',
  'RECURRING_COMPLETE',
]);

/**
 * Whether a notification of a running subscription may tell of its status rather than only of an
 * installment paid: a signed failure or cancel (status code -2, -1), an unsigned message type that
 * says so, or a success after which nothing more falls due (the last installment). Which it is
 * chooses only what PayHere's records are read for; what is recorded is what they show.
 */
function aboutSubscription(notification: Notification, order: Order): boolean {
  if (order.kind !== 'recurring' || order.subscriptionId === null) return false;
  if (order.state !== 'succeeded' && order.state !== 'chargedback') return false;
  const code = notification.status_code;
  if (code === '-1' || code === '-2') return true;
  if (code !== '2') return false;
  return STANDING_MESSAGES.has(notification.message_type ?? '') || notification.item_rec_date_next === '';
}

/**
 * The next installment's date a subscription's notification gives (`item_rec_date_next`): a date,
 * null when it is empty (nothing more falls due), undefined when absent or not a date.
 */
function nextInstallmentOf(notification: Notification): string | null | undefined {
  const next = notification.item_rec_date_next;
  if (next === undefined) return undefined;
  if (next === '') return null;
  const date = /^([0-9]{4}-[0-9]{2}-[0-9]{2})(?:[ T][0-9:]{5,8})?$/.exec(next)?.[1];
  return date !== undefined && !Number.isNaN(Date.parse(date)) ? date : undefined;
}

/** The card as PayHere sends it (already masked), for the order's owner to recognise. */
function cardOf(notification: Notification): Card | undefined {
  const { method, card_no: number, card_expiry: expiry } = notification;
  if (!method && !number && !expiry) return undefined;
  // Masked again: the field is unsigned, and a full card number must never be stored.
  return { method: method ?? null, card_no: number ? maskCard(number) : null, card_expiry: expiry ?? null };
}

/** A check PayHere could not answer now: the notification fails unnoted (503), and PayHere sends it again. */
const uncheckable = () =>
  new GatewayUnavailableError(
    'This notification cannot be checked with PayHere’s records now; send it again later.',
  );
