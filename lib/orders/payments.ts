import { NotFoundError } from '../envelope/errors.ts';
import type { Result } from '../gateway/payhere.ts';
import type { PaymentRecord } from '../gateway/schemas.ts';
import type { Order, OrderKind, OrderState } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import type { ReadInvalidation } from '../reads/invalidation.ts';
import { PaymentsAnswer, type Served, type SharedReads } from '../reads/shared-reads.ts';
import { CLOCK_SKEW_MS, MAX_ANSWER_BYTES } from '../reads/store.ts';
import { type Actor, Ownership } from './access.ts';

/**
 * States in which PayHere's record of an order's payments changes only in ways the service sees:
 * a succeeded payment is refunded through the service (which drops the copy: `refunded`) or charged
 * back (PayHere notifies; the state moves to `chargedback`, and a copy is only good for the state
 * it was kept in); a charged-back one stays so. Not `failed` or `cancelled`: the order may be
 * charged again, and PayHere shows no payment for them anyway (a not-found, shared for its window only).
 * A refund made in PayHere's own portal bypasses the service: docs/budget.md "PayHere's budget" says so.
 */
export const FINAL_STATES: readonly OrderState[] = ['succeeded', 'chargedback'];

/**
 * One-off payments only: a subscription's order gains a payment at every installment while its
 * state stays `succeeded`, and a hold's order gains one when it is captured.
 */
const COPIED_KINDS: readonly OrderKind[] = ['payment', 'charge'];

const orderNotFound = (orderId: string) => () =>
  new NotFoundError(`No payments were found for order ${orderId}.`);

type Payments = Result<PaymentRecord[]>;

/**
 * An order's payments for retrievePayments (docs/contract.md "PayHere's budget"): shared for 10 s between
 * every caller; and for a customer's own order in a final state, answered from a copy kept on the
 * order's ledger item, without PayHere, for as long as the state stays what it was.
 */
export class OrderPayments {
  readonly #reads: SharedReads;
  readonly #ledger: LedgerStore;
  readonly #invalidation: ReadInvalidation;
  readonly #ownership: Ownership;

  constructor(options: { reads: SharedReads; ledger: LedgerStore; invalidation: ReadInvalidation }) {
    this.#reads = options.reads;
    this.#ledger = options.ledger;
    this.#invalidation = options.invalidation;
    this.#ownership = new Ownership(options.ledger);
  }

  /** The payments of `orderId` as `actor` may ask for them (a customer: its own order, else 404). Unfiltered. */
  async read(actor: Actor, orderId: string, deadline: number): Promise<Served<Payments>> {
    // The merchant reads no ledger item for it, as before: the shared answer is enough.
    if (actor.role === 'merchant') return this.#reads.paymentsOfOrder(orderId, deadline);
    const order = await this.#ownership.order(actor, orderId, orderNotFound(orderId));
    // Read at most once, only where a copy would be served or kept.
    let unrefunded: Promise<boolean> | undefined;
    const noRefund = () => (unrefunded ??= this.#unrefunded(order));
    const kept = keptPayments(order);
    if (kept && (await noRefund())) return kept;
    const served = await this.#reads.paymentsOfOrder(orderId, deadline);
    if (!served.shared && !served.answer.pending && copyable(order, served.answer) && (await noRefund()))
      await this.#keep(order, served);
    return served;
  }

  /**
   * Whether the order's payment has no refund through the service, taken or made: a refund's
   * status moves at PayHere without a word to the service (REFUND REQUESTED, then REFUNDED), and a
   * refund takes its slot before it is sent, so a copy is never served once one may be under way,
   * even when the refund's drop of the copy failed. A read that fails serves no copy.
   */
  async #unrefunded(order: Order): Promise<boolean> {
    try {
      const refunds = await this.#ledger.paymentRefunds(order.paymentId!);
      return refunds.inflight === null && refunds.accepted.length === 0 && refunds.undetermined === 0;
    } catch {
      return false;
    }
  }

  /**
   * A refund through the service changed the order's payments: the shared answer and the copy go,
   * and for an installment's order, its subscription's shared payments too.
   */
  async refunded(orderId: string | undefined): Promise<void> {
    if (orderId === undefined) return;
    await Promise.all([
      this.#invalidation.forgetOrder(orderId),
      this.#ledger.dropPayments(orderId).then(
        (order) =>
          order?.subscriptionId ? this.#invalidation.forgetSubscription(order.subscriptionId) : undefined,
        (error: unknown) => {
          // The ledger answers reads too: an order whose copy stayed is logged for the operator.
          log.error('could not drop the kept payments of a refunded order', {
            orderId,
            error: describeError(error),
          });
        },
      ),
    ]);
  }

  /** Only while the order is still in the state it was read in; a failure costs the next read a PayHere call, nothing more. */
  async #keep(order: Order, served: Served<Payments>): Promise<void> {
    const { msg, data } = served.answer;
    const answer = JSON.stringify({ msg, data });
    if (Buffer.byteLength(answer, 'utf8') > MAX_ANSWER_BYTES) return;
    try {
      await this.#ledger.keepPayments(
        order.orderId,
        { state: order.state, fetchedAt: served.fetchedAt, answer },
        served.fetchedAt - CLOCK_SKEW_MS,
      );
    } catch (error) {
      log.warn('could not keep the payments of a final order', {
        orderId: order.orderId,
        error: describeError(error),
      });
    }
  }
}

/**
 * A copy is kept only of what the service would see change: a one-off order in a final state whose
 * payment is linked on the ledger (a refund through the service finds the order by that id, and
 * drops the copy), with no second payment noted, and an answer that is exactly that payment,
 * received or charged back. An order the notification left
 * unlinked (PayHere did not confirm the payment id in time), or a search that found more than the
 * order's own payment (PayHere does not hold order ids unique), is asked of PayHere every time.
 */
function copyable(order: Order, answer: Payments): boolean {
  return (
    COPIED_KINDS.includes(order.kind) &&
    FINAL_STATES.includes(order.state) &&
    order.paymentId !== null &&
    // A second payment PayHere took for the order: the customer sees PayHere's search, both.
    order.duplicatePayments.length === 0 &&
    answer.data.length === 1 &&
    String(answer.data[0]!.payment_id) === order.paymentId &&
    // Statuses that move without the service (a refund's) are never kept.
    ['RECEIVED', 'CHARGEBACKED'].includes(answer.data[0]!.status)
  );
}

/** The copy kept on the order, if it is still good: kept in the order's current state, and copyable. */
function keptPayments(order: Order): Served<Payments> | undefined {
  const copy = order.paymentsCopy;
  if (!copy || copy.state !== order.state) return undefined;
  const parsed = PaymentsAnswer.safeParse(parseJson(copy.answer));
  if (!parsed.success || !copyable(order, parsed.data)) return undefined;
  return { answer: parsed.data, fetchedAt: copy.fetchedAt, shared: true };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
