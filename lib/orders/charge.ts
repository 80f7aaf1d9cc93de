import {
  ApiError,
  InvalidRequestError,
  NotFoundError,
  notSent,
  OrderConflictError,
} from '../envelope/errors.ts';
import type { PayHere } from '../gateway/payhere.ts';
import { chargeDeadline } from '../gateway/payhere.ts';
import { type ChargeResult, idOf, statusCodeOf } from '../gateway/schemas.ts';
import type { ChargeClaim, ChargeOutcome, Order, Price } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { forgetWithin, type ReadInvalidation } from '../reads/invalidation.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import { type Actor, countRefusal, Ownership, readLedger } from './access.ts';
import { NOTIFY_PATH, type OrdersConfig } from './config.ts';
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

const TOKEN_NOT_FOUND = () => new NotFoundError('The customer token was not found.');
const orderNotFound = (orderId: string) => () => new NotFoundError(`Order ${orderId} was not found.`);

/**
 * A charge of an order (SPEC.md "Prices", "One payment per order", "notify_url"): who may charge
 * what, at which price, at most one successful, pending or unknown payment per order, and the
 * ledger told what PayHere answered. Refusals before sending are marked not sent, so the request's
 * Idempotency-Key is released.
 */
export class Charging {
  readonly #payhere: PayHere;
  readonly #ledger: LedgerStore;
  readonly #ownership: Ownership;
  readonly #config: OrdersConfig;
  readonly #invalidation: ReadInvalidation | undefined;

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
  }

  async charge(input: ChargeInput): Promise<ChargeAnswer> {
    const { actor, body } = input;
    const upstream = { ...body, ...this.#notifyUrl(body.notify_url) };
    // A customer charges only a card it saved itself (a pre-approval the ledger recorded for it).
    await this.#ownership.require(actor, 'customer_token', body.customer_token, TOKEN_NOT_FOUND);
    const window = { sentAt: Date.now(), until: chargeDeadline(input.deadline) };
    const order = await this.#claim(input, window);
    const reference = { orderId: order.orderId, owner: order.owner };
    let answer: ChargeAnswer;
    try {
      answer = await this.#payhere.charge(upstream, input.deadline, {
        window,
        adopt: (payment) =>
          this.#ledger.link('payment', String(payment.payment_id), reference, input.chargeKey),
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
    await this.#record(order, input.chargeKey, outcome(chargeEvidence(code, hold), answer.data, hold));
    return answer;
  }

  /**
   * A repeat of a charge whose outcome is unknown: settled from the order's payments within the
   * window the ledger kept for it, never sent again.
   */
  async reconcile(input: ChargeInput, startedAt: number): Promise<ChargeAnswer> {
    const order = await readLedger(() => this.#ledger.getOrder(input.body.order_id));
    const slot = order?.charge?.key === input.chargeKey ? order.charge : undefined;
    // Without the ledger's window (an order it never recorded), the longest a request's upstream work can last.
    const window = slot ?? { sentAt: startedAt, until: startedAt + MAX_UPSTREAM_MS };
    const reference = { orderId: input.body.order_id, owner: order?.owner ?? input.owner };
    // A hold never shows in the order's payments; PayHere's notification of it does, in the ledger.
    if (input.body.type === 'AUTHORIZE' && order?.state === 'succeeded' && order.authorizationToken) {
      return {
        msg: 'The gateway did not answer the hold, but its notification shows the amount was held.',
        data: {
          order_id: order.orderId,
          items: input.body.items,
          currency: order.currency,
          amount: input.body.amount,
          payment_id: order.paymentId === null ? null : Number(order.paymentId),
          status_code: 3,
          status_message: "Held according to PayHere's notification.",
          authorization_token: order.authorizationToken,
        },
      };
    }
    const answer = await this.#payhere.reconcileCharge(input.body, window, input.deadline, (payment) =>
      this.#ledger.link('payment', String(payment.payment_id), reference, input.chargeKey),
    );
    // PayHere's records show the charge's payment.
    if (order) await this.#record(order, input.chargeKey, outcome('records_show_payment', answer.data));
    return answer;
  }

  /** SPEC.md: PayHere posts signed results to notify_url, so nobody may point it elsewhere. */
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
      slot: { key: input.chargeKey, ...window },
      chargeable: CHARGEABLE,
      rule:
        actor.role === 'merchant'
          ? 'merchant'
          : this.#config.pricing === 'merchant'
            ? 'customer-priced'
            : 'customer',
    };
    const claimed = await readLedger(() => this.#ledger.claimCharge(claim));
    if (claimed) return claimed;
    const existing = await readLedger(() => this.#ledger.getOrder(body.order_id));
    throw notSent(refusal(claim, existing));
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
    await this.#record(order, chargeKey, outcome(answered ? 'charge_refused' : 'charge_lost'));
  }

  /** The outcome and the ids it gave, written together: they are independent items. */
  async #record(order: Order, chargeKey: string, outcome: ChargeOutcome): Promise<void> {
    const reference = { orderId: order.orderId, owner: order.owner };
    const { paymentId, authorizationToken } = outcome;
    await Promise.all([
      this.#write('record the outcome of a charge', order, () =>
        this.#ledger.finishCharge(order.orderId, chargeKey, outcome),
      ),
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
   * The money has moved (or may have): a ledger write failing now must not hide PayHere's answer
   * from the caller. It is logged for the operator; the order stays blocked for new charges.
   */
  async #write(what: string, order: Order, write: () => Promise<boolean>): Promise<void> {
    try {
      if (!(await write())) log.warn(`the ledger refused to ${what}`, { orderId: order.orderId });
    } catch (error) {
      log.error(`could not ${what}`, { orderId: order.orderId, error: describeError(error) });
    }
  }
}

function cents(amount: number): number {
  return Math.round(amount * 100);
}

/**
 * What `evidence` moves the order to, with the ids PayHere's `result` gave: a hold's token only for
 * a hold's success (PayHere's samples carry one on payments too; it means nothing there).
 */
function outcome(evidence: Evidence, result?: ChargeResult, hold = false): ChargeOutcome {
  const move = chargeMove(evidence);
  const token = hold && typeof result?.authorization_token === 'string' ? result.authorization_token : null;
  return {
    state: move.to,
    from: move.from,
    overReport: move.overReport,
    paymentId: result ? idOf(result.payment_id) : null,
    authorizationToken: move.to === 'succeeded' ? token : null,
  };
}

/** Why an order refused a charge, told so that a customer learns nothing about others' orders. */
function refusal(claim: ChargeClaim, order: Order | undefined): ApiError {
  const { orderId } = claim;
  const customer = claim.rule !== 'merchant';
  if (!order || (customer && order.owner !== claim.owner)) {
    if (customer) countRefusal('order', order !== undefined);
    return orderNotFound(orderId)();
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
