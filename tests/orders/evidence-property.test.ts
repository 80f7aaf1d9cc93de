import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { recordKey } from '../../lib/idempotency/idempotent.ts';
import type { OrderState } from '../../lib/ledger/model.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { testLedger } from '../helpers/orders.ts';
import { propertyRuns } from '../helpers/property-runs.ts';
import { ownIdempotencyTable, settleJob } from '../helpers/settle.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';
import { checkoutRequest } from '../sandbox/signing.ts';

/**
 * The ledger believes only what PayHere's own records show, over random sequences: charges through
 * the service with and without lost answers or refusals, payments and subscriptions made in PayHere's
 * SDK, notifications of every status and flow in any order, replayed, with altered unsigned fields,
 * PayHere's search up or down, settle runs, the clock moved past the settle delay. After every step,
 * checked against the sandbox's own records: never two payments for one order through the service;
 * a payment order `succeeded` only with PayHere's payment; no recurring order succeeded on other
 * terms; a notification never moves an unknown order to a chargeable state. At the end, once
 * PayHere's search answers and the settle delay has passed, one settle run resolves every unknown,
 * and no key's answer contradicts its order.
 */
const store = await ownIdempotencyTable();
const sandbox = useTestGateway({ beforeEachTest: 'nothing' });
const ledger = testLedger();
const RUNS = propertyRuns(500);
const MINUTE = 60_000;
const LATER = 12 * MINUTE;
const NOWHERE = 'https://notify.example.invalid/payhere';
const MERCHANT = 'test-client';

/** Order 0 is charged through the service; order 1 is paid in the SDK; order 2 is a monthly subscription. */
const AMOUNTS = ['120.50', '300.00', '2500.00'] as const;
const TERMS = { order: ['1 Month', '1 Year'], other: ['1 Year', '1 Year'] } as const;

type ChargeFault = 'none' | 'declined' | 'lostProcessed' | 'lostUnprocessed' | 'refused';
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
  | { kind: 'search'; up: boolean }
  | { kind: 'settle'; advance: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('charge' as const),
      fault: fc.constantFrom<ChargeFault>('none', 'declined', 'lostProcessed', 'lostUnprocessed', 'refused'),
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
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('search' as const), up: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const), advance: fc.boolean() }) },
);

const CHARGEABLE: readonly OrderState[] = ['created', 'failed', 'cancelled'];

/** PayHere's own records of an order's payments (what a search answers, read past every fault). */
async function paymentsAtPayHere(
  orderId: string,
): Promise<Array<{ payment_id: number; status: string; amount: number }>> {
  const answer = await apiClient(sandbox, await accessToken(sandbox)).search(orderId);
  return answer.json.status === 1 ? answer.json.data : [];
}

describe('an order’s state follows PayHere’s evidence', () => {
  it('over random charges, payments, notifications, faults and settle runs', async () => {
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
        let searchDown = false;
        let later = 0;

        const faults = (charge?: ChargeFault) => {
          sandbox.faults.clear();
          if (searchDown)
            sandbox.faults.inject('search', { kind: 'status', status: 503 }, Number.POSITIVE_INFINITY);
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

        for (const s of steps) {
          const before = await Promise.all(orderIds.map((id) => ledger.getOrder(id)));
          faults(s.kind === 'charge' ? s.fault : undefined);
          if (s.kind === 'charge') {
            const key = s.newKey || keys.length === 0 ? randomUUID() : keys.at(-1)!;
            if (!keys.includes(key)) keys.push(key);
            const token = s.fault === 'declined' ? SEED.customerTokens.declined : SEED.customerTokens.success;
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
              ...(s.flow === 'preapproval' ? { customer_token: `${run}`.toUpperCase().padEnd(32, 'A') } : {}),
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
            expect((await notify(lastForm)).statusCode).toBe(200);
          } else if (s.kind === 'replay') {
            if (lastForm) expect((await notify(lastForm)).statusCode).toBe(200);
          } else if (s.kind === 'search') {
            searchDown = !s.up;
          } else {
            if (s.advance) later += LATER;
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
        }

        // Once PayHere's search answers and the settle delay has passed, one run resolves every unknown.
        sandbox.faults.clear();
        await settleJob(store, ledger, later + LATER).run();
        const settled = await Promise.all(orderIds.map((id) => ledger.getOrder(id)));
        for (const order of settled) {
          expect(order?.state).not.toBe('unknown');
          expect(order?.reportedAt ?? null).toBeNull();
        }
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
            if (charged.state === 'failed') expect([402, 422]).toContain(record.response!.statusCode);
          }
        }
      }),
      { numRuns: RUNS },
    );
    expect(scenarios).toBeGreaterThanOrEqual(RUNS);
  }, 600_000);
});
