import { setTimeout as turnAfter } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DYNAMODB_ATTEMPTS, DYNAMODB_WRITE_WORST_MS } from '../../lib/config/dynamodb.ts';
import { ScanCommand } from '../../lib/dynamodb/index.ts';
import { EventRelay } from '../../lib/events/relay.ts';
import {
  type EventBody,
  EventStore,
  eventBody,
  FEED_SETTLE_MS,
  feedKeyOfCursor,
} from '../../lib/events/store.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { applyEvidence } from '../../lib/orders/evidence.ts';
import { SEED } from '../../sandbox/server.ts';
import { clearDynamoDbFaults, injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { customer, customerToken, newOrder, testLedger } from '../helpers/orders.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { chargeBody, paymentsOf } from '../resilience/fixtures.ts';
import { accessToken, apiClient, payAtPayHere } from '../sandbox/helpers.ts';
import { checkoutRequest } from '../sandbox/signing.ts';

/**
 * Every change of money state the ledger records becomes one event (lib/orders/events.ts), written
 * by the change's own conditional write and published to the events table by the relay: through
 * the handlers in-process against the sandbox and the local DynamoDB, with its faults.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();
const client = localClient();
const alice = customer('alice');

describe('a publication answered late', () => {
  /** An order moved by a ledger that tells no relay: its event waits in its outbox. */
  async function orderWithOutbox(name: string): Promise<string> {
    const orderId = `${name}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
    await ledger.createOrder(newOrder({ orderId, owner: alice, kind: 'payment' }));
    await applyEvidence(ledger, (await ledger.getOrder(orderId))!, 'notified_pending');
    return orderId;
  }
  /** A relay on a clock of the test's own; `answeredAfter`: how long each publication's answer takes on it. */
  function relayAt(clock: { now: number }, answeredAfter = 0) {
    const store = events();
    const publish = store.publish.bind(store);
    store.publish = async (...args) => {
      const publication = await publish(...args);
      clock.now += answeredAfter;
      return publication;
    };
    return new EventRelay({
      client,
      ledgerTable: process.env.LEDGER_TABLE!,
      events: store,
      endpoints: () => [],
      now: () => clock.now,
    });
  }
  /** Where the feed lists the order's one event: its place's time. */
  async function listedAt(orderId: string): Promise<number> {
    const page = await new EventStore({ client, table: process.env.EVENTS_TABLE!, now: () => 4e12 }).page({
      limit: 1,
      objectId: orderId,
    });
    expect(page.events).toHaveLength(1);
    return Number(page.position!.slice(0, 13));
  }

  it('is listed again when it was answered too late to prove it landed before readers passed its place', async () => {
    // Prepare: the container frozen a minute between the event's stamp and its write's answer,
    // the write sent on as it thawed.
    const orderId = await orderWithOutbox('late-publication');
    const t = Date.now();
    const clock = { now: t };

    // Act
    await relayAt(clock, 60_000).publish(`order#${orderId}`);

    // Assess: a reader whose cursor passed the stamp while the write was on its way still comes to it.
    expect(await listedAt(orderId)).toBe(t + 60_000);
    expect(await outboxLength(`order#${orderId}`)).toBe(0);
  });

  it('stays where it was published when it was answered in time', async () => {
    const orderId = await orderWithOutbox('timely-publication');
    const t = Date.now();

    await relayAt({ now: t }, DYNAMODB_WRITE_WORST_MS).publish(`order#${orderId}`);

    expect(await listedAt(orderId)).toBe(t);
  });

  it('is listed again when found published long ago with its outbox kept, and not when found just published', async () => {
    // Prepare: a publication ten minutes ago whose outbox could not be emptied (the ledger failing),
    // and the ledger failing the next run's emptying too.
    const orderId = await orderWithOutbox('kept-outbox');
    const t = Date.now();
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${orderId}`,
      fault: { kind: 'status500' },
      times: 2 * DYNAMODB_ATTEMPTS,
    });
    const failures: unknown[] = [];
    await relayAt({ now: t - 600_000 })
      .publish(`order#${orderId}`)
      .catch((error: unknown) => failures.push(error));

    // Act: the next run finds it ten minutes old; the one after finds it where that run put it.
    await relayAt({ now: t })
      .publish(`order#${orderId}`)
      .catch((error: unknown) => failures.push(error));
    const afterNext = await listedAt(orderId);
    await relayAt({ now: t + 1_000 }).publish(`order#${orderId}`);

    // Assess: listed again where readers will come to it (one may see it twice, by its id), once.
    expect(failures).toHaveLength(2);
    expect(afterNext).toBe(t);
    expect(await listedAt(orderId)).toBe(t);
    expect(await outboxLength(`order#${orderId}`)).toBe(0);
  });
});

/** The events table as a reader long after: every event published so far is visible. */
const events = () =>
  new EventStore({ client, table: process.env.EVENTS_TABLE!, now: () => Date.now() + FEED_SETTLE_MS });

/** Every event published about `objectId`, oldest first, once the background relays are done. */
async function eventsOf(objectId: string): Promise<EventBody[]> {
  await backgroundSettled();
  return (await events().page({ limit: 100, objectId })).events;
}

const summary = (list: EventBody[]) => list.map((event) => [event.type, event.sequence]);

/** What the ledger item `pk` still holds in its outbox. */
async function outboxLength(pk: string): Promise<number> {
  const { Items = [] } = await client.send(
    new ScanCommand({ TableName: process.env.LEDGER_TABLE!, ConsistentRead: true }),
  );
  return Items.find((item) => item.pk?.S === pk)?.outbox?.L?.length ?? 0;
}

afterEach(async () => {
  // This file's faults only: other files inject theirs on the same server at the same time.
  await clearDynamoDbFaults(undefined, process.env.LEDGER_TABLE);
});

describe('a charge', () => {
  it('that succeeds is one order.succeeded, with its evidence and payment; its key repeated adds none', async () => {
    const body = chargeBody();

    const first = await call('charge', { body, idempotencyKey: `events-${body.order_id}` });
    const again = await call('charge', { body, idempotencyKey: `events-${body.order_id}` });
    const published = await eventsOf(body.order_id);

    expect(first.statusCode).toBe(200);
    expect(again.statusCode).toBe(200);
    expect(summary(published)).toEqual([['order.succeeded', 1]]);
    expect(published[0]).toMatchObject({
      id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
      object: { type: 'order', id: body.order_id },
      data: {
        order_id: body.order_id,
        kind: 'charge',
        status: 'succeeded',
        amount: 120.5,
        currency: 'LKR',
        payment_id: String(first.body.data.payment_id),
        evidence: 'charge_succeeded',
      },
    });
    expect(Date.parse(published[0]!.created_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(await outboxLength(`order#${body.order_id}`)).toBe(0);
  });

  it('that is declined is one order.failed', async () => {
    const body = { ...chargeBody(), customer_token: SEED.customerTokens.declined };

    await call('charge', { body });

    expect(summary(await eventsOf(body.order_id))).toEqual([['order.failed', 1]]);
  });

  it('whose outcome write was applied and its answer lost is still one event', async () => {
    const body = chargeBody();
    // The claim goes through; the outcome's write lands and its answer is lost (the client retries it).
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'slow', ms: 0 },
    });
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'applyAndLose' },
    });

    const charged = await call('charge', { body });

    expect(charged.statusCode).toBe(200);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({ state: 'succeeded' });
    expect(summary(await eventsOf(body.order_id))).toEqual([['order.succeeded', 1]]);
  });
});

describe('a refund', () => {
  it('is requested, then settled, on its payment: in sequence', async () => {
    const body = chargeBody();
    const charged = await call('charge', { body });
    const paymentId = String(charged.body.data.payment_id);

    const refunded = await call('refund', {
      body: { payment_id: paymentId, amount: 20, description: 'Broken' },
    });
    const published = await eventsOf(paymentId);

    expect(refunded.statusCode).toBe(200);
    expect(summary(published)).toEqual([
      ['refund.requested', 1],
      ['refund.settled', 2],
    ]);
    expect(published[1]).toMatchObject({
      object: { type: 'payment', id: paymentId },
      data: { payment_id: paymentId, amount: 20, evidence: 'refund_accepted' },
    });
  });
});

describe('a checkout paid in PayHere', () => {
  it('becomes one order.succeeded once PayHere’s records show it; its notification replayed adds none', async () => {
    const created = await call('createCheckout', {
      body: { kind: 'payment', items: 'Door bell', currency: 'LKR', amount: 1000 },
      headers: { 'On-Behalf-Of': alice },
    });
    const orderId: string = created.body.data.order_id;
    await payAtPayHere(sandbox, orderId);
    const form = signed({ order_id: orderId, payhere_amount: '1000.00', status_code: '2' });

    const first = await notify(form);
    const replayed = await notify(form);
    const published = await eventsOf(orderId);

    expect([first.statusCode, replayed.statusCode]).toEqual([200, 200]);
    expect(summary(published)).toEqual([['order.succeeded', 1]]);
    expect(published[0]!.data).toMatchObject({
      previous_status: 'created',
      evidence: 'records_show_payment',
    });
  });
});

describe('a hold', () => {
  it('is authorized, then captured once: a capture repeated adds none', async () => {
    const body = chargeBody(undefined, 'AUTHORIZE');
    const held = await call('charge', { body });
    const token = held.body.data.authorization_token as string;
    const capture = { authorization_token: token, amount: 100, deduction_details: 'Shipped' };

    const captured = await call('capture', { body: capture });
    await call('capture', { body: capture });
    const published = await eventsOf(body.order_id);

    expect(captured.statusCode).toBe(200);
    expect(summary(published)).toEqual([
      ['hold.authorized', 1],
      ['hold.captured', 2],
    ]);
    expect(published[1]!.data).toEqual({ order_id: body.order_id, kind: 'authorize', amount: 100 });
  });

  it.each([
    [-2, 402],
    [-1, 402],
    [0, 202],
  ])(
    'is not captured by a capture PayHere answers with status_code %i (HTTP %i): no hold.captured',
    async (code, http) => {
      const body = chargeBody(undefined, 'AUTHORIZE');
      const held = await call('charge', { body });
      const token = held.body.data.authorization_token as string;
      sandbox.faults.inject('capture', {
        kind: 'status',
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({
          status: 1,
          msg: 'Capture processed',
          data: { status_code: code, status_message: 'Not captured', order_id: body.order_id },
        }),
      });

      const captured = await call('capture', {
        body: { authorization_token: token, amount: 100, deduction_details: 'Shipped' },
      });
      sandbox.faults.clear();
      const published = await eventsOf(body.order_id);

      expect(captured.statusCode).toBe(http);
      expect(summary(published)).toEqual([['hold.authorized', 1]]);
    },
  );
});

describe('a paid order paid again', () => {
  it('is one order.possible_duplicate, however often its notification comes', async () => {
    const body = chargeBody();
    await call('charge', { body });
    const api = apiClient(sandbox, await accessToken(sandbox));
    const second = String((await api.post('payment/charge', body)).json.data.payment_id);
    const form = signed({
      order_id: body.order_id,
      payhere_amount: '120.50',
      status_code: '2',
      payment_id: second,
    });

    await notify(form);
    await notify({ ...form, custom_1: 'replayed' });
    const published = await eventsOf(body.order_id);

    expect(summary(published)).toEqual([
      ['order.succeeded', 1],
      ['order.possible_duplicate', 2],
    ]);
    expect(published[1]!.data).toMatchObject({ duplicate_payment_ids: [second] });
  });

  it('by a notification while its charge was in flight keeps the notified payment and flags the charge’s', async () => {
    const body = chargeBody();
    // PayHere makes the charge at once and answers later.
    sandbox.faults.inject('charge', { kind: 'latency', ms: 1_500, afterProcessing: true });
    const charging = call('charge', { body });
    for (let i = 0; i < 100 && (await paymentsOf(sandbox, body.order_id)) < 1; i++) await turnAfter(20);
    // Meanwhile the order is paid another way (the app's SDK checkout of it), and notified.
    const api = apiClient(sandbox, await accessToken(sandbox));
    const other = String((await api.post('payment/charge', body)).json.data.payment_id);
    const notified = await notify(
      signed({ order_id: body.order_id, payhere_amount: '120.50', status_code: '2', payment_id: other }),
    );
    const charged = await charging;
    const mine = String(charged.body.data.payment_id);
    const published = await eventsOf(body.order_id);

    expect(notified.statusCode).toBe(200);
    expect(charged.statusCode).toBe(200);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'succeeded',
      paymentId: other,
      duplicatePayments: [mine],
    });
    expect(summary(published)).toEqual([
      ['order.succeeded', 1],
      ['order.possible_duplicate', 2],
    ]);
  });
});

describe('a subscription', () => {
  it('is created, then cancelled once: a cancel repeated adds none', async () => {
    const created = await call('createCheckout', {
      body: {
        kind: 'recurring',
        items: 'Gym',
        currency: 'LKR',
        amount: 2_500,
        recurrence: '1 Month',
        duration: '1 Year',
      },
      headers: { 'On-Behalf-Of': alice },
    });
    const orderId: string = created.body.data.order_id;
    const monthly = await sandbox.completeCheckout(
      checkoutRequest('https://notify.example.invalid/payhere', {
        kind: 'recurring',
        order_id: orderId,
        items: 'Gym',
        amount: 2_500,
        recurrence: '1 Month',
        duration: '1 Year',
      }),
    );
    await notify(
      signed({
        order_id: orderId,
        payhere_amount: '2500.00',
        status_code: '2',
        payment_id: String(monthly.payment_id),
        subscription_id: String(monthly.subscription_id),
        message_type: 'AUTHORIZATION_SUCCESS',
        recurring: '1',
        item_recurrence: '1 Month',
        item_duration: '1 Year',
      }),
    );

    const cancelled = await call('cancelSubscription', { id: String(monthly.subscription_id) });
    const again = await call('cancelSubscription', { id: String(monthly.subscription_id) });
    const published = await eventsOf(orderId);

    expect([cancelled.statusCode, again.statusCode]).toEqual([200, 409]);
    expect(summary(published)).toEqual([
      ['subscription.created', 1],
      ['subscription.cancelled', 2],
    ]);
    expect(published[1]!.data).toEqual({
      order_id: orderId,
      kind: 'recurring',
      subscription_id: String(monthly.subscription_id),
      subscription_status: 'CANCELLED',
    });
  });
});

describe('the relay', () => {
  it('publishes what a container left in an outbox, once, however many run it at once', async () => {
    // An order moved by a ledger that tells no relay (a container frozen after its write).
    const orderId = `events-left-${Date.now()}`;
    await ledger.createOrder(newOrder({ orderId, owner: alice, kind: 'payment' }));
    const order = (await ledger.getOrder(orderId))!;
    await applyEvidence(ledger, order, 'notified_pending');
    const relay = () =>
      new EventRelay({
        client,
        ledgerTable: process.env.LEDGER_TABLE!,
        events: events(),
        endpoints: () => [],
      });

    const before = await eventsOf(orderId);
    const runs = await Promise.all([
      relay().publishDue(Date.now(), 100),
      relay().publishDue(Date.now(), 100),
    ]);

    expect(before).toEqual([]);
    expect(runs.reduce((sum, count) => sum + count, 0)).toBeGreaterThanOrEqual(1);
    expect(summary(await eventsOf(orderId))).toEqual([['order.pending', 1]]);
    expect(await outboxLength(`order#${orderId}`)).toBe(0);
  });
});

describe('the feed', () => {
  it('lists events oldest first after a cursor, filtered by type, and none published within the last moments', async () => {
    const bodies = [
      chargeBody(),
      chargeBody(),
      { ...chargeBody(), customer_token: SEED.customerTokens.declined },
    ];
    for (const body of bodies) await call('charge', { body });
    await backgroundSettled();
    const now = Date.now();
    const at = (ms: number) => new EventStore({ client, table: process.env.EVENTS_TABLE!, now: () => ms });

    const recent = await at(now).page({ limit: 100 });
    const first = await at(now + FEED_SETTLE_MS).page({ limit: 1 });
    const rest = await at(now + FEED_SETTLE_MS).page({ limit: 100, after: first.position! });
    const failed = await at(now + FEED_SETTLE_MS).page({ limit: 100, type: 'order.failed' });

    const ours = (list: EventBody[]) =>
      list.filter((event) => bodies.some((body) => body.order_id === event.object.id));
    expect(ours(recent.events)).toEqual([]);
    expect(first.events).toHaveLength(1);
    expect(feedKeyOfCursor(Buffer.from(first.position!).toString('base64url'))).toBe(first.position);
    expect(ours([...first.events, ...rest.events]).map((event) => event.object.id)).toEqual(
      bodies.map((body) => body.order_id),
    );
    expect(ours(failed.events).map((event) => event.object.id)).toEqual([bodies[2]!.order_id]);
  });

  it('never lets a cursor pass an event whose write lands as late as a write may', async () => {
    // Far from every other test's events, on clocks of the test's own.
    const t = Date.parse('2099-01-01T00:00:00Z') + Math.floor(Math.random() * 1e9);
    const at = (ms: number) => new EventStore({ client, table: process.env.EVENTS_TABLE!, now: () => ms });
    const start = `${String(t - 60_000).padStart(13, '0')}#evt_${'0'.repeat(32)}`;
    const event = (id: string) =>
      eventBody({ type: 'order', id }, 1, { type: 'order.succeeded', at: t, data: {} });

    // Stamped as the relay stamps them, the slow one first; the other's write lands at once...
    await at(t).publish(event(`Fast-${t}`), t + 20, []);
    // ...and a reader pages just before the slow one's lands, as late as one may (tries and backoff).
    const before = await at(t + DYNAMODB_WRITE_WORST_MS - 1).page({ limit: 100, after: start });
    await at(t).publish(event(`Slow-${t}`), t, []);
    const next = await at(t + 60_000).page({ limit: 100, after: before.position! });

    expect(before.events).toEqual([]);
    expect(next.events.map((listed) => listed.object.id)).toEqual([`Slow-${t}`, `Fast-${t}`]);
  });
});

describe('one object’s events', () => {
  it('come in full pages after a cursor, however many others were published between them', async () => {
    const charged = await call('charge', { body: chargeBody() });
    const paymentId = String(charged.body.data.payment_id);
    for (let refund = 0; refund < 2; refund++) {
      // Others' events between each of the payment's.
      for (let other = 0; other < 3; other++) await call('charge', { body: chargeBody() });
      const refunded = await call('refund', {
        body: { payment_id: paymentId, amount: 10, description: 'Broken' },
      });
      expect(refunded.statusCode).toBe(200);
    }
    await backgroundSettled();

    const first = await events().page({ limit: 3, objectId: paymentId });
    const rest = await events().page({ limit: 3, objectId: paymentId, after: first.position! });
    const settled = await events().page({ limit: 100, objectId: paymentId, type: 'refund.settled' });

    expect(summary(first.events)).toEqual([
      ['refund.requested', 1],
      ['refund.settled', 2],
      ['refund.requested', 3],
    ]);
    expect(first.more).toBe(true);
    expect(summary(rest.events)).toEqual([['refund.settled', 4]]);
    expect(rest.more).toBe(false);
    expect(summary(settled.events)).toEqual([
      ['refund.settled', 2],
      ['refund.settled', 4],
    ]);
  });
});

describe('an order and a payment of one id', () => {
  it('are read apart with object_type; object_id alone lists both', async () => {
    // A payment, refunded; then an order the merchant gave that payment's id (digits are an order id too).
    const paid = await call('charge', { body: chargeBody() });
    const paymentId = String(paid.body.data.payment_id);
    expect(
      (await call('refund', { body: { payment_id: paymentId, description: 'Broken' } })).statusCode,
    ).toBe(200);
    expect((await call('charge', { body: chargeBody(paymentId) })).statusCode).toBe(200);
    await backgroundSettled();

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + FEED_SETTLE_MS });
    try {
      const listed = async (query: Record<string, string>) => {
        const answer = await call('listEvents', { query: { object_id: paymentId, ...query } });
        expect(answer.statusCode).toBe(200);
        return answer.body.data.events.map((event: EventBody) => `${event.object.type} ${event.type}`);
      };

      expect(await listed({})).toEqual([
        'payment refund.requested',
        'payment refund.settled',
        'order order.succeeded',
      ]);
      expect(await listed({ object_type: 'order' })).toEqual(['order order.succeeded']);
      expect(await listed({ object_type: 'payment' })).toEqual([
        'payment refund.requested',
        'payment refund.settled',
      ]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('GET /gateway/api/events', () => {
  it('gives the merchant its events after a cursor, a customer 403, an altered cursor 400', async () => {
    const body = chargeBody();
    await call('charge', { body });
    await backgroundSettled();
    const customerHeaders = { Authorization: `Bearer ${await customerToken(alice)}` };
    // The event is listed once published FEED_SETTLE_MS ago: the clock moved on, nothing waited for.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + FEED_SETTLE_MS });
    try {
      const all = await call('listEvents', { query: { object_id: body.order_id } });
      const after = await call('listEvents', { query: { cursor: all.body.data.next_cursor } });
      const customerAnswer = await call('listEvents', { headers: customerHeaders });
      const altered = await call('listEvents', { query: { cursor: `${all.body.data.next_cursor}x` } });

      expect(all.statusCode).toBe(200);
      expect(all.body.msg).toBe('Found 1 events');
      expect(all.body.data.events.map((event: EventBody) => event.type)).toEqual(['order.succeeded']);
      expect(after.body.data.events.map((event: EventBody) => event.object.id)).not.toContain(body.order_id);
      expect(customerAnswer.statusCode).toBe(403);
      expect(altered.statusCode).toBe(400);
    } finally {
      vi.useRealTimers();
    }
  });
});
