import type { APIGatewayProxyResult } from 'aws-lambda';
import { ok } from '../envelope/envelope.ts';
import { ApiError, NotFoundError } from '../envelope/errors.ts';
import type { PayHere, RefundBody } from '../gateway/payhere.ts';
import { recordKey } from '../idempotency/idempotent.ts';
import type { IdempotencyRecord } from '../idempotency/store.ts';
import { thenForget } from '../reads/invalidation.ts';
import { type RefundRequest, refundUpstreamBody } from '../schemas/refund.ts';
import type { Actor, Ownership } from './access.ts';
import type { Holds } from './holds.ts';
import { type MoneySubject, type SettleDeps, settleRefund } from './money-settlement.ts';
import type { OrderPayments } from './payments.ts';
import { failedRefundEvidence } from './refund-evidence.ts';
import type { RefundRecords } from './refund-records.ts';
import { REFUND_OPERATION, type RefundHold, RefundSlots, recordRefundOutcome } from './refund-slots.ts';

/** A refund or release as the route hands it over. */
export interface RefundInput {
  caller: Actor;
  body: RefundRequest;
  deadline: number;
  /** The request's Idempotency-Key: a payment's refund slot is held under its record key. */
  idempotencyKey?: string;
}

type RefundSubject = Extract<MoneySubject, { operation: 'refund' }>;

/**
 * Refunding a payment, fully or partly, or releasing a hold (POST /gateway/api/payments/refund):
 * the customer's own only (else 404); what PayHere accepted drops the order's shared payments and
 * its ledger copy, and a release proves the hold's token; a lost answer is settled from the
 * payment's status. One refund of a payment is in flight at a time (refund-slots.ts), and one above
 * what is left of the payment is refused before PayHere (refund-records.ts).
 */
export class Refunds {
  readonly #payhere: PayHere;
  readonly #ownership: Ownership;
  readonly #holds: Holds;
  readonly #payments: OrderPayments;
  readonly #settling: SettleDeps;
  readonly #slots: RefundSlots;
  readonly #balances: RefundRecords;

  constructor(options: {
    payhere: PayHere;
    ownership: Ownership;
    holds: Holds;
    payments: OrderPayments;
    settling: SettleDeps;
    /** The idempotency records: whether the refund holding a payment's slot can still be running. */
    records: { get(key: string): Promise<IdempotencyRecord | undefined> };
    /** What is left of a payment to refund: a refund above it is refused before PayHere. */
    balances: RefundRecords;
  }) {
    this.#balances = options.balances;
    this.#payhere = options.payhere;
    this.#ownership = options.ownership;
    this.#holds = options.holds;
    this.#payments = options.payments;
    this.#settling = options.settling;
    this.#slots = new RefundSlots({
      ledger: options.settling.ledger,
      payhere: options.payhere,
      records: options.records,
    });
  }

  /** What the settle job settles an unknown refund with. */
  subject({ caller, body }: RefundInput): RefundSubject {
    return { operation: 'refund', role: caller.role, body: refundUpstreamBody(body) };
  }

  async refund(request: RefundInput): Promise<APIGatewayProxyResult> {
    const orderId = await this.#refundedOrder(request);
    const hold = holdOf(request);
    if (hold) {
      await this.#slots.take(request.caller, hold, request.deadline);
      try {
        // With the slot held no other refund of the payment is sent: what is left cannot shrink meanwhile.
        await this.#balances.requireLeft(hold.paymentId, hold.amountCents, orderId);
      } catch (error) {
        await recordRefundOutcome(this.#settling.ledger, hold, 'refund_not_sent');
        throw error;
      }
    }
    const { msg, data } = await thenForget(
      () => this.#sent(refundUpstreamBody(request.body), request.deadline, orderId, hold),
      // The merchant's refund looks its order up only now, after PayHere answered.
      async (refunded) => {
        const order = orderId ?? (await this.#refundedOrder(request, true).catch(() => undefined));
        const token = request.body.authorization_token;
        // A release PayHere accepted proves the hold's token, if it was only a notification's word.
        await Promise.all([
          this.#payments.refunded(order),
          refunded && token && this.#holds.proven(order, token, 'released'),
        ]);
      },
    );
    return ok(msg, data);
  }

  /** A lost answer, repeated: settled from the ledger and the payment's status (lib/orders/money-settlement.ts). */
  async settle(request: RefundInput, startedAt: number): Promise<APIGatewayProxyResult> {
    const subject = { ...this.subject(request), orderId: await this.#refundedOrder(request, true) };
    const key = recordKey(REFUND_OPERATION, request.caller.sub, request.idempotencyKey!);
    return settleRefund(this.#settling, subject, { key, startedAt }, request.deadline);
  }

  /** Send the refund; what PayHere's answer (or its absence) says of it frees the payment's slot or keeps it. */
  async #sent(body: RefundBody, deadline: number, orderId: string | undefined, hold: RefundHold | undefined) {
    const ledger = this.#settling.ledger;
    let answer: Awaited<ReturnType<PayHere['refund']>>;
    try {
      answer = await this.#payhere.refund(body, deadline, orderId);
    } catch (error) {
      const reach = error instanceof ApiError ? error.reach : undefined;
      if (hold) await recordRefundOutcome(ledger, hold, failedRefundEvidence(reach));
      throw error;
    }
    if (hold) await recordRefundOutcome(ledger, hold, 'refund_accepted', answer.data.refund_id);
    return answer;
  }

  /**
   * The refunded payment's or released hold's order: the customer's own (else 404). The merchant's
   * is looked up only to settle a lost answer (`always`): a first attempt pays no read for it.
   */
  async #refundedOrder({ body, caller }: RefundInput, always = false): Promise<string | undefined> {
    const upstream = refundUpstreamBody(body);
    const reference =
      'payment_id' in upstream
        ? await this.#ownership.reference(
            caller,
            'payment',
            String(upstream.payment_id),
            () => new NotFoundError(`Payment ${upstream.payment_id} was not found.`),
            always,
          )
        : await this.#ownership.reference(
            caller,
            'authorization',
            upstream.authorization_token,
            () => new NotFoundError('The authorization was not found.'),
            always,
          );
    return reference?.orderId;
  }
}

/** A payment refund's hold on its payment's slot; a hold's release takes none (PayHere refuses a second one). */
function holdOf(request: RefundInput): RefundHold | undefined {
  const upstream = refundUpstreamBody(request.body);
  if (!('payment_id' in upstream)) return undefined;
  return {
    paymentId: String(upstream.payment_id),
    key: recordKey(REFUND_OPERATION, request.caller.sub, request.idempotencyKey!),
    amountCents: upstream.amount === undefined ? null : Math.round(upstream.amount * 100),
    by: request.caller.sub,
  };
}
