import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { DYNAMODB_ATTEMPTS } from '../../lib/config/dynamodb.ts';
import { UpdateItemCommand } from '../../lib/dynamodb/index.ts';
import { recordKey } from '../../lib/idempotency/idempotent.ts';
import type { OrderState } from '../../lib/ledger/model.ts';
import { SETTLE_INTERVAL_MS } from '../../lib/orders/charge-engine.ts';
import { SEED } from '../../sandbox/server.ts';
import { expectEventsReplayOrders } from '../events/replay.ts';
import { injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { testLedger } from '../helpers/orders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { ownIdempotencyTable, settleJob } from '../helpers/settle.ts';
import { dynamoDbAt } from '../helpers/state-table.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';
import { checkoutRequest } from '../sandbox/signing.ts';

/**
 * The ledger believes only what PayHere's own records show, over random sequences: charges through
 * the service with and without lost answers or refusals, finished late or left pending by PayHere,
 * with the ledger's write applied and its answer lost or failing for good (the local DynamoDB's
 * faults); payments and subscriptions made in PayHere's SDK, notifications of every status and flow
 * in any order, replayed, with altered unsigned fields; PayHere's search up, down or answering
 * "pending"; PayHere's clock behind ours; settle runs, the clock moved past the settle delay. After every step,
 * checked against the sandbox's own records: never two payments for one order through the service;
 * a payment order `succeeded` only with PayHere's payment; no recurring order succeeded on other
 * terms; a notification never moves an unknown order to a chargeable state. At the end, once
 * PayHere's search answers and the settle job has run past its delays (the second look, the pending
 * limit), no order is unknown, pending by a charge or claimed, no key's answer contradicts its order, and
 * each order's events, published whatever requests left, replay to its state (tests/events/replay.ts).
 */
const store = await ownIdempotencyTable();
/** How far PayHere's time has run ahead of the service's (PayHere finishing a charge late). */
let ahead = 0;
const sandbox = useTestGateway({ beforeEachTest: 'nothing', now: () => Date.now() + ahead });
const ledger = testLedger();
/** The cases CI runs, shared by the property's test files (two, so that two workers run them at once). */
const CASES = propertyRuns(500);
const PARTS = 2;
const MINUTE = 60_000;
const LATER = 12 * MINUTE;
const DAY = 24 * 60 * MINUTE;
const NOWHERE = 'https://notify.example.invalid/payhere';
const MERCHANT = 'test-client';

/** Order 0 is charged through the service; order 1 is paid in the SDK; order 2 is a monthly subscription. */
const AMOUNTS = ['120.50', '300.00', '2500.00'] as const;
const TERMS = { order: ['1 Month', '1 Year'], other: ['1 Year', '1 Year'] } as const;

type ChargeFault =
  | 'none'
  | 'declined'
  | 'lostProcessed'
  | 'lostUnprocessed'
  | 'refused'
  | 'late'
  | 'pending'
  | 'dbLostClaim'
  | 'dbFailedOutcome';
type Flow = 'payment' | 'preapproval' | 'hold' | 'subscription';
type Step =
  | { kind: 'charge'; fault: ChargeFault; newKey: boolean }
  | { kind: 'sdkPay' }
  | { kind: 'subscribe'; terms: keyof typeof TERMS }
  | {
      kind: 'notify';
      order: 0 | 1 | 2;
      status: '2' | '0' | '-1' | '-2';
      flow: Flow;
      paymentId: 'real' | 'other' | 'none';
      terms: keyof typeof TERMS;
    }
  | { kind: 'replay' }
  | { kind: 'search'; state: 'up' | 'down' | 'pending' }
  | { kind: 'clock'; behind: boolean }
  | { kind: 'settle'; advance: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('charge' as const),
      fault: fc.constantFrom<ChargeFault>(
        'none',
        'declined',
        'lostProcessed',
        'lostUnprocessed',
        'refused',
        'late',
        'pending',
        'dbLostClaim',
        'dbFailedOutcome',
      ),
      newKey: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'sdkPay' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('subscribe' as const),
      terms: fc.constantFrom('order' as const, 'other' as const),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('notify' as const),
      order: fc.constantFrom(0 as const, 1 as const, 2 as const),
      status: fc.constantFrom('2' as const, '2' as const, '0' as const, '-1' as const, '-2' as const),
      flow: fc.constantFrom<Flow>('payment', 'payment', 'preapproval', 'hold', 'subscription'),
      paymentId: fc.constantFrom('real' as const, 'other' as const, 'none' as const),
      terms: fc.constantFrom('order' as const, 'other' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'replay' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('search' as const),
      state: fc.constantFrom('up' as const, 'down' as const, 'pending' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clock' as const), behind: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const), advance: fc.boolean() }) },
);

const CHARGEABLE: readonly OrderState[] = ['created', 'failed', 'cancelled'];

/** Writes of the order that change nothing (their condition never holds), to use up injected faults. */
async function drainFaults(orderId: string): Promise<void> {
  const client = dynamoDbAt(inject('dynamodbEndpoint'));
  for (let i = 0; i < DYNAMODB_ATTEMPTS + 1; i++) {
    await client
      .send(
        new UpdateItemCommand({
          TableName: process.env.LEDGER_TABLE!,
          Key: { pk: { S: `order#${orderId}` } },
          UpdateExpression: 'SET #never = :never',
          ConditionExpression: 'attribute_exists(#never)',
          ExpressionAttributeNames: { '#never': 'neverWritten' },
          ExpressionAttributeValues: { ':never': { BOOL: true } },
        }),
      )
      .catch(() => undefined);
  }
}

/** PayHere's own records of an order's payments (what a search answers, read past every fault). */
async function paymentsAtPayHere(
  orderId: string,
): Promise<Array<{ payment_id: number; status: string; amount: number }>> {
  const answer = await apiClient(sandbox, await accessToken(sandbox)).search(orderId);
  return answer.json.status === 1 ? answer.json.data : [];
}

/** Registers the property's share `part` (1 or 2) of its cases: a test file of its own runs each. */
export function evidenceProperty(part: number): void {
  const RUNS = Math.ceil(CASES / PARTS);
  describe('an order’s state follows PayHere’s evidence', () => {
    it(`over random charges, payments, notifications, faults and settle runs (part ${part} of ${PARTS}, ${RUNS} cases)`, async () => {
      let scenarios = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 7 }), async (steps) => {
          scenarios++;
          sandbox.faults.clear();
          const run = randomUUID().slice(0, 8);
          const orderIds: string[] = [];
          for (const [index, kind] of (['charge', 'payment', 'recurring'] as const).entries()) {
            const created = await call('createCheckout', {
              body: {
                kind,
                order_id: `Prop-${run}-${index}`,
                items: 'Property',
                currency: 'LKR',
                amount: Number(AMOUNTS[index]),
                ...(kind === 'recurring' ? { recurrence: '1 Month', duration: '1 Year' } : {}),
              },
            });
            orderIds.push(created.body.data.order_id);
          }
          const keys: string[] = [];
          const paid: Array<number | undefined> = [undefined, undefined, undefined];
          let subscriptionId: number | undefined;
          let lastForm: Record<string, string> | undefined;
          /**
           * The last notification's order, and whether it names another payment's success, or the
           * success of a subscription other than the one its order has.
           */
          let lastNotified = { order: 0, otherPayment: false, otherSubscription: false, failure: false };
          /**
           * The answers a notification may get: 200, or, for the notification of another payment
           * of an order that has one, or of another subscription of a recurring order that has one,
           * which cannot be checked with PayHere now, 429 (its order was checked lately) or 503
           * (PayHere did not answer), for PayHere to send it again; a payment's failure while its
           * order's charge is in flight, 503 too.
           */
          const answers = ({ order, otherPayment, otherSubscription, failure }: typeof lastNotified) =>
            (otherPayment && (before[order]?.paymentId ?? null) !== null) || otherSubscription
              ? [200, 429, 503]
              : // A payment's failure while the order's charge is in flight: sent again once it is answered.
                failure && before[order]?.charge?.inflight === true
                ? [200, 503]
                : [200];
          let search: 'up' | 'down' | 'pending' = 'up';
          sandbox.setClockOffset(0);
          let later = 0;

          const faults = (charge?: ChargeFault) => {
            sandbox.faults.clear();
            if (search === 'down')
              sandbox.faults.inject('search', { kind: 'status', status: 503 }, Number.POSITIVE_INFINITY);
            if (search === 'pending')
              sandbox.faults.inject('search', { kind: 'searchPending' }, Number.POSITIVE_INFINITY);
            if (charge === 'late') sandbox.faults.inject('charge', { kind: 'processLate', ms: 26_000 });
            if (charge === 'lostProcessed') sandbox.faults.inject('charge', { kind: 'reset' });
            if (charge === 'lostUnprocessed')
              sandbox.faults.inject('charge', { kind: 'resetBeforeProcessing' });
            if (charge === 'refused')
              sandbox.faults.inject('charge', {
                kind: 'status',
                status: 200,
                contentType: 'application/json',
                body: '{"status":-2,"msg":"Customer authentication failed","data":null}',
              });
          };

          // What the ledger holds before each step: the orders as the last step left them.
          let before = await Promise.all(orderIds.map((id) => ledger.getOrder(id)));
          for (const s of steps) {
            faults(s.kind === 'charge' ? s.fault : undefined);
            if (s.kind === 'charge') {
              const key = s.newKey || keys.length === 0 ? randomUUID() : keys.at(-1)!;
              if (!keys.includes(key)) keys.push(key);
              const token =
                s.fault === 'declined'
                  ? SEED.customerTokens.declined
                  : s.fault === 'pending'
                    ? SEED.customerTokens.pending
                    : SEED.customerTokens.success;
              const order = { table: process.env.LEDGER_TABLE!, keyPrefix: `order#${orderIds[0]}` } as const;
              // The claim's write applied and its answer lost; or the claim through and every write
              // after it failing (bounded: a later step's write may meet what is left of it).
              if (s.fault === 'dbLostClaim')
                await injectDynamoDbFault({
                  operation: 'UpdateItem',
                  ...order,
                  fault: { kind: 'applyAndLose' },
                });
              if (s.fault === 'dbFailedOutcome') {
                await injectDynamoDbFault({
                  operation: 'UpdateItem',
                  ...order,
                  fault: { kind: 'slow', ms: 0 },
                });
                await injectDynamoDbFault({
                  operation: 'UpdateItem',
                  ...order,
                  fault: { kind: 'status500' },
                  times: DYNAMODB_ATTEMPTS,
                });
              }
              const answer = await call('charge', {
                idempotencyKey: key,
                body: {
                  type: 'PAYMENT',
                  order_id: orderIds[0],
                  items: 'Property',
                  currency: 'LKR',
                  amount: Number(AMOUNTS[0]),
                  customer_token: token,
                },
              });
              if (answer.statusCode === 200) paid[0] = answer.body.data.payment_id;
              // What the charge left of its faults (it stopped before writing) is used up here, by
              // writes whose condition never holds, so that the next step meets a healthy ledger.
              if (s.fault === 'dbFailedOutcome') await drainFaults(orderIds[0]!);
            } else if (s.kind === 'sdkPay') {
              const done = await sandbox.completeCheckout(
                checkoutRequest(NOWHERE, {
                  order_id: orderIds[1],
                  items: 'Property',
                  amount: Number(AMOUNTS[1]),
                }),
              );
              paid[1] = done.payment_id ?? undefined;
            } else if (s.kind === 'subscribe') {
              const [recurrence, duration] = TERMS[s.terms];
              const done = await sandbox.completeCheckout(
                checkoutRequest(NOWHERE, {
                  kind: 'recurring',
                  order_id: orderIds[2],
                  items: 'Property',
                  amount: Number(AMOUNTS[2]),
                  recurrence,
                  duration,
                }),
              );
              subscriptionId = done.subscription_id ?? undefined;
              paid[2] = done.payment_id ?? undefined;
            } else if (s.kind === 'notify') {
              const [recurrence, duration] = TERMS[s.terms];
              const paymentId =
                s.paymentId === 'real'
                  ? paid[s.order]
                  : s.paymentId === 'other'
                    ? 320099000000 + scenarios
                    : undefined;
              lastForm = signed({
                order_id: orderIds[s.order]!,
                payhere_amount: AMOUNTS[s.order],
                status_code: s.status,
                ...(paymentId === undefined ? {} : { payment_id: String(paymentId) }),
                ...(s.flow === 'preapproval'
                  ? { customer_token: `${run}`.toUpperCase().padEnd(32, 'A') }
                  : {}),
                ...(s.flow === 'hold' ? { authorization_token: randomUUID() } : {}),
                ...(s.flow === 'subscription'
                  ? {
                      subscription_id: String(subscriptionId ?? 420099999999),
                      message_type: 'RECURRING_INSTALLMENT_SUCCESS',
                      recurring: '1',
                      item_recurrence: recurrence,
                      item_duration: duration,
                    }
                  : {}),
              });
              const ordered = before[s.order];
              lastNotified = {
                order: s.order,
                failure: (s.status === '-2' || s.status === '-1') && paymentId !== undefined,
                otherPayment: s.paymentId === 'other' && s.status === '2',
                otherSubscription:
                  s.flow === 'subscription' &&
                  s.status === '2' &&
                  ordered?.kind === 'recurring' &&
                  ordered.subscriptionId !== null &&
                  lastForm.subscription_id !== ordered.subscriptionId,
              };
              expect(answers(lastNotified)).toContain((await notify(lastForm)).statusCode);
            } else if (s.kind === 'replay') {
              if (lastForm) expect(answers(lastNotified)).toContain((await notify(lastForm)).statusCode);
            } else if (s.kind === 'search') {
              search = s.state;
            } else if (s.kind === 'clock') {
              sandbox.setClockOffset(s.behind ? -3_000 : 0);
            } else {
              if (s.advance) {
                later += LATER;
                ahead += LATER;
              }
              await settleJob(store, ledger, later).run();
            }
            sandbox.faults.clear();

            // Never two payments for one order through the service.
            expect((await paymentsAtPayHere(orderIds[0]!)).length).toBeLessThanOrEqual(1);
            const after = await Promise.all(orderIds.map((id) => ledger.getOrder(id)));
            for (const [index, order] of after.entries()) {
              // A payment order succeeded only with PayHere's payment of it.
              if (index < 2 && order?.state === 'succeeded') {
                const payments = await paymentsAtPayHere(order.orderId);
                expect(payments.some((payment) => payment.amount === Number(AMOUNTS[index]))).toBe(true);
              }
              // A notification never moves an unknown order to a chargeable state.
              if (s.kind === 'notify' || s.kind === 'replay') {
                if (before[index]?.state === 'unknown') expect(CHARGEABLE).not.toContain(order?.state);
              }
            }
            // No recurring order succeeded on other terms than its own.
            const recurring = after[2];
            if (recurring?.state === 'succeeded') {
              const api = apiClient(sandbox, await accessToken(sandbox));
              const record = (await api.get(`subscription/${recurring.subscriptionId}`)).json.data;
              expect(record.order_id).toBe(recurring.orderId);
              expect(record.recurring).toBe('Charged every month for 1 year');
            }
            before = after;
          }

          // Once PayHere's search answers and the settle delay has passed, two runs an interval apart
          // (the second look "not done" needs) resolve every unknown.
          sandbox.faults.clear();
          sandbox.setClockOffset(0);
          // Past every late charge, the settle delay and the pending limit, with second looks.
          ahead += DAY + LATER;
          // Runs a settle interval apart, as the schedule makes them, until one finds nothing to look
          // at (a run the budget cut short leaves its items to the next, as deployed).
          for (let run = 0; run < 6; run++) {
            const done = await settleJob(store, ledger, later + DAY + LATER + run * SETTLE_INTERVAL_MS).run();
            if (run > 0 && done.looked === 0) break;
          }
          const settled = await Promise.all(orderIds.map((id) => ledger.getOrder(id)));
          for (const order of settled) {
            expect(order?.state).not.toBe('unknown');
            expect(order?.reportedAt ?? null).toBeNull();
            expect(order?.charge?.inflight ?? false).toBe(false);
          }
          // No charge through the service left pending.
          if (settled[0]?.charge) expect(settled[0].state).not.toBe('pending');
          expect((await paymentsAtPayHere(orderIds[0]!)).length).toBeLessThanOrEqual(1);
          // No key's answer contradicts its order.
          const charged = settled[0]!;
          for (const key of keys) {
            const record = await store.get(recordKey('charge', MERCHANT, key));
            if (!record) continue; // provably not sent: released
            expect(record.state).toBe('complete');
            if (record.response!.statusCode === 200)
              expect(['succeeded', 'chargedback']).toContain(charged.state);
            if (charged.charge?.key === record.key) {
              if (charged.state === 'succeeded') expect(record.response!.statusCode).toBe(200);
              // (202: PayHere answered pending, and its records later showed no payment.)
              if (charged.state === 'failed') expect([202, 402, 422]).toContain(record.response!.statusCode);
            }
          }
          // Every move became one event, in order: they replay to the ledger's state.
          await expectEventsReplayOrders(settled.filter((order) => order !== undefined));
        }),
        { numRuns: RUNS },
      );
      expect(scenarios).toBeGreaterThanOrEqual(RUNS);
    }, 600_000);
  });
}
