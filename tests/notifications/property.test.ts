import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { testLedger } from '../helpers/orders.ts';

/**
 * Random sequences of notifications (duplicates, reorderings, tampered unsigned fields, wrong
 * amounts and currencies, bad signatures, unknown orders and status codes) for random orders: the
 * ledger ends where a model of SPEC.md's rules says the signed, verified, in-order notifications
 * lead, and holds no token or card from a notification that should not have acted.
 */
useTestGateway({ beforeEachTest: 'nothing' });
const ledger = testLedger();

type Kind = 'payment' | 'preapproval' | 'authorize';
type State = 'created' | 'pending' | 'succeeded' | 'failed' | 'cancelled' | 'chargedback';

interface Event {
  order: number;
  status: '2' | '3' | '0' | '-1' | '-2' | '-3' | '9';
  amount: 'right' | 'wrong';
  currency: 'right' | 'wrong';
  signature: 'good' | 'bad' | 'other-merchant';
  token: number | null;
  card: number | null;
  unknownOrder: boolean;
}

const PROGRESS: Record<State, number> = {
  created: 0,
  pending: 1,
  failed: 2,
  cancelled: 2,
  succeeded: 3,
  chargedback: 4,
};
const TOKENS = ['A', 'B'].map((letter) => letter.repeat(32));
const CARDS = ['************1111', '************2222'];

const event: fc.Arbitrary<Event> = fc.record({
  order: fc.nat({ max: 2 }),
  status: fc.constantFrom('2', '2', '3', '3', '0', '-1', '-2', '-3', '9'),
  amount: fc.constantFrom('right', 'right', 'right', 'wrong'),
  currency: fc.constantFrom('right', 'right', 'right', 'wrong'),
  signature: fc.constantFrom('good', 'good', 'good', 'good', 'bad', 'other-merchant'),
  token: fc.option(fc.nat({ max: TOKENS.length - 1 }), { nil: null }),
  card: fc.option(fc.nat({ max: CARDS.length - 1 }), { nil: null }),
  unknownOrder: fc.constantFrom(false, false, false, false, false, false, false, false, false, true),
});

const scenario = fc.record({
  kinds: fc.tuple(
    ...[0, 1, 2].map(() =>
      fc.constantFrom<Kind>('payment', 'preapproval', 'preapproval', 'authorize', 'authorize'),
    ),
  ),
  // Delivered twice, in any order: PayHere may redeliver, and a network may reorder.
  events: fc
    .array(event, { minLength: 1, maxLength: 8 })
    .chain((events) => fc.shuffledSubarray([...events, ...events], { minLength: events.length })),
});

interface Model {
  state: State;
  token: string | null;
  card: string | null;
}

/** What SPEC.md says the order becomes: only verified, matching, known, forward moves act. */
function expected(kinds: Kind[], events: Event[]): Model[] {
  const orders: Model[] = kinds.map(() => ({ state: 'created', token: null, card: null }));
  const tokenOwner = new Map<string, number>();
  for (const e of events) {
    if (e.signature !== 'good' || e.unknownOrder) continue;
    const kind = kinds[e.order]!;
    const order = orders[e.order]!;
    const amountMatches = kind === 'preapproval' || e.amount === 'right';
    if (!amountMatches || e.currency !== 'right') continue;
    const to: State | undefined = {
      '2': 'succeeded' as const,
      '3': kind === 'authorize' ? ('succeeded' as const) : undefined,
      '0': 'pending' as const,
      '-1': 'cancelled' as const,
      '-2': 'failed' as const,
      '-3': 'chargedback' as const,
      '9': undefined,
    }[e.status];
    if (!to || to === order.state) continue;
    const forward = to === 'chargedback' ? order.state === 'succeeded' : PROGRESS[to] > PROGRESS[order.state];
    if (!forward) continue;
    const token = e.token === null ? null : TOKENS[e.token]!;
    const bindsToken = to === 'succeeded' && kind !== 'payment' && token !== null;
    if (bindsToken) {
      const owner = tokenOwner.get(`${kind}:${token}`);
      if (owner !== undefined && owner !== e.order) continue; // refused: another order's token
      tokenOwner.set(`${kind}:${token}`, e.order);
      order.token = token;
    }
    order.state = to;
    if (e.card !== null) order.card = CARDS[e.card]!;
  }
  return orders;
}

describe('notifications in any order, duplicated, tampered', () => {
  it('leave each order where the signed, in-order notifications lead, and nothing else recorded', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ kinds, events }) => {
        const run = randomUUID().slice(0, 8);
        // Tokens are unique to the run: the ledger remembers them for good.
        const tokenOf = (index: number) => `${TOKENS[index]!.slice(0, 24)}${run}`.toUpperCase();
        const holdOf = (index: number) => `aaaaaaaa-bbbb-4ccc-8ddd-${`${run}${index}`.padEnd(12, '0')}`;
        const orderIds: string[] = [];
        for (const kind of kinds) {
          const created = await call('createCheckout', {
            body: {
              kind,
              items: 'Property',
              currency: 'LKR',
              ...(kind === 'preapproval' ? {} : { amount: 100 }),
            },
          });
          orderIds.push(created.body.data.order_id);
        }
        for (const e of events) {
          const orderId = e.unknownOrder ? `Unknown-${run}` : orderIds[e.order]!;
          const fields = {
            order_id: orderId,
            payhere_amount: e.amount === 'right' ? '100.00' : '99.99',
            payhere_currency: e.currency === 'right' ? 'LKR' : 'USD',
            status_code: e.status,
            ...(e.signature === 'other-merchant' ? { merchant_id: '7777777' } : {}),
            ...(e.token === null
              ? {}
              : { customer_token: tokenOf(e.token), authorization_token: holdOf(e.token) }),
            ...(e.card === null ? {} : { card_no: CARDS[e.card]! }),
          };
          const form = signed(fields);
          const answer = await notify(e.signature === 'bad' ? { ...form, md5sig: 'F'.repeat(32) } : form);
          expect(answer.statusCode).toBe(e.signature === 'good' ? 200 : 401);
        }

        const model = expected(kinds, events);
        for (const [index, orderId] of orderIds.entries()) {
          const order = await ledger.getOrder(orderId);
          const want = model[index]!;
          expect(order?.state).toBe(want.state);
          expect(order?.card?.card_no ?? null).toBe(want.card);
          if (kinds[index] === 'preapproval') {
            expect(order?.customerToken ?? null).toBe(
              want.token === null ? null : tokenOf(TOKENS.indexOf(want.token)),
            );
          } else {
            expect(order?.customerToken ?? null).toBeNull();
          }
          if (kinds[index] === 'authorize') {
            expect(order?.authorizationToken ?? null).toBe(
              want.token === null ? null : holdOf(TOKENS.indexOf(want.token)),
            );
          } else {
            expect(order?.authorizationToken ?? null).toBeNull();
          }
        }
      }),
      {
        numRuns: 100,
        // Two customers' pre-approvals reporting one token: the second must be refused.
        examples: [
          [
            {
              kinds: ['preapproval', 'preapproval', 'authorize'],
              events: [
                {
                  order: 0,
                  status: '2',
                  amount: 'right',
                  currency: 'right',
                  signature: 'good',
                  token: 0,
                  card: null,
                  unknownOrder: false,
                },
                {
                  order: 1,
                  status: '2',
                  amount: 'right',
                  currency: 'right',
                  signature: 'good',
                  token: 0,
                  card: 1,
                  unknownOrder: false,
                },
              ],
            },
          ],
        ],
      },
    );
  });
});
