import { describe, expect, it } from 'vitest';
import { ORDER_KINDS, ORDER_STATES, type OrderKind, type OrderState } from '../../lib/ledger/model.ts';
import {
  type Decision,
  decide,
  type Evidence,
  notifiedAmountFits,
  type OrderFacts,
  TRANSITIONS,
} from '../../lib/orders/evidence.ts';

/**
 * lib/orders/evidence.ts, the one place that decides which evidence moves an order from which state
 * to which: every transition it allows, and every one it refuses, each named.
 */
const facts = (state: OrderState, kind: OrderKind, extra: Partial<OrderFacts> = {}): OrderFacts => ({
  state,
  kind,
  charge: null,
  reportedAt: null,
  ...extra,
});
const CHARGED = { charge: { key: 'charge#k', inflight: false, sentAt: 0, until: 0, nothingAt: null } };
/** A charge through the service that recorded PayHere's payment id (a pending answer carries one). */
const CHARGED_PAYMENT = { ...CHARGED, paymentId: '320025071278' };
const REPORTED = { reportedAt: 1 };

/** Each evidence: the kind it is tried on, and the states it moves that kind from (all others refused). */
const ALLOWED: Record<Evidence, { kind: OrderKind; from: OrderState[]; to: OrderState }> = {
  charge_succeeded: {
    kind: 'charge',
    from: ['created', 'failed', 'cancelled', 'pending', 'unknown'],
    to: 'succeeded',
  },
  charge_pending: { kind: 'charge', from: ['created', 'failed', 'cancelled', 'unknown'], to: 'pending' },
  charge_declined: { kind: 'charge', from: ['created', 'failed', 'cancelled'], to: 'failed' },
  charge_cancelled: { kind: 'charge', from: ['created', 'failed', 'cancelled'], to: 'cancelled' },
  charge_refused: { kind: 'charge', from: ['created', 'failed', 'cancelled'], to: 'failed' },
  charge_lost: { kind: 'charge', from: ['created', 'failed', 'cancelled'], to: 'unknown' },
  records_show_payment: {
    kind: 'payment',
    from: ['created', 'failed', 'cancelled', 'pending', 'unknown'],
    to: 'succeeded',
  },
  records_show_subscription: {
    kind: 'recurring',
    from: ['created', 'failed', 'cancelled', 'pending'],
    to: 'succeeded',
  },
  settled_nothing: { kind: 'charge', from: ['unknown'], to: 'failed' },
  report_unconfirmed: { kind: 'payment', from: ['pending'], to: 'failed' },
  hold_expired: { kind: 'authorize', from: ['unknown', 'pending'], to: 'cancelled' },
  pending_expired: { kind: 'charge', from: ['pending'], to: 'failed' },
  notified_token: {
    kind: 'preapproval',
    from: ['created', 'failed', 'cancelled', 'pending', 'unknown'],
    to: 'succeeded',
  },
  notified_success: {
    kind: 'payment',
    from: ['created', 'failed', 'cancelled', 'pending', 'unknown'],
    to: 'pending',
  },
  notified_pending: { kind: 'payment', from: ['created'], to: 'pending' },
  notified_failed: { kind: 'payment', from: ['created', 'pending'], to: 'failed' },
  notified_charge_failed: { kind: 'charge', from: ['pending'], to: 'failed' },
  notified_cancelled: { kind: 'payment', from: ['created', 'pending'], to: 'cancelled' },
  notified_chargeback: { kind: 'payment', from: ['succeeded'], to: 'chargedback' },
};

const cases = (Object.keys(ALLOWED) as Evidence[]).flatMap((evidence) =>
  ORDER_STATES.map((state) => [evidence, state] as const),
);

describe('which evidence moves an order from which state', () => {
  it('the table under test is the module’s, evidence for evidence', () => {
    expect(Object.keys(ALLOWED).sort()).toEqual(Object.keys(TRANSITIONS).sort());
  });

  it.each(cases)('%s from %s', (evidence, state) => {
    const { kind, from, to } = ALLOWED[evidence];
    // Evidence about a charge's payment is tried on that charge, naming its payment.
    const about = TRANSITIONS[evidence].chargePayment ? CHARGED_PAYMENT : {};
    const decision: Decision = decide(facts(state, kind, about), evidence, CHARGED_PAYMENT.paymentId);

    if (state === to) expect(decision).toEqual({ to, from: state });
    else if (from.includes(state)) expect(decision).toEqual({ to, from: state });
    else expect(decision).toEqual({ refused: 'state' });
  });
});

describe('a notification never reopens a charge', () => {
  it.each(['notified_failed', 'notified_cancelled', 'notified_pending'] as const)(
    '%s is refused once a charge through the service recorded the state',
    (evidence) => {
      for (const state of ['created', 'pending'] as const)
        expect(decide(facts(state, 'charge', CHARGED), evidence)).toEqual({ refused: 'charged' });
    },
  );

  it.each(['notified_failed', 'notified_cancelled', 'notified_pending', 'notified_chargeback'] as const)(
    '%s never moves an unknown charge',
    (evidence) => {
      expect('refused' in decide(facts('unknown', 'charge', CHARGED), evidence)).toBe(true);
      expect('refused' in decide(facts('unknown', 'charge'), evidence)).toBe(true);
    },
  );

  it.each(['notified_failed', 'notified_cancelled'] as const)(
    '%s is refused over a reported success: PayHere may still show it',
    (evidence) => {
      expect(decide(facts('pending', 'payment', REPORTED), evidence)).toEqual({ refused: 'reported' });
    },
  );

  it.each([
    'charge_declined',
    'charge_cancelled',
    'charge_refused',
    'charge_lost',
    'settled_nothing',
  ] as const)('%s is refused over a success a notification reported meanwhile', (evidence) => {
    const state = evidence === 'settled_nothing' ? 'unknown' : 'created';
    expect(decide(facts(state, 'charge', { ...CHARGED, ...REPORTED }), evidence)).toEqual({
      refused: 'reported',
    });
  });
});

describe('a pending charge ends by its own payment’s failure, or by PayHere’s records after its limit', () => {
  it('a failure notification naming the pending charge’s payment fails it', () => {
    expect(
      decide(facts('pending', 'charge', CHARGED_PAYMENT), 'notified_charge_failed', '320025071278'),
    ).toEqual({
      to: 'failed',
      from: 'pending',
    });
  });

  it.each([
    ['another payment', CHARGED_PAYMENT, '320025071279'],
    ['no payment named', CHARGED_PAYMENT, null],
    ['a charge that recorded no payment id', CHARGED, '320025071278'],
    ['an order no charge through the service recorded', { paymentId: '320025071278' }, '320025071278'],
  ] as const)('is refused for %s', (_, extra, paymentId) => {
    expect(decide(facts('pending', 'charge', extra), 'notified_charge_failed', paymentId)).toEqual({
      refused: 'payment',
    });
  });

  it('is refused over a success a notification reported meanwhile', () => {
    const order = facts('pending', 'charge', { ...CHARGED_PAYMENT, ...REPORTED });
    expect(decide(order, 'notified_charge_failed', '320025071278')).toEqual({ refused: 'reported' });
    expect(decide(order, 'pending_expired')).toEqual({ refused: 'reported' });
  });

  it.each(['succeeded', 'unknown', 'created', 'chargedback'] as const)(
    'never moves a charge that is %s (a replay after the order moved on)',
    (state) => {
      expect(
        decide(facts(state, 'charge', CHARGED_PAYMENT), 'notified_charge_failed', '320025071278'),
      ).toEqual({
        refused: 'state',
      });
      expect(decide(facts(state, 'charge', CHARGED_PAYMENT), 'pending_expired')).toEqual({
        refused: 'state',
      });
    },
  );
});

describe('evidence for another kind of order moves nothing', () => {
  const KINDS: Partial<Record<Evidence, OrderKind[]>> = {
    records_show_payment: ['payment', 'charge'],
    records_show_subscription: ['recurring'],
    hold_expired: ['authorize'],
    pending_expired: ['payment', 'charge'],
    notified_charge_failed: ['payment', 'charge', 'authorize'],
    report_unconfirmed: ['payment', 'charge', 'recurring'],
    notified_token: ['preapproval', 'authorize'],
    notified_success: ['payment', 'charge', 'recurring'],
  };
  const kindCases = (Object.entries(KINDS) as [Evidence, OrderKind[]][]).flatMap(([evidence, kinds]) =>
    ORDER_KINDS.filter((kind) => !kinds.includes(kind)).map((kind) => [evidence, kind] as const),
  );

  it.each(kindCases)('%s on a %s order', (evidence, kind) => {
    expect(decide(facts('created', kind), evidence)).toEqual({ refused: 'kind' });
    expect(decide(facts('unknown', kind), evidence)).toEqual({ refused: 'kind' });
  });

  it('a payment or a subscription is never paid by a notification alone, only reported', () => {
    for (const kind of ['payment', 'charge', 'recurring'] as const)
      expect(decide(facts('created', kind), 'notified_success')).toEqual({ to: 'pending', from: 'created' });
  });
});

describe('a notification’s signed amount (docs/contract.md "What an order keeps": startup_fee)', () => {
  const order = (state: OrderState, startupFeeCents: number | null) => ({
    state,
    amountCents: 250_000,
    startupFeeCents,
  });

  it.each(ORDER_STATES)('without a startup fee, is the order’s amount only (%s)', (state) => {
    expect(notifiedAmountFits(order(state, null), 250_000)).toBe(true);
    expect(notifiedAmountFits(order(state, null), 350_000)).toBe(false);
  });

  it.each(['created', 'pending', 'failed', 'cancelled', 'unknown'] as const)(
    'with a startup fee, is amount + fee until the subscription has succeeded (%s): a first payment without it is no fit',
    (state) => {
      expect(notifiedAmountFits(order(state, 100_000), 350_000)).toBe(true);
      expect(notifiedAmountFits(order(state, 100_000), 250_000)).toBe(false);
    },
  );

  it.each(['succeeded', 'chargedback'] as const)(
    'with a startup fee, is an installment’s amount or the first payment’s once it has (%s), nothing else',
    (state) => {
      expect(notifiedAmountFits(order(state, 100_000), 250_000)).toBe(true);
      expect(notifiedAmountFits(order(state, 100_000), 350_000)).toBe(true);
      expect(notifiedAmountFits(order(state, 100_000), 100_000)).toBe(false);
    },
  );

  it('takes any amount for a pre-approval created without one', () => {
    expect(notifiedAmountFits({ state: 'created', amountCents: null, startupFeeCents: null }, 1)).toBe(true);
  });
});
