import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import type { ChargeClaim, ChargeOutcome, NewOrder } from '../../lib/ledger/model.ts';
import { LedgerStore } from '../../lib/ledger/store.ts';
import { CHARGEABLE, chargeMove, type Evidence } from '../../lib/orders/evidence.ts';
import { newOrder } from '../helpers/orders.ts';
import { localClient } from '../idempotency/fixtures.ts';

/** The ledger against the run's real dynalite table; every order id is fresh, so tests never share one. */
const ledger = new LedgerStore({ client: localClient(), table: inject('ledgerTable') });

const orderId = () => `LEDGER-${randomUUID()}`;

function checkout(overrides: Partial<NewOrder> = {}): NewOrder {
  return newOrder({ orderId: orderId(), owner: 'alice', ...overrides });
}

function claim(id: string, overrides: Partial<ChargeClaim> = {}): ChargeClaim {
  return {
    orderId: id,
    owner: 'alice',
    kind: 'charge',
    price: { items: 'Taxi Hire 123', currency: 'LKR', amountCents: 34_567 },
    custom1: null,
    custom2: null,
    slot: { key: `charge#${randomUUID()}`, sentAt: Date.now(), until: Date.now() + 10_000 },
    chargeable: CHARGEABLE,
    rule: 'merchant',
    ...overrides,
  };
}

/** What a charge's evidence records, as lib/orders/charge-engine.ts builds it. */
const BY_STATE = {
  succeeded: 'charge_succeeded',
  pending: 'charge_pending',
  failed: 'charge_declined',
  cancelled: 'charge_cancelled',
  unknown: 'charge_lost',
} as const satisfies Record<string, Evidence>;

function outcome(state: keyof typeof BY_STATE, ids: { paymentId?: string } = {}): ChargeOutcome {
  const move = chargeMove(BY_STATE[state]);
  return { state: move.to, from: move.from, overReport: move.overReport, ...ids };
}

describe('orders', () => {
  it('creates an order once; the id then answers with the order that holds it', async () => {
    const order = checkout();

    const first = await ledger.createOrder(order);
    const second = await ledger.createOrder({ ...order, owner: 'bob', amountCents: 1 });

    expect(first).toMatchObject({ created: { ...order, state: 'created', charge: null } });
    expect(second).toMatchObject({ existing: { owner: 'alice', amountCents: 34_567 } });
    expect(await ledger.getOrder(order.orderId)).toMatchObject({ owner: 'alice', state: 'created' });
  });

  it('knows nothing of an order it never recorded', async () => {
    expect(await ledger.getOrder(orderId())).toBeUndefined();
  });
});

describe('the payment slot of an order', () => {
  it('lets exactly one of twenty concurrent charges take it', async () => {
    const id = orderId();

    const results = await Promise.all(Array.from({ length: 20 }, () => ledger.claimCharge(claim(id))));

    expect(results.filter((order) => order !== undefined)).toHaveLength(1);
    expect((await ledger.getOrder(id))?.charge).toMatchObject({ inflight: true });
  });

  it('creates the order of a merchant charge with the charge as its price and owner', async () => {
    const id = orderId();

    const claimed = await ledger.claimCharge(claim(id, { owner: 'bob' }));

    expect(claimed).toMatchObject({
      orderId: id,
      owner: 'bob',
      kind: 'charge',
      state: 'created',
      amountCents: 34_567,
    });
  });

  it('keeps the owner of an existing order when the merchant charges it', async () => {
    const order = checkout();
    await ledger.createOrder(order);

    const claimed = await ledger.claimCharge(
      claim(order.orderId, { owner: 'merchant', price: { ...claim('').price, amountCents: 100 } }),
    );

    expect(claimed).toMatchObject({ owner: 'alice', amountCents: 100 });
  });

  it.each(['succeeded', 'pending', 'unknown'] as const)(
    'refuses a new charge after one that %s',
    async (state) => {
      const id = orderId();
      const first = claim(id);
      await ledger.claimCharge(first);
      await ledger.finishCharge(id, first.slot.key, outcome(state));

      expect(await ledger.claimCharge(claim(id))).toBeUndefined();
      expect(await ledger.getOrder(id)).toMatchObject({
        state,
        charge: { key: first.slot.key, inflight: false },
      });
    },
  );

  it.each(['failed', 'cancelled'] as const)('allows a new charge after one that %s', async (state) => {
    const id = orderId();
    const first = claim(id);
    await ledger.claimCharge(first);
    await ledger.finishCharge(id, first.slot.key, outcome(state));

    expect(await ledger.claimCharge(claim(id))).toMatchObject({ state });
  });

  it('is free again after a charge that sent nothing is released, and only by that charge', async () => {
    const id = orderId();
    const first = claim(id);
    await ledger.claimCharge(first);

    expect(await ledger.releaseCharge(id, 'charge#someone-else')).toBe(false);
    expect(await ledger.releaseCharge(id, first.slot.key)).toBe(true);
    expect(await ledger.claimCharge(claim(id))).toBeDefined();
  });

  it('records an outcome only for the charge that holds the order, never over a success', async () => {
    const id = orderId();
    const first = claim(id);
    await ledger.claimCharge(first);

    expect(await ledger.finishCharge(id, 'charge#someone-else', outcome('failed'))).toBe(false);
    expect(
      await ledger.finishCharge(id, first.slot.key, outcome('succeeded', { paymentId: '320040000001' })),
    ).toBe(true);
    expect(await ledger.finishCharge(id, first.slot.key, outcome('unknown'))).toBe(false);
    expect(await ledger.getOrder(id)).toMatchObject({ state: 'succeeded', paymentId: '320040000001' });
  });

  it('records a charge’s success over a success other evidence recorded meanwhile, and frees its slot', async () => {
    const id = orderId();
    const first = claim(id);
    await ledger.claimCharge(first);
    // PayHere's records showed the payment (its notification came first).
    await ledger.moveOrder(id, {
      from: 'created',
      to: 'succeeded',
      seen: { charged: true, reported: false },
      paymentId: '320040000002',
    });

    expect(
      await ledger.finishCharge(id, first.slot.key, outcome('succeeded', { paymentId: '320040000002' })),
    ).toBe(true);
    expect(await ledger.getOrder(id)).toMatchObject({ state: 'succeeded', charge: { inflight: false } });
  });

  it('lets a customer charge only its own charge order at exactly its price', async () => {
    const order = checkout();
    await ledger.createOrder(order);
    const price = { items: order.items, currency: order.currency, amountCents: order.amountCents };

    const bob = await ledger.claimCharge(
      claim(order.orderId, { owner: 'bob', rule: 'customer-priced', price }),
    );
    const cheaper = await ledger.claimCharge(
      claim(order.orderId, { rule: 'customer-priced', price: { ...price, amountCents: 100 } }),
    );
    const missing = await ledger.claimCharge(claim(orderId(), { rule: 'customer-priced', price }));
    const alice = await ledger.claimCharge(claim(order.orderId, { rule: 'customer-priced', price }));

    expect([bob, cheaper, missing]).toEqual([undefined, undefined, undefined]);
    expect(alice).toMatchObject({ owner: 'alice', charge: { inflight: true } });
  });

  it('lets a customer pricing its own orders create one, but not take another owner’s', async () => {
    const taken = checkout({ owner: 'bob' });
    await ledger.createOrder(taken);

    const created = await ledger.claimCharge(claim(orderId(), { rule: 'customer' }));
    const others = await ledger.claimCharge(claim(taken.orderId, { rule: 'customer' }));

    expect(created).toMatchObject({ owner: 'alice', kind: 'charge' });
    expect(others).toBeUndefined();
  });
});

describe('references', () => {
  it('point an id at one order; a payment id is adopted by at most one charge', async () => {
    const paymentId = String(Date.now());
    const reference = { orderId: orderId(), owner: 'alice' };

    const adopted = await ledger.link('payment', paymentId, reference, 'charge#1');
    const again = await ledger.link('payment', paymentId, reference, 'charge#1');
    const byAnother = await ledger.link('payment', paymentId, reference, 'charge#2');
    const elsewhere = await ledger.link(
      'payment',
      paymentId,
      { orderId: orderId(), owner: 'alice' },
      'charge#1',
    );

    expect([adopted, again, byAnother, elsewhere]).toEqual([true, true, false, false]);
    expect(await ledger.lookup('payment', paymentId)).toEqual({ ...reference, chargeKey: 'charge#1' });
  });

  it('refuses to move a token to another owner', async () => {
    const token = randomUUID();
    const reference = { orderId: orderId(), owner: 'alice' };

    expect(await ledger.link('customer_token', token, reference)).toBe(true);
    expect(await ledger.link('customer_token', token, { ...reference, owner: 'bob' })).toBe(false);
    expect(await ledger.lookup('customer_token', token)).toEqual(reference);
    expect(await ledger.lookup('customer_token', randomUUID())).toBeUndefined();
  });

  it('lists the subscriptions a customer owns, each once', async () => {
    const owner = `owner-${randomUUID()}`;

    await ledger.addSubscription(owner, '420075032251');
    await ledger.addSubscription(owner, '420075032252');
    await ledger.addSubscription(owner, '420075032251');

    expect((await ledger.subscriptionsOf(owner)).sort()).toEqual(['420075032251', '420075032252']);
    expect(await ledger.subscriptionsOf(`owner-${randomUUID()}`)).toEqual([]);
  });
});

describe('a subscription’s standing check', () => {
  /** A running subscription's order; its checks due long ago, so that they come first in the queue. */
  async function subscribed(): Promise<{ id: string; at: number }> {
    const id = orderId();
    await ledger.createOrder(
      checkout({
        orderId: id,
        kind: 'recurring',
        recurrence: '1 Month',
        duration: '1 Year',
        subscriptionId: '420075032251',
      }),
    );
    return { id, at: 1_000 + Math.floor(Math.random() * 1_000_000) };
  }

  it('is due from its time, and a later ask never pushes it back', async () => {
    const { id, at } = await subscribed();

    expect(await ledger.checkStandingAt(id, at)).toBe(true);
    // Counted on the check already due, which stays.
    expect(await ledger.checkStandingAt(id, at + 10_000)).toBe(true);
    const before = await ledger.standingDue(at - 1, 1_000);
    const due = await ledger.standingDue(at, 1_000);
    const order = await ledger.getOrder(id);

    expect(before).not.toContain(id);
    expect(due).toContain(id);
    expect(order).toMatchObject({ standingCheckAt: at, settleAt: null, standingAsks: 2 });
    expect(order!.standingSince).toBeGreaterThan(0);
    expect(await ledger.reportedDue(Date.now(), 1_000)).not.toContain(id);
    // An earlier ask takes its place.
    expect(await ledger.checkStandingAt(id, at - 500)).toBe(true);
    expect(await ledger.getOrder(id)).toMatchObject({
      standingCheckAt: at - 500,
      standingSince: order!.standingSince,
    });
  });

  it('is refused for an order with no subscription, or with a reported success still to settle', async () => {
    const plain = orderId();
    await ledger.createOrder(checkout({ orderId: plain }));
    const { id, at } = await subscribed();
    // What a report leaves on an order (lib/ledger/store.ts): the settle index's other queue.
    await localClient().send(
      new UpdateItemCommand({
        TableName: inject('ledgerTable'),
        Key: { pk: { S: `order#${id}` } },
        UpdateExpression: 'SET reportedAt = :at, settleQueue = :reported, settleAt = :at',
        ExpressionAttributeValues: { ':at': { N: String(at) }, ':reported': { S: 'reported' } },
      }),
    );

    expect(await ledger.checkStandingAt(plain, at)).toBe(false);
    expect(await ledger.checkStandingAt(id, at)).toBe(false);
    expect(await ledger.checkStandingAt(`LEDGER-${randomUUID()}`, at)).toBe(false);
    expect(await ledger.getOrder(id)).toMatchObject({ standingCheckAt: null, settleAt: at });
  });

  it('is cleared or postponed only as the check that was read: a retried clear writes nothing', async () => {
    const { id, at } = await subscribed();
    await ledger.checkStandingAt(id, at);

    expect(await ledger.standingChecked(id, at + 1, 1)).toBe(false);
    expect(await ledger.postponeStanding(id, at + 1, at + 60_000)).toBe(false);
    expect(await ledger.postponeStanding(id, at, at + 60_000)).toBe(true);
    expect(await ledger.standingChecked(id, at, 1)).toBe(false);
    expect(await ledger.standingChecked(id, at + 60_000, 1)).toBe(true);
    expect(await ledger.standingChecked(id, at + 60_000, 1)).toBe(false);
    expect(await ledger.getOrder(id)).toMatchObject({
      standingCheckAt: null,
      standingSince: null,
      standingAsks: 0,
    });
    expect(await ledger.standingDue(at + 60_000, 1_000)).not.toContain(id);
  });

  it('is not ended by a read that began before another ask: it stays for the read after it', async () => {
    const { id, at } = await subscribed();
    await ledger.checkStandingAt(id, at);
    // The settle job reads the order (one ask), then PayHere; a notification asks meanwhile.
    const read = (await ledger.getOrder(id))!;
    await ledger.checkStandingAt(id, at + 10_000);

    expect(await ledger.standingChecked(id, at, read.standingAsks)).toBe(false);
    expect(await ledger.getOrder(id)).toMatchObject({ standingCheckAt: at, standingAsks: 2 });
    expect(await ledger.standingChecked(id, at, 2)).toBe(true);
  });
});

describe('an order’s kept payments', () => {
  const copy = (state: 'succeeded' | 'chargedback', fetchedAt: number) => ({
    state,
    fetchedAt,
    answer: JSON.stringify({ msg: 'Payments', data: [], fetchedAt }),
  });

  async function succeededOrder(): Promise<string> {
    const order = checkout();
    await ledger.createOrder(order);
    await ledger.moveOrder(order.orderId, {
      from: 'created',
      to: 'succeeded',
      seen: { charged: false, reported: false },
      paymentId: '320040000001',
    });
    return order.orderId;
  }

  it('are kept only while the order is in the state they were fetched in, and only newer ones', async () => {
    const id = await succeededOrder();
    const t = Date.now();

    const wrongState = await ledger.keepPayments(id, copy('chargedback', t), t);
    const kept = await ledger.keepPayments(id, copy('succeeded', t), t);
    const older = await ledger.keepPayments(id, copy('succeeded', t - 1), t - 1);

    expect([wrongState, kept, older]).toEqual([false, true, false]);
    expect((await ledger.getOrder(id))?.paymentsCopy).toEqual(copy('succeeded', t));
  });

  it('are dropped, and an answer fetched before the drop is not kept after it', async () => {
    const id = await succeededOrder();
    const t = Date.now();
    await ledger.keepPayments(id, copy('succeeded', t - 5_000), t - 5_000);

    await ledger.dropPayments(id);
    const sentBefore = await ledger.keepPayments(id, copy('succeeded', t - 1_000), t - 1_000);
    const dropped = await ledger.getOrder(id);
    const sentAfter = await ledger.keepPayments(id, copy('succeeded', t + 5_000), t + 5_000);

    expect(dropped?.paymentsCopy).toBeNull();
    expect([sentBefore, sentAfter]).toEqual([false, true]);
  });
});
