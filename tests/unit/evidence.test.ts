import { describe, expect, it } from 'vitest';
import { ORDER_KINDS, ORDER_STATES, type OrderKind, type OrderState } from '../../lib/ledger/model.ts';
import {
  type Decision,
  decide,
  type Evidence,
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
const CHARGED = { charge: { key: 'charge#k', inflight: false, sentAt: 0, until: 0 } };
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
  hold_expired: { kind: 'authorize', from: ['unknown'], to: 'cancelled' },
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
    const decision: Decision = decide(facts(state, kind), evidence);

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

describe('evidence for another kind of order moves nothing', () => {
  const KINDS: Partial<Record<Evidence, OrderKind[]>> = {
    records_show_payment: ['payment', 'charge'],
    records_show_subscription: ['recurring'],
    hold_expired: ['authorize'],
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
