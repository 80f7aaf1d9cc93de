import { describe, expect, it } from 'vitest';
import type { SubscriptionStatus } from '../../lib/ledger/model.ts';
import {
  decideSubscription,
  type SubscriptionFacts,
  type SubscriptionSeen,
  subscriptionChange,
} from '../../lib/orders/subscription-evidence.ts';

/**
 * lib/orders/subscription-evidence.ts, the one place that decides what PayHere's word records of an
 * order's subscription: every change it allows, and every one it refuses, each named.
 */
const ID = '420075032251';
const facts = (
  subscriptionStatus: SubscriptionStatus | null = null,
  failedInstallment: number | null = null,
): SubscriptionFacts => ({ subscriptionId: ID, subscriptionStatus, failedInstallment });
const records = (status: string, installmentsPaid = 1): SubscriptionSeen => ({
  evidence: 'records_show_status',
  status,
  installmentsPaid,
});

describe('what is recorded', () => {
  it.each([
    ['CANCELLED', null],
    ['CANCELLED', 'FAILED'],
    ['COMPLETED', null],
    ['COMPLETED', 'FAILED'],
  ] as const)('records showing %s over %s record it', (status, from) => {
    expect(decideSubscription(facts(from, from ? 2 : null), ID, records(status))).toEqual({
      to: status,
      from: { subscriptionStatus: from, failedInstallment: from ? 2 : null },
    });
  });

  it('records showing FAILED after n installments paid record installment n + 1 failed', () => {
    expect(decideSubscription(facts(), ID, records('FAILED', 3))).toEqual({
      to: 'FAILED',
      from: { subscriptionStatus: null, failedInstallment: null },
      failedInstallment: 4,
    });
  });

  it('a later installment’s failure is recorded after an earlier one’s', () => {
    expect(decideSubscription(facts('FAILED', 2), ID, records('FAILED', 2))).toMatchObject({
      to: 'FAILED',
      failedInstallment: 3,
    });
  });

  it('the service’s cancel accepted records CANCELLED; refused, the status PayHere gave', () => {
    expect(
      decideSubscription(facts(), ID, { evidence: 'cancel_accepted', status: 'CANCELLED' }),
    ).toMatchObject({ to: 'CANCELLED' });
    expect(
      decideSubscription(facts(), ID, { evidence: 'cancel_refused', status: 'COMPLETED' }),
    ).toMatchObject({
      to: 'COMPLETED',
    });
  });

  it.each([
    ['records_show_status', 'CANCELLED', 'subscription.stopped'],
    ['cancel_accepted', 'CANCELLED', 'subscription.cancelled'],
    ['cancel_refused', 'CANCELLED', 'subscription.cancelled'],
    ['cancel_refused', 'COMPLETED', 'subscription.completed'],
    ['records_show_status', 'COMPLETED', 'subscription.completed'],
    ['records_show_status', 'FAILED', 'subscription.installment_failed'],
  ] as const)('%s showing %s is %s', (evidence, status, type) => {
    const decided = subscriptionChange({ orderId: 'Gym-1', ...facts() }, ID, {
      evidence,
      status,
      installmentsPaid: 1,
    });
    expect('change' in decided && decided.change.events.map((event) => event.type)).toEqual([type]);
  });
});

describe('what is refused', () => {
  it.each([
    ['CANCELLED', 'CANCELLED'],
    ['COMPLETED', 'COMPLETED'],
  ] as const)('%s over %s: recorded already', (status, from) => {
    expect(decideSubscription(facts(from), ID, records(status))).toEqual({ refused: 'same' });
  });

  it('the same installment’s failure again: recorded already (a replay, or PayHere’s retry declined again)', () => {
    expect(decideSubscription(facts('FAILED', 2), ID, records('FAILED', 1))).toEqual({ refused: 'same' });
  });

  it('an earlier installment’s failure after a later one’s: older', () => {
    expect(decideSubscription(facts('FAILED', 4), ID, records('FAILED', 1))).toEqual({ refused: 'older' });
  });

  it.each([
    ['COMPLETED', 'CANCELLED'],
    ['CANCELLED', 'COMPLETED'],
    ['FAILED', 'CANCELLED'],
    ['FAILED', 'COMPLETED'],
  ] as const)('%s over an ended subscription (%s): nothing moves it back', (status, from) => {
    expect(decideSubscription(facts(from), ID, records(status))).toEqual({ refused: 'ended' });
  });

  it.each(['ACTIVE', 'PAUSED', ''])('records showing %j: nothing to record', (status) => {
    expect(decideSubscription(facts('FAILED', 2), ID, records(status))).toEqual({ refused: 'running' });
  });

  it('another subscription than the order’s, or an order without one', () => {
    expect(decideSubscription(facts(), '420075032252', records('CANCELLED'))).toEqual({
      refused: 'subscription',
    });
    expect(decideSubscription({ ...facts(), subscriptionId: null }, ID, records('CANCELLED'))).toEqual({
      refused: 'subscription',
    });
  });

  it('a failure from a cancel’s answer, or from records without the installments paid', () => {
    expect(decideSubscription(facts(), ID, { evidence: 'cancel_refused', status: 'FAILED' })).toEqual({
      refused: 'evidence',
    });
    expect(decideSubscription(facts(), ID, { evidence: 'cancel_accepted', status: 'COMPLETED' })).toEqual({
      refused: 'evidence',
    });
    expect(decideSubscription(facts(), ID, { evidence: 'records_show_status', status: 'FAILED' })).toEqual({
      refused: 'evidence',
    });
  });
});
