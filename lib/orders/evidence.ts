import type { Order, OrderKind, OrderMove, OrderState } from '../ledger/model.ts';
import { orderMoved } from './events.ts';

/**
 * Which evidence moves an order from which state to which (docs/contract.md "Checkouts and notifications",
 * "The ledger"): the one place that decides. The stores persist a decision with a write conditional
 * on the state it was made from; they never decide.
 *
 * Evidence is what PayHere itself said, and how far it can be trusted:
 * - `charge_*`: PayHere's own, authenticated answer to a charge this service sent (or its refusal,
 *   or no usable answer at all: `charge_lost`);
 * - `records_*`: PayHere's own records, read by the service: a payment of the order (its id,
 *   amount, currency, a received status), or the order's subscription on the order's terms;
 * - `settled_nothing`, `report_unconfirmed`, `hold_expired`, `pending_expired`: the settle job (or a
 *   repeat of the key, or a read of the order) after the settle delay: PayHere's records show
 *   nothing for an unknown charge (at two looks a settle interval apart), or for a reported
 *   success; a hold no notification confirmed within PayHere's hold lifetime; a charge PayHere
 *   answered pending whose payment its records still do not show after the pending limit;
 * - `notified_*`: a signed notification. Its signature covers only the merchant, order, amount,
 *   currency and status code, and anyone holding one genuine notification can replay it late: a
 *   notification never reopens a charge (moves it to a chargeable state once a charge through the
 *   service recorded a state, or out of `unknown`), and a success is only a report until PayHere's
 *   records show it, except for the flows whose only record is the notification (a pre-approval's
 *   customer token, bound to its owner; a hold's authorization token, shown unverified). The one
 *   exception: a failure notification naming the very payment a charge through the service left
 *   pending (`notified_charge_failed`) ends that charge, and only it.
 */
export type Evidence =
  | 'charge_succeeded'
  | 'charge_pending'
  | 'charge_declined'
  | 'charge_cancelled'
  | 'charge_refused'
  | 'charge_lost'
  | 'records_show_payment'
  | 'records_show_subscription'
  | 'settled_nothing'
  | 'report_unconfirmed'
  | 'hold_expired'
  | 'pending_expired'
  | 'notified_token'
  | 'notified_success'
  | 'notified_pending'
  | 'notified_failed'
  | 'notified_charge_failed'
  | 'notified_cancelled'
  | 'notified_chargeback';

interface Rule {
  to: OrderState;
  /** The states it may move the order from. */
  from: readonly OrderState[];
  /** The kinds of order it applies to (all when absent). */
  kinds?: readonly OrderKind[];
  /** Not once a charge through the service recorded a state: only that charge's evidence settles it. */
  notAfterCharge?: true;
  /** Not over a success PayHere reported and its records do not show yet: it may still show. */
  notOverReport?: true;
  /** Only about the payment the charge through the service recorded (the evidence names its id). */
  chargePayment?: true;
}

const PAID: readonly OrderKind[] = ['payment', 'charge'];
/** Where a charge through the service starts from: the states in which an order may be charged. */
export const CHARGEABLE: readonly OrderState[] = ['created', 'failed', 'cancelled'];

export const TRANSITIONS: Readonly<Record<Evidence, Rule>> = {
  // Over a notification's report too: PayHere answered this very charge.
  charge_succeeded: { to: 'succeeded', from: [...CHARGEABLE, 'pending', 'unknown'] },
  charge_pending: { to: 'pending', from: [...CHARGEABLE, 'unknown'] },
  // Never over what a notification reported meanwhile (a success, or a payment PayHere holds).
  charge_declined: { to: 'failed', from: CHARGEABLE, notOverReport: true },
  charge_cancelled: { to: 'cancelled', from: CHARGEABLE, notOverReport: true },
  charge_refused: { to: 'failed', from: CHARGEABLE, notOverReport: true },
  charge_lost: { to: 'unknown', from: CHARGEABLE, notOverReport: true },
  records_show_payment: { to: 'succeeded', from: [...CHARGEABLE, 'pending', 'unknown'], kinds: PAID },
  records_show_subscription: { to: 'succeeded', from: [...CHARGEABLE, 'pending'], kinds: ['recurring'] },
  // A report a notification left meanwhile is settled on its own (report_unconfirmed), not with the charge.
  settled_nothing: { to: 'failed', from: ['unknown'], notOverReport: true },
  report_unconfirmed: { to: 'failed', from: ['pending'], kinds: [...PAID, 'recurring'] },
  // A hold whose outcome is unknown, or PayHere answered pending, that no notification confirmed
  // within PayHere's hold lifetime: PayHere has released it, whatever it was.
  hold_expired: { to: 'cancelled', from: ['unknown', 'pending'], kinds: ['authorize'] },
  pending_expired: { to: 'failed', from: ['pending'], kinds: PAID, notOverReport: true },
  // A pre-approval's customer token and a hold's authorization token have no record at PayHere
  // but the notification: the token is bound to its owner (a hold's shown unverified).
  notified_token: {
    to: 'succeeded',
    from: [...CHARGEABLE, 'pending', 'unknown'],
    kinds: ['preapproval', 'authorize'],
  },
  // A payment's or a subscription's success PayHere's records do not show yet: reported, pending.
  notified_success: {
    to: 'pending',
    from: [...CHARGEABLE, 'pending', 'unknown'],
    kinds: [...PAID, 'recurring'],
  },
  notified_pending: { to: 'pending', from: ['created'], notAfterCharge: true },
  notified_failed: { to: 'failed', from: ['created', 'pending'], notAfterCharge: true, notOverReport: true },
  // Signed by PayHere for the payment id its answer to the charge gave: a replay of it can only
  // fail that payment's pending charge, never a later one (a new charge records a new payment id).
  notified_charge_failed: {
    to: 'failed',
    from: ['pending'],
    kinds: [...PAID, 'authorize'],
    chargePayment: true,
    notOverReport: true,
  },
  notified_cancelled: {
    to: 'cancelled',
    from: ['created', 'pending'],
    notAfterCharge: true,
    notOverReport: true,
  },
  notified_chargeback: { to: 'chargedback', from: ['succeeded'] },
};

/** Why evidence moved nothing. */
export type Refusal = 'state' | 'kind' | 'charged' | 'reported' | 'payment';

export type Decision = { to: OrderState; from: OrderState } | { refused: Refusal };

/** What a decision needs to know of the order. */
export type OrderFacts = Pick<Order, 'state' | 'kind' | 'charge' | 'reportedAt'> &
  Partial<Pick<Order, 'paymentId'>>;

/**
 * What `evidence` does to `order`: the state to move it to, from the state it was read in (a write
 * conditional on that state persists it), or why it moves nothing. Evidence for the state the
 * order is already in decides `to === from`: nothing to move, but nothing refused either.
 * `paymentId`: the payment the evidence is about, where it names one.
 */
export function decide(order: OrderFacts, evidence: Evidence, paymentId?: string | null): Decision {
  const rule = TRANSITIONS[evidence];
  if (rule.kinds && !rule.kinds.includes(order.kind)) return { refused: 'kind' };
  if (rule.notAfterCharge && order.charge !== null) return { refused: 'charged' };
  if (
    rule.chargePayment &&
    (order.charge === null || !paymentId || !order.paymentId || order.paymentId !== paymentId)
  )
    return { refused: 'payment' };
  if (rule.notOverReport && order.reportedAt !== null) return { refused: 'reported' };
  if (order.state === rule.to) return { to: rule.to, from: order.state };
  if (!rule.from.includes(order.state)) return { refused: 'state' };
  return { to: rule.to, from: order.state };
}

/**
 * The states a charge's own evidence may move the order from, for the write that records it
 * without reading the order first (lib/orders/charge-engine.ts): the charge holds the order's slot, and
 * the condition excludes a success a notification reported meanwhile.
 */
export function chargeMove(evidence: Evidence): {
  to: OrderState;
  from: readonly OrderState[];
  overReport: boolean;
} {
  const rule = TRANSITIONS[evidence];
  // Already where the evidence leads (a notification got there first): recorded again, slot freed.
  const from = rule.from.includes(rule.to) ? rule.from : [...rule.from, rule.to];
  return { to: rule.to, from, overReport: rule.notOverReport !== true };
}

/** The evidence of a charge's answer, by its `status_code` (2, or 3 for a hold, is success). */
export function chargeEvidence(statusCode: number, hold: boolean): Evidence {
  if (statusCode === 2 || (hold && statusCode === 3)) return 'charge_succeeded';
  if (statusCode === -1) return 'charge_cancelled';
  if (statusCode === -2) return 'charge_declined';
  return 'charge_pending';
}

/**
 * Whether a notification's signed amount (in cents) is one PayHere charges for `order`: its amount,
 * except that a subscription with a startup fee (PayHere's `startup_fee`, which its checkout hash
 * does not cover) charges amount + fee with its first payment. Until the order has succeeded, a
 * notification can only be about that first payment, so only amount + fee fits: a checkout whose
 * fee was dropped or altered in the SDK is kept apart, never the customer's subscription. Once it
 * has, both fit (an installment's amount, or the first payment's notified again or charged back).
 * A pre-approval created without an amount takes any.
 */
export function notifiedAmountFits(
  order: Pick<Order, 'state' | 'amountCents' | 'startupFeeCents'>,
  cents: number,
): boolean {
  if (order.amountCents === null) return true;
  if (order.startupFeeCents === null) return cents === order.amountCents;
  const first = order.amountCents + order.startupFeeCents;
  const running = order.state === 'succeeded' || order.state === 'chargedback';
  return cents === first || (running && cents === order.amountCents);
}

/** What applying evidence to an order did. */
export type Applied = { moved: OrderState } | { unchanged: Refusal | 'same' | 'raced' };

/**
 * What the evidence records besides the state (ids, tokens, a card, a report), and the payment it
 * is about (`about`: decided on, never written).
 */
export type Recorded = Omit<OrderMove, 'from' | 'to' | 'seen' | 'clearReport'> & { about?: string | null };

/** The evidence that settles a report: PayHere's records, or the settle job finding none. */
const SETTLES_REPORT: readonly Evidence[] = [
  'records_show_payment',
  'records_show_subscription',
  'report_unconfirmed',
];

/**
 * Decide what `evidence` does to `order` as read, and persist it with a write conditional on what
 * was read (`raced`: the order changed meanwhile; the caller may read it again and retry).
 */
export async function applyEvidence(
  ledger: { moveOrder(orderId: string, move: OrderMove): Promise<boolean> },
  order: Order,
  evidence: Evidence,
  recorded: Recorded = {},
): Promise<Applied> {
  const decision = decide(order, evidence, recorded.about);
  if ('refused' in decision) return { unchanged: decision.refused };
  const reported = order.reportedAt !== null;
  // A report stands until it is settled: another never replaces it (nor postpones its settlement).
  const report = reported ? undefined : recorded.report;
  if (decision.to === decision.from && !report) return { unchanged: 'same' };
  const { about: _about, ...recording } = recorded;
  const moved = decision.to !== decision.from;
  const move: OrderMove = {
    ...recording,
    ...(report ? { report } : {}),
    from: decision.from,
    to: decision.to,
    seen: { charged: order.charge !== null, reported },
    clearReport: reported && SETTLES_REPORT.includes(evidence),
    // The merchant is told of a move, with what it recorded (a report recorded in the same state is none).
    ...(moved
      ? {
          events: [
            orderMoved(
              {
                ...order,
                paymentId: recorded.paymentId ?? order.paymentId,
                subscriptionId: recorded.subscriptionId ?? order.subscriptionId,
              },
              { from: decision.from, to: decision.to, evidence },
            ),
          ],
        }
      : {}),
  };
  if (!move.report) delete move.report;
  return (await ledger.moveOrder(order.orderId, move)) ? { moved: decision.to } : { unchanged: 'raced' };
}
