import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { CallerShares, callers, loadSharesConfig, type ShareTaken } from '../../lib/budget/caller-shares.ts';
import type { GatewayLimiter } from '../../lib/budget/limiter.ts';
import { CallerRateLimitedError, RateLimitedError } from '../../lib/envelope/errors.ts';
import { GatewayClient } from '../../lib/gateway/client.ts';
import { Reservation } from '../../lib/gateway/reservation.ts';
import type { Transport } from '../../lib/gateway/transport.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { createTable } from '../../scripts/local-dynamodb.ts';
import { dynamoDbAt } from '../helpers/state-table.ts';

/**
 * A call counts its caller's share (one write), then asks PayHere's budget for a slot. When the
 * budget refuses it (429 rate_limited: no slot before its deadline), nothing reaches PayHere, and
 * the count is given back: a caller pays its share for calls made, not for a busy budget.
 */
async function setUp() {
  const table = `state-${randomUUID()}`;
  await createTable(inject('dynamodbEndpoint'), table);
  const shares = new CallerShares({
    client: dynamoDbAt(inject('dynamodbEndpoint')),
    table,
    timeoutMs: 1_000,
    config: loadSharesConfig({}),
  });
  let sent = 0;
  // The budget has no slot before any deadline: every acquire is refused, as SharedLimiter does.
  const limiter: GatewayLimiter = {
    acquire: async () => {
      throw new RateLimitedError('Too many requests to the payment gateway right now.', 5);
    },
    pause: async () => {},
  };
  const client = new GatewayClient({
    transport: {
      send: async () => {
        sent++;
        throw new Error('not expected: nothing may reach PayHere');
      },
      preload: async () => {},
      connectEarly: () => {},
    } as unknown as Transport,
    credentials: {
      get: async () => ({
        appId: 'app',
        appSecret: 'secret',
        merchantId: 'merchant',
        merchantSecret: 'secret',
        appMerchantSecrets: [],
      }),
      invalidate: () => {},
    },
    limiter,
    shares,
    tokens: () => ({
      get: async () => 'token',
      invalidate: async () => {},
      fetchedHere: () => true,
      renew: async () => 'token',
    }),
  });
  return { client, sent: () => sent };
}

const alice = { id: `alice-${randomUUID()}`, kind: 'customer' } as const;
const outcome = (work: Promise<unknown>) =>
  work.then(
    () => 'answered',
    (error: unknown) =>
      error instanceof CallerRateLimitedError
        ? 'caller_rate_limited'
        : error instanceof RateLimitedError
          ? 'rate_limited'
          : String(error),
  );

describe('a call the budget refuses (never sent)', () => {
  it('costs its caller none of its share: a customer refused 8 times by a busy budget is not then refused as over its cap', async () => {
    const { client, sent } = await setUp();
    const read = () =>
      callers.run(alice, () =>
        outcome(
          client.call({
            method: 'GET',
            path: '/merchant/v1/payment/search?order_id=o1',
            money: false,
            deadline: Date.now() + 20_000,
          }),
        ),
      );

    const answers: string[] = [];
    for (let i = 0; i < 9; i++) {
      answers.push(await read());
      // The count given back lands after the refusal's answer, as a request's writes after its answer do.
      await backgroundSettled();
    }

    expect(sent()).toBe(0);
    // Before: the 9th was caller_rate_limited, 8 calls counted and none made.
    expect(answers).toEqual(Array(9).fill('rate_limited'));
  });

  it('costs a customer no money request: six charges the budget refused do not lock its payments for the minute', async () => {
    const { client, sent } = await setUp();
    const bob = { id: `bob-${randomUUID()}`, kind: 'customer' } as const;
    const charge = () =>
      callers.run(bob, () =>
        outcome(
          client.call({
            method: 'POST',
            path: '/merchant/v1/payment/charge',
            body: {},
            money: true,
            deadline: Date.now() + 20_000,
          }),
        ),
      );

    const answers: string[] = [];
    for (let i = 0; i < 7; i++) {
      answers.push(await charge());
      await backgroundSettled();
    }

    expect(sent()).toBe(0);
    // Before: the 7th was caller_rate_limited ("Too many payment requests") to the minute's end.
    expect(answers).toEqual(Array(7).fill('rate_limited'));
  });
});

describe('a reservation whose slot the budget refused', () => {
  it('gives its caller’s share back when its call is not made', async () => {
    // Prepare: the share was counted beside the lookup; the slot was refused.
    let givenBack = 0;
    const taken = { beyond: false, giveBack: async () => void givenBack++ } as unknown as ShareTaken;
    const refused = new RateLimitedError('Too many requests to the payment gateway right now.', 5);
    const reservation = new Reservation(
      Promise.resolve(taken),
      Promise.reject(refused),
      new AbortController(),
    );

    // Act
    const outcome = await reservation.use().catch((error: unknown) => error);
    await backgroundSettled();

    // Assess
    expect(outcome).toBe(refused);
    expect(givenBack).toBe(1);
  });
});
