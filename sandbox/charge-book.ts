// Charges on saved cards: made at once, late (the processLate fault), or left pending until a test
// decides them, as PayHere's asynchronous charges are. What PayHere would report goes to `notify`.
import { type Result, refused } from './control-requests.ts';
import { ACCEPTED_CURRENCIES, centsOf, isValidAmount } from './money.ts';
import type { Notification } from './notifications.ts';
import { failed, ok, type PaymentBook } from './payment-book.ts';
import type { Envelope, ItemLine, Payer } from './records.ts';
import { SEED, type SeedData } from './seed.ts';
import { CHARGE_AUTHORIZED, CHARGE_STATUS, type Status } from './statuses.ts';
import type { ChargeRequest } from './validate.ts';

/** A charge PayHere took and finishes at `dueAt` (the sandbox's clock). */
interface LateCharge {
  dueAt: number;
  request: ChargeRequest;
}

/** A charge answered pending (status_code 0), waiting for PayHere's decision; search does not show it. */
interface PendingCharge {
  paymentId: number;
  request: ChargeRequest;
  payer: Payer;
  /** When PayHere took it (the sandbox's clock): the payment's date if it succeeds. */
  at: number;
}

/** A pending charge as the control API lists it. */
export interface PendingChargeView {
  order_id: string;
  payment_id: number;
  type: ChargeRequest['type'];
  amount: number;
  currency: string;
  date: string;
  notify_url: string | null;
}

export type PendingOutcome = 'success' | 'failure';

/** What deciding a pending charge did. */
export interface PendingDecision {
  order_id: string;
  payment_id: number;
  outcome: PendingOutcome;
  status_code: number;
  /** The hold's token when a pending AUTHORIZE succeeds; else null. */
  authorization_token: string | null;
}

export class ChargeBook {
  readonly #now: () => number;
  readonly #data: SeedData;
  readonly #payments: PaymentBook;
  readonly #notify: (notification: Notification) => void;
  #late: LateCharge[] = [];
  readonly #pending = new Map<number, PendingCharge>();

  constructor(
    now: () => number,
    data: SeedData,
    payments: PaymentBook,
    notify: (notification: Notification) => void,
  ) {
    this.#now = now;
    this.#data = data;
    this.#payments = payments;
    this.#notify = notify;
  }

  /** `at`: when PayHere made it (the sandbox's clock), which dates the payment; default now. */
  charge(request: ChargeRequest, at = this.#now()): Envelope {
    // A refusal PayHere words its own way (top-level -2, no data): nothing is processed.
    if (request.customer_token === SEED.customerTokens.authenticationFails)
      return failed('Customer authentication failed', -2);
    const payer = this.#data.payers.get(request.customer_token);
    if (!payer) return failed('Invalid token');
    if (!ACCEPTED_CURRENCIES.has(request.currency)) return failed('Invalid currency');
    if (!isValidAmount(request.amount)) return failed('Invalid amount');

    const paymentId = this.#payments.newPaymentId();
    const { status, authorizationToken } = this.#conclude(
      { paymentId, request, payer, at },
      payer.outcome,
      request.notify_url ?? null,
    );
    return ok('Automatic payment charged successfully', {
      order_id: request.order_id,
      items: request.items,
      currency: request.currency,
      amount: request.amount,
      custom_1: request.custom_1 ?? null,
      custom_2: request.custom_2 ?? null,
      payment_id: paymentId,
      status_code: status.code,
      status_message: status.message,
      md5sig: this.#payments.sign(request.order_id, request.amount, request.currency, status.code),
      authorization_token: authorizationToken,
    });
  }

  /**
   * PayHere takes the charge now and finishes it `ms` later: until processDue() runs it, nothing is
   * recorded or notified. The answer is never sent (the fault resets the connection).
   */
  chargeLate(request: ChargeRequest, ms: number): Envelope {
    this.#late.push({ dueAt: this.#now() + ms, request });
    return ok('Charge accepted for processing');
  }

  /** Finishes the late charges due by now, in the order they fall due, each as made then; how many. */
  processDue(): number {
    const now = this.#now();
    const due = this.#late.filter((late) => late.dueAt <= now).sort((a, b) => a.dueAt - b.dueAt);
    this.#late = this.#late.filter((late) => late.dueAt > now);
    for (const late of due) this.charge(late.request, late.dueAt);
    return due.length;
  }

  /** When the next late charge falls due (the sandbox's clock), or undefined when none waits. */
  nextDueAt(): number | undefined {
    return this.#late.length === 0 ? undefined : Math.min(...this.#late.map((late) => late.dueAt));
  }

  /** Late charges not yet due. */
  lateCharges(): number {
    return this.#late.length;
  }

  /** The charges still pending, oldest first. */
  pendingCharges(): PendingChargeView[] {
    return [...this.#pending.values()].map(({ paymentId, request, at }) => ({
      order_id: request.order_id,
      payment_id: paymentId,
      type: request.type,
      amount: request.amount,
      currency: request.currency,
      date: this.#payments.date(at),
      notify_url: request.notify_url ?? null,
    }));
  }

  /**
   * PayHere decides a pending charge of the order (the one with `paymentId` when given; it must be
   * the only one otherwise): a success is made as the charge would have been (a RECEIVED payment
   * dated when PayHere took the charge, or for AUTHORIZE a hold), a failure records nothing; either
   * is notified, for that payment id, to `notifyUrl` or else the charge's notify_url.
   */
  decidePending(
    orderId: string,
    outcome: PendingOutcome,
    paymentId: number | undefined,
    notifyUrl: string | undefined,
  ): Result<PendingDecision> {
    const candidates = [...this.#pending.values()].filter(
      (pending) =>
        pending.request.order_id === orderId && (paymentId === undefined || pending.paymentId === paymentId),
    );
    const [pending] = candidates;
    if (!pending) {
      const which = paymentId === undefined ? '' : ` with payment_id ${paymentId}`;
      return refused(`No pending charge of order ${orderId}${which}`, 404);
    }
    if (candidates.length > 1) {
      return refused(`Order ${orderId} has ${candidates.length} pending charges: name the payment_id`);
    }
    this.#pending.delete(pending.paymentId);
    const { status, authorizationToken } = this.#conclude(
      pending,
      outcome === 'success' ? 'success' : 'declined',
      notifyUrl ?? pending.request.notify_url ?? null,
    );
    return {
      ok: true,
      value: {
        order_id: orderId,
        payment_id: pending.paymentId,
        outcome,
        status_code: status.code,
        authorization_token: authorizationToken,
      },
    };
  }

  /** Makes what a charge ending this way makes, and queues its notification when there is a URL. */
  #conclude(
    charge: PendingCharge,
    outcome: Payer['outcome'],
    notifyUrl: string | null,
  ): { status: Status; authorizationToken: string | null } {
    const { paymentId, request, payer, at } = charge;
    const itemLines = request.itemList?.map(
      (item): ItemLine => ({
        name: item.name,
        quantity: item.quantity,
        currency: request.currency,
        unit_price: item.unit_amount,
        total_price: centsOf(item.quantity * item.unit_amount) / 100,
      }),
    );
    const authorize = request.type === 'AUTHORIZE' && outcome === 'success';
    const status = authorize ? CHARGE_AUTHORIZED : CHARGE_STATUS[outcome];
    let authorizationToken: string | null = null;

    if (authorize) {
      authorizationToken = this.#payments.addAuthorization({
        paymentId,
        orderId: request.order_id,
        items: request.items,
        currency: request.currency,
        amount: request.amount,
        custom1: request.custom_1 ?? null,
        custom2: request.custom_2 ?? null,
        itemLines: itemLines ?? null,
        payer,
      });
    } else if (outcome === 'success') {
      this.#payments.addPayment({
        paymentId,
        orderId: request.order_id,
        description: request.items,
        currency: request.currency,
        amount: request.amount,
        payer,
        items: itemLines ?? null,
        at,
      });
    } else if (outcome === 'pending') {
      this.#pending.set(paymentId, charge);
    }

    if (notifyUrl) {
      this.#notify({
        url: notifyUrl,
        orderId: request.order_id,
        paymentId,
        amount: request.amount,
        currency: request.currency,
        statusCode: status.code,
        statusMessage: status.message,
        custom1: request.custom_1 ?? null,
        custom2: request.custom_2 ?? null,
        payer,
        ...(authorizationToken === null ? {} : { authorizationToken, capturedAmount: 0 }),
      });
    }
    return { status, authorizationToken };
  }
}
