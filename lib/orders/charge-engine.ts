// About 410 lines, one file: one charge's path (the order's claim, PayHere's call, the outcome's
// record, its settlement) and the refusals a claim can meet; each step's condition is written against
// the others', so they stay together. Evidence and transitions live in lib/orders/evidence.ts.
import {
  ApiError,
  CallerRateLimitedError,
  InvalidRequestError,
  NotFoundError,
  notSent,
  OrderConflictError,
} from '../envelope/errors.ts';
import { paymentOutcomeResponse } from '../envelope/payment-outcome.ts';
import { outcomeUnknown } from '../gateway/advice.ts';
import type { PayHere } from '../gateway/payhere.ts';
import { chargeDeadline, NOTHING } from '../gateway/payhere.ts';
import type { ChargeAdoption, PaymentOwner } from '../gateway/reconcile.ts';
import { type ChargeResult, idOf, statusCodeOf } from '../gateway/schemas.ts';
import type { ChargeClaim, ChargeOutcome, ChargeSlot, Order, Price, Reference } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { audit } from '../log/audit.ts';
import { describeError, log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';
import { forgetWithin, type ReadInvalidation } from '../reads/invalidation.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { type Actor, countRefusal, metadataRefused, Ownership, readLedger, visibleTo } from './access.ts';
import { AttemptWindows } from './attempts.ts';
import { NOTIFY_PATH, type OrdersConfig } from './config.ts';
import { orderMoved, possibleDuplicates } from './events.ts';
import { CHARGEABLE, chargeEvidence, chargeMove, type Evidence } from './evidence.ts';

export interface ChargeInput {
  actor: Actor;
  /** Who owns the order if the charge creates it: the caller, or the customer it acts for. */
  owner: string;
  body: ChargeRequest;
  /** Epoch ms by which all upstream work must be done. */
  deadline: number;
  /** The charge request's idempotency record key: the order's payment slot is held under it. */
  chargeKey: string;
}

export interface ChargeAnswer {
  msg: string;
  data: ChargeResult;
}

/** lib/http/deadline.ts's budget for all of a request's upstream work. */
export const MAX_UPSTREAM_MS = 20_000;

/** docs/payhere.md "Capture": a hold not captured within 7 days is released. */
export const HOLD_LIFETIME_MS = 7 * 86_400_000;

/** One interval of the settle job's schedule (serverless.yml): when it looks again at what is still open. */
export const SETTLE_INTERVAL_MS = 2 * 60_000;

const TOKEN_NOT_FOUND = () => new NotFoundError('The customer token was not found.');
const orderNotFound = (orderId: string) => () => new NotFoundError(`Order ${orderId} was not found.`);

/**
 * A charge of an order (docs/contract.md "Prices", "One payment per order", "notify_url"): who may charge
 * what, at which price, at most one successful, pending or unknown payment per order, and the
 * ledger told what PayHere answered. Refusals before sending are marked not sent, so the request's
 * Idempotency-Key is released. The one place a charge is sent and its outcome settled from
 * evidence: the charge route (Charges, lib/orders/charges.ts) and the settle job both go through it.
 */
export class ChargeEngine {
  readonly #payhere: PayHere;
  readonly #ledger: LedgerStore;
  readonly #ownership: Ownership;
  readonly #config: OrdersConfig;
  readonly #invalidation: ReadInvalidation | undefined;
  readonly #attempts: AttemptWindows;

  constructor(options: {
    payhere: PayHere;
    ledger: LedgerStore;
    config: OrdersConfig;
    /** The order's shared payments are dropped after every charge sent, whatever its outcome. */
    invalidation?: ReadInvalidation;
  }) {
    this.#payhere = options.payhere;
    this.#ledger = options.ledger;
    this.#ownership = new Ownership(options.ledger);
    this.#config = options.config;
    this.#invalidation = options.invalidation;
    this.#attempts = new AttemptWindows(options.config.failedAttempts.windowMs);
  }

  async charge(input: ChargeInput): Promise<ChargeAnswer> {
    const { actor, body } = input;
    // The merchant's metadata and the customer's details are the ledger's, never PayHere's (and
    // metadata is not a customer's to give).
    if (body.metadata !== undefined && actor.role === 'customer') throw notSent(metadataRefused());
    const { metadata: _metadata, customer_details: _details, ...sent } = body;
    const upstream = { ...sent, ...this.#notifyUrl(body.notify_url) };
    // A customer charges only a card it saved itself (a pre-approval the ledger recorded for it).
    await this.#ownership.require(actor, 'customer_token', body.customer_token, TOKEN_NOT_FOUND);
    const window = { sentAt: Date.now(), until: chargeDeadline(input.deadline) };
    const order = await this.#claim(input, window);
    const reference = { orderId: order.orderId, owner: order.owner };
    let answer: ChargeAnswer & { possibleDuplicates?: string[] };
    try {
      answer = await this.#payhere.charge(upstream, input.deadline, {
        window,
        ...this.#adoption(reference, input.chargeKey),
      });
    } catch (error) {
      await this.#afterFailure(order, input.chargeKey, error);
      throw error;
    } finally {
      // Paid, declined or unknown: the next read of the order's payments asks PayHere.
      const invalidation = this.#invalidation;
      if (invalidation) await forgetWithin(() => invalidation.forgetOrder(order.orderId));
    }
    const code = statusCodeOf(answer.data);
    const hold = body.type === 'AUTHORIZE';
    const evidence = chargeEvidence(code, hold);
    const recorded = this.#counted(order, evidence, outcome(evidence, answer.data, hold));
    if (answer.possibleDuplicates?.length) {
      recorded.possibleDuplicates = answer.possibleDuplicates;
      flagDuplicates(order.orderId, input.chargeKey, recorded.paymentId, answer.possibleDuplicates);
    }
    await this.#record(order, input.chargeKey, recorded);
    return answer;
  }

  /**
   * A charge whose outcome is unknown (its key repeated, the settle job, or an order the settle job
   * found still open), settled from what PayHere shows, never sent again: what other evidence
   * already settled on the order (a notification of the hold; a payment PayHere's records showed),
   * else the order's payments that no other charge owns (lib/gateway/reconcile.ts: records decide,
   * the window only ranks). Settled as not done only once the settle delay has passed (for a hold,
   * PayHere's hold lifetime) and two looks a settle interval apart showed nothing: the order may
   * be charged again. Still unknown, it throws OutcomeUnknownError.
   */
  async settle(
    input: ChargeInput,
    startedAt: number,
    settleDelayMs: number,
    now: () => number = Date.now,
  ): Promise<ChargeAnswer> {
    const { body } = input;
    const order = await readLedger(() => this.#ledger.getOrder(body.order_id));
    const slot = order?.charge?.key === input.chargeKey ? order.charge : undefined;
    // Without the ledger's window (an order it never recorded), the longest a request's upstream work can last.
    const window = slot ?? { sentAt: startedAt, until: startedAt + MAX_UPSTREAM_MS };
    const hold = body.type === 'AUTHORIZE';
    const final = now() >= window.until + (hold ? HOLD_LIFETIME_MS : settleDelayMs);
    const settled = order && slot && !slot.inflight ? settledByEvidence(input, order) : undefined;
    if (settled) return settled;
    if (hold) {
      if (!final) throw outcomeUnknown.hold(body.order_id);
      // PayHere releases a hold it was never told to capture: whatever it was, it is gone now.
      if (order && slot) await this.#settleNotDone(order, input.chargeKey, slot.inflight, 'hold_expired');
      return notDone(
        input,
        "No notification confirmed the hold within PayHere's hold lifetime: it has expired.",
      );
    }
    const reference = { orderId: body.order_id, owner: order?.owner ?? input.owner };
    const answer = await this.#payhere.reconcileCharge(body, window, input.deadline, {
      ...this.#adoption(reference, input.chargeKey),
      final,
    });
    if (answer !== NOTHING) {
      await this.#adopt(body.order_id, input.chargeKey, answer, order && slot ? order : undefined);
      return answer;
    }
    if (!final) throw outcomeUnknown.charge(body.order_id);
    if (order && slot) {
      if (!(await this.#secondLook(order, slot, input.chargeKey, now())))
        throw outcomeUnknown.charge(body.order_id);
      await this.#settleNotDone(order, input.chargeKey, slot.inflight, 'settled_nothing');
    }
    settleAudit(body.order_id, input.chargeKey, 'settled_nothing', { firstLookAt: slot?.nothingAt });
    return notDone(
      input,
      "PayHere's records show no payment for this charge, at two looks a settle interval apart after its settle delay: it was not processed.",
    );
  }

  /**
   * How long after its window a charge PayHere answered pending waits for its notification before
   * PayHere's records decide it (PENDING_CHARGE_LIMIT_SECONDS); a hold, which has no record to
   * read, PayHere's hold lifetime.
   */
  pendingLimitMs(kind: Order['kind']): number {
    return kind === 'authorize' ? HOLD_LIFETIME_MS : this.#config.pendingLimitMs;
  }

  /**
   * A charge PayHere answered pending: its payment's notification usually ends it; past the
   * pending limit without one, PayHere's records decide (a payment no other charge owns: paid;
   * nothing at two looks a settle interval apart: failed, counted for the operator). A hold has no
   * record to read but its notification: past PayHere's hold lifetime without one, it has expired.
   * Still open, it throws OutcomeUnknownError.
   */
  async settlePending(order: Order, deadline: number, now: () => number = Date.now): Promise<void> {
    const slot = order.charge;
    if (order.state !== 'pending' || !slot || slot.inflight || order.amountCents === null) return;
    const key = slot.key;
    if (order.kind === 'authorize') {
      if (now() < slot.until + this.pendingLimitMs(order.kind)) throw outcomeUnknown.hold(order.orderId);
      await this.#record(order, key, outcome('hold_expired'));
      settleAudit(order.orderId, key, 'hold_expired', { paymentId: order.paymentId });
      return;
    }
    const body = bodyOf(order);
    const answer = await this.#payhere.reconcileCharge(body, slot, deadline, {
      ...this.#adoption({ orderId: order.orderId, owner: order.owner }, key),
      final: true,
    });
    if (answer !== NOTHING) {
      await this.#adopt(order.orderId, key, answer, order);
      return;
    }
    if (!(await this.#secondLook(order, slot, key, now()))) throw outcomeUnknown.charge(order.orderId);
    await this.#record(order, key, outcome('pending_expired'));
    countMetric('PendingChargeExpired');
    log.warn("a pending charge PayHere's records never showed is settled as failed", {
      orderId: order.orderId,
      paymentId: order.paymentId,
    });
    settleAudit(order.orderId, key, 'pending_expired', { paymentId: order.paymentId });
  }

  /**
   * An open charge no request will finish (its claim's answer was lost, its Lambda died, the write
   * of its outcome failed, its key's record is gone): settled from PayHere's records as a repeat
   * of its key would be, from the order's own price and the slot's window.
   */
  async settleOpen(
    order: Order,
    deadline: number,
    settleDelayMs: number,
    now: () => number = Date.now,
  ): Promise<ChargeAnswer> {
    const slot = order.charge;
    if (!slot) throw new Error(`order ${order.orderId} holds no charge`);
    const input = {
      actor: { sub: 'settle', role: 'merchant' as const },
      owner: order.owner,
      body: bodyOf(order),
      deadline,
      chargeKey: slot.key,
    };
    return this.settle(input, slot.sentAt, settleDelayMs, now);
  }

  /**
   * PayHere's records show the charge's payment (and perhaps others no charge owns, flagged as
   * possible duplicates): recorded on `order` (when the ledger holds this charge's slot) and audited.
   */
  async #adopt(
    orderId: string,
    key: string,
    answer: Exclude<Awaited<ReturnType<PayHere['reconcileCharge']>>, typeof NOTHING>,
    order: Order | undefined,
  ): Promise<void> {
    const recorded = outcome('records_show_payment', answer.data);
    if (answer.possibleDuplicates?.length) {
      recorded.possibleDuplicates = answer.possibleDuplicates;
      flagDuplicates(orderId, key, recorded.paymentId, answer.possibleDuplicates);
    }
    if (order) await this.#record(order, key, recorded);
    settleAudit(orderId, key, 'records_show_payment', {
      paymentId: recorded.paymentId,
      possibleDuplicates: answer.possibleDuplicates,
    });
  }

  /**
   * Whether this look at PayHere's records, showing nothing, may settle the charge as not done:
   * only a second look, a settle interval after the first (which it notes).
   */
  async #secondLook(order: Order, slot: ChargeSlot, key: string, now: number): Promise<boolean> {
    if (slot.nothingAt === null) {
      await this.#write('note a first look that found nothing', order, () =>
        this.#ledger.noteNothing(order.orderId, key, now),
      );
      return false;
    }
    return now - slot.nothingAt >= this.#config.secondLookMs;
  }

  /**
   * Whose a payment PayHere shows is (the ledger's references), and the conditional write that
   * adopts one for the charge holding `key`.
   */
  #adoption(reference: Reference, key: string): Pick<ChargeAdoption, 'adopt' | 'owner'> {
    return {
      adopt: (payment) => this.#ledger.link('payment', String(payment.payment_id), reference, key),
      owner: async (payment): Promise<PaymentOwner> => {
        const known = await this.#ledger.lookup('payment', String(payment.payment_id));
        if (!known) return 'none';
        return known.orderId === reference.orderId && known.chargeKey === key ? 'this' : 'other';
      },
    };
  }

  /** Settled as not done. A charge whose Lambda died in flight is first recorded as what it was: unknown. */
  async #settleNotDone(
    order: Order,
    chargeKey: string,
    inflight: boolean,
    evidence: 'settled_nothing' | 'hold_expired',
  ): Promise<void> {
    if (inflight) await this.#record(order, chargeKey, outcome('charge_lost'));
    await this.#record(order, chargeKey, outcome(evidence));
    // Settled: the slot is free, whatever a notification reported meanwhile (its report settles on its own).
    if (inflight)
      await this.#ledger.releaseCharge(order.orderId, chargeKey).catch((error: unknown) => {
        log.warn('could not free the slot of a settled charge', {
          orderId: order.orderId,
          error: describeError(error),
        });
      });
  }

  /** docs/contract.md "notify_url": PayHere posts signed results there, so nobody may point it elsewhere. */
  #notifyUrl(requested: string | undefined): { notify_url?: string } {
    if (requested !== undefined) {
      if (!this.#config.notifyUrlOrigins.includes(new URL(requested).origin)) {
        throw notSent(
          new InvalidRequestError([
            { path: 'notify_url', message: 'must point at an origin the merchant allowed for notifications' },
          ]),
        );
      }
      return { notify_url: requested };
    }
    return this.#config.publicBaseUrl ? { notify_url: this.#config.publicBaseUrl + NOTIFY_PATH } : {};
  }

  async #claim(input: ChargeInput, window: { sentAt: number; until: number }): Promise<Order> {
    const { actor, body } = input;
    const price: Price = { items: body.items, currency: body.currency, amountCents: cents(body.amount) };
    const claim: ChargeClaim = {
      orderId: body.order_id,
      owner: input.owner,
      // The merchant decides whether an order is paid or held: a customer cannot turn one into the other.
      kind: body.type === 'AUTHORIZE' ? 'authorize' : 'charge',
      price,
      custom1: body.custom_1 ?? null,
      custom2: body.custom_2 ?? null,
      lineItems: body.itemList ?? null,
      customerDetails: body.customer_details ?? null,
      metadata: body.metadata ?? null,
      slot: { key: input.chargeKey, ...window },
      chargeable: CHARGEABLE,
      // Card testing: an order refuses new charges after too many declined ones (lib/orders/attempts.ts).
      attempts: { window: this.#attempts.current(), limit: this.#config.failedAttempts.count },
      rule:
        actor.role === 'merchant'
          ? 'merchant'
          : this.#config.pricing === 'merchant'
            ? 'customer-priced'
            : 'customer',
    };
    const claimed = await readLedger(() => this.#claimOrRelease(claim));
    if (claimed) return claimed;
    const existing = await readLedger(() => this.#ledger.getOrder(body.order_id));
    // A retry of a claim whose answer was lost meets its own write: the slot is already ours.
    if (existing?.charge?.inflight && existing.charge.key === input.chargeKey) return existing;
    throw notSent(refusal(claim, existing, this.#attempts));
  }

  /**
   * The claim's write. One that failed may have been applied with its answer lost: the slot would
   * be this request's, and nothing will be sent, so it is freed (the settle job's charges end what
   * this cannot).
   */
  async #claimOrRelease(claim: ChargeClaim): Promise<Order | undefined> {
    try {
      return await this.#ledger.claimCharge(claim);
    } catch (error) {
      await this.#ledger.releaseCharge(claim.orderId, claim.slot.key).catch(() => false);
      throw error;
    }
  }

  /**
   * A declined or refused charge counts against its order (card testing), in this window and the
   * next; the counts of windows before this one (`order` as claimed) go with the same write.
   */
  #counted(order: Order, evidence: Evidence, recorded: Recording): Recording {
    if (evidence !== 'charge_declined' && evidence !== 'charge_refused') return recorded;
    return {
      ...recorded,
      failedWindows: this.#attempts.failureWindows(),
      staleFailedWindows: this.#attempts.stale(order.failedAttempts),
    };
  }

  /** Not sent: the order is as it was. Refused by PayHere: failed. Anything else: unknown. */
  async #afterFailure(order: Order, chargeKey: string, error: unknown): Promise<void> {
    if (error instanceof ApiError && error.reach === 'not_sent') {
      await this.#write('release the order of a charge that was not sent', order, () =>
        this.#ledger.releaseCharge(order.orderId, chargeKey),
      );
      return;
    }
    // PayHere answered a refusal (an unknown card, an amount it refuses): nothing was charged.
    const answered = error instanceof ApiError && error.reach === 'answered';
    const evidence = answered ? 'charge_refused' : 'charge_lost';
    await this.#record(order, chargeKey, this.#counted(order, evidence, outcome(evidence)));
  }

  /**
   * The outcome and the ids it gave, written together: they are independent items. The outcome's
   * events (lib/orders/events.ts) go with it: the order's move, and its possible duplicates.
   */
  async #record(order: Order, chargeKey: string, { evidence, ...recorded }: Recording): Promise<void> {
    const reference = { orderId: order.orderId, owner: order.owner };
    const after = { ...order, paymentId: recorded.paymentId ?? order.paymentId };
    // A pending charge stays in the settle job's charges until its limit. An unknown one leaves
    // them: its key's record, kept until it is settled, is the settle job's to settle.
    const outcome: ChargeOutcome = {
      ...recorded,
      events: [orderMoved(after, { to: recorded.state, evidence })],
      ...(recorded.possibleDuplicates?.length
        ? { duplicateEvents: [possibleDuplicates(after, recorded.state, recorded.possibleDuplicates)] }
        : {}),
      ...(recorded.state === 'pending' && recorded.dueAt === undefined
        ? { dueAt: Date.now() + this.pendingLimitMs(order.kind) }
        : {}),
    };
    const { paymentId, authorizationToken } = outcome;
    await Promise.all([
      this.#write('record the outcome of a charge', order, async () => {
        if (await this.#ledger.finishCharge(order.orderId, chargeKey, outcome)) return true;
        // Other evidence settled the order meanwhile (a success PayHere's records showed, a
        // notification): its state stands, and the charge's slot is freed all the same.
        const released = await this.#ledger.releaseCharge(order.orderId, chargeKey);
        if (paymentId && outcome.state === 'succeeded')
          await this.#secondPayment(order.orderId, chargeKey, [
            paymentId,
            ...(outcome.possibleDuplicates ?? []),
          ]);
        return released;
      }),
      paymentId &&
        this.#write('index a charged payment', order, () =>
          this.#ledger.link('payment', paymentId, reference, chargeKey),
        ),
      authorizationToken &&
        this.#write('index a hold', order, () =>
          this.#ledger.link('authorization', authorizationToken, reference),
        ),
    ]);
  }

  /**
   * The charge's payment, where other evidence settled its order with another payment meanwhile
   * (a notification of the app's SDK checkout of the same order, say): the order was paid twice.
   * Its payment stands; the charge's is noted as a possible duplicate, for the merchant to refund.
   */
  async #secondPayment(orderId: string, chargeKey: string, paymentIds: readonly string[]): Promise<void> {
    const now = await this.#ledger.getOrder(orderId);
    if (!now?.paymentId || now.paymentId === paymentIds[0]) return;
    const shown = now.paymentId;
    const second = paymentIds.filter((id) => id !== shown && !now.duplicatePayments.includes(id));
    if (second.length === 0) return;
    await this.#ledger.noteDuplicatePayments(orderId, second, [possibleDuplicates(now, now.state, second)]);
    flagDuplicates(orderId, chargeKey, shown, second);
  }

  /**
   * The money has moved (or may have): a ledger write failing now must not hide PayHere's answer
   * from the caller. It is counted and logged; the order stays in the settle job's charges, which
   * settles it from PayHere's records once the request is over.
   */
  async #write(what: string, order: Order, write: () => Promise<boolean>): Promise<void> {
    try {
      if (!(await write())) log.warn(`the ledger refused to ${what}`, { orderId: order.orderId });
    } catch (error) {
      // The order stays in the settle job's charges, which settles it from PayHere's records.
      countMetric('LedgerWriteFailed');
      log.error(`could not ${what}`, { orderId: order.orderId, error: describeError(error) });
    }
  }
}

/** A charge's answer as its caller sees it: by its status_code (an AUTHORIZE hold may succeed with 3). */
export function chargeResponse(actor: Actor, type: ChargeRequest['type'], { msg, data }: ChargeAnswer) {
  return paymentOutcomeResponse(visibleTo(actor, data), msg, type === 'AUTHORIZE' ? [2, 3] : [2]);
}

function cents(amount: number): number {
  return Math.round(amount * 100);
}

/**
 * What `evidence` moves the order to, with the ids PayHere's `result` gave: a hold's token only for
 * a hold's success (PayHere's samples carry one on payments too; it means nothing there).
 */
/** A charge's outcome, and the evidence that decided it (its events say so). */
type Recording = ChargeOutcome & { evidence: Evidence };

function outcome(evidence: Evidence, result?: ChargeResult, hold = false): Recording {
  const move = chargeMove(evidence);
  const token = hold && typeof result?.authorization_token === 'string' ? result.authorization_token : null;
  return {
    evidence,
    state: move.to,
    from: move.from,
    overReport: move.overReport,
    paymentId: result ? idOf(result.payment_id) : null,
    authorizationToken: move.to === 'succeeded' ? token : null,
  };
}

/** What other evidence settled on the order its charge's outcome is, if any: PayHere's records or a hold's notification. */
function settledByEvidence({ body }: ChargeInput, order: Order): ChargeAnswer | undefined {
  if (order.state !== 'succeeded' && order.state !== 'chargedback') return undefined;
  if (body.type === 'AUTHORIZE') {
    if (!order.authorizationToken) return undefined;
    return {
      msg: 'The gateway did not answer the hold, but its notification shows the amount was held.',
      data: {
        order_id: order.orderId,
        items: body.items,
        currency: order.currency,
        amount: body.amount,
        payment_id: order.paymentId === null ? null : Number(order.paymentId),
        status_code: 3,
        status_message: "Held according to PayHere's notification.",
        authorization_token: order.authorizationToken,
      },
    };
  }
  if (!order.paymentId) return undefined;
  return {
    msg: "The gateway did not answer the charge, but its records show the order's payment.",
    data: {
      order_id: order.orderId,
      items: body.items,
      currency: order.currency,
      amount: body.amount,
      custom_1: body.custom_1 ?? null,
      custom_2: body.custom_2 ?? null,
      payment_id: Number(order.paymentId),
      status_code: 2,
      status_message: "Payment received according to the gateway's records.",
      authorization_token: null,
    },
  };
}

/** A charge settled as not done: answered as a failed payment (402), so the app may try again. */
function notDone({ body }: ChargeInput, reason: string): ChargeAnswer {
  return {
    msg: reason,
    data: {
      order_id: body.order_id,
      items: body.items,
      currency: body.currency,
      amount: body.amount,
      custom_1: body.custom_1 ?? null,
      custom_2: body.custom_2 ?? null,
      payment_id: null,
      status_code: -2,
      status_message: reason,
      authorization_token: null,
    },
  };
}

/** Why an order refused a charge, told so that a customer learns nothing about others' orders. */
function refusal(claim: ChargeClaim, order: Order | undefined, windows: AttemptWindows): ApiError {
  const { orderId } = claim;
  const customer = claim.rule !== 'merchant';
  if (!order || (customer && order.owner !== claim.owner)) {
    if (customer) countRefusal('order', order !== undefined);
    return orderNotFound(orderId)();
  }
  const attempts = claim.attempts;
  const chargeable = CHARGEABLE.includes(order.state) && !order.charge?.inflight;
  if (attempts && chargeable && (order.failedAttempts[attempts.window] ?? 0) >= attempts.limit) {
    countMetric('CardTesting');
    log.warn('an order refused a charge after too many declined ones (card testing?)', { orderId });
    return new CallerRateLimitedError(
      `Order ${orderId} was declined too many times: try again later, or with another card.`,
      windows.retryAfterSeconds(order.failedAttempts, attempts.limit),
    );
  }
  if (claim.rule === 'customer-priced') {
    if (order.kind !== claim.kind) {
      const wanted = claim.kind === 'authorize' ? 'a hold (AUTHORIZE)' : 'a charge (PAYMENT)';
      return new OrderConflictError(`Order ${orderId} is not an order priced for ${wanted}.`, [
        { path: 'type', message: `does not match the order (${order.kind})` },
      ]);
    }
    const errors = (['amount', 'currency', 'items'] as const)
      .filter((field) =>
        field === 'amount'
          ? order.amountCents !== claim.price.amountCents
          : order[field] !== claim.price[field],
      )
      .map((field) => ({ path: field, message: `must equal the order's ${field}` }));
    if (errors.length > 0) {
      return new OrderConflictError(
        `The charge disagrees with the price of order ${orderId}: check ${errors.map((e) => e.path).join(', ')}.`,
        errors,
      );
    }
  }
  return new OrderConflictError(
    `Order ${orderId} already has a successful, pending or unknown payment. ` +
      'To learn what happened to an earlier charge, repeat it with its own Idempotency-Key.',
  );
}

/** Several payments no charge owns match one charge: paid, and possibly twice. Counted, alarmed, audited. */
function flagDuplicates(
  orderId: string,
  chargeKey: string,
  paymentId: string | null | undefined,
  possibleDuplicates: readonly string[],
): void {
  countMetric('PossibleDuplicateCharge');
  log.warn('possible duplicate charge: the merchant must check the order and refund what was paid twice', {
    orderId,
    paymentId,
    possibleDuplicates,
  });
  audit({
    route: 'settle',
    outcome: 'done',
    replayed: false,
    orderId,
    ...(paymentId ? { paymentId } : {}),
    chargeKey,
    evidence: 'possible_duplicate',
    possibleDuplicates,
  });
}

/** Every settlement of a charge from PayHere's records writes its decision and evidence to the audit trail. */
function settleAudit(
  orderId: string,
  chargeKey: string,
  evidence: Evidence,
  facts: Record<string, unknown> = {},
): void {
  audit({
    route: 'settle',
    outcome: evidence === 'records_show_payment' ? 'done' : 'declined',
    replayed: false,
    orderId,
    chargeKey,
    evidence,
    ...facts,
  });
}

/** What the order's own price says its charge was, for reading PayHere's records of it. */
function bodyOf(order: Order): ChargeRequest {
  return {
    type: order.kind === 'authorize' ? 'AUTHORIZE' : 'PAYMENT',
    order_id: order.orderId,
    items: order.items,
    currency: order.currency,
    amount: (order.amountCents ?? 0) / 100,
    customer_token: '',
    ...(order.custom1 !== null ? { custom_1: order.custom1 } : {}),
    ...(order.custom2 !== null ? { custom_2: order.custom2 } : {}),
  } as ChargeRequest;
}
