import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it, vi } from 'vitest';
import {
  type CallerShareContext,
  CallerShares,
  callers,
  loadSharesConfig,
  type SharesConfig,
} from '../../lib/budget/caller-shares.ts';
import { ConfigError, loadConfig } from '../../lib/config/config.ts';
import { CallerRateLimitedError } from '../../lib/envelope/errors.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { SANDBOX_CREDENTIALS, SEED, sandboxGatewayEnv, startSandbox } from '../../sandbox/server.ts';
import { createTable } from '../../scripts/local-dynamodb.ts';
import { dynamoDbAt, freshStateTable } from '../helpers/state-table.ts';

/**
 * docs/contract.md "Each caller has a share" (issue "No one caller … can take the service from
 * everyone else", and issue 35's work-conserving shares): each caller's calls, counted in the
 * shared state table with one conditional write per PayHere call, are within its share up to its
 * share, spare beyond it (`beyond`: they take only slots nobody within a share waits for), and
 * refused beyond its cap with 429 caller_rate_limited and a Retry-After that says when.
 */
const DEFAULTS = loadSharesConfig({});
/** A moment 2 s into a 10-s window and 2 s into a minute: the windows are aligned to the epoch. */
const START = Date.UTC(2026, 10, 25, 9, 0, 2);

async function sharesAt(clock: { now: number }, config: SharesConfig = DEFAULTS, endpoint?: string) {
  const table = `state-${randomUUID()}`;
  await createTable(inject('dynamodbEndpoint'), table);
  return new CallerShares({
    client: dynamoDbAt(endpoint ?? inject('dynamodbEndpoint')),
    table,
    timeoutMs: 1_000,
    config,
    now: () => clock.now,
  });
}

/** What a refusal tells the caller: its status, code and Retry-After. */
const told = (error: unknown) => {
  const refused = error as CallerRateLimitedError;
  return { status: refused.httpStatus, code: refused.code, retryAfter: refused.headers?.['Retry-After'] };
};
const as = <T>(caller: CallerShareContext, work: () => Promise<T>) => callers.run(caller, work);
const refusal = (work: Promise<unknown>) =>
  work.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('a customer’s share', () => {
  it('is 3 PayHere calls per 10 s, 5 more spare ones; the 9th is refused until the window ends, and other customers are not', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const alice = { id: 'alice', kind: 'customer' } as const;

    const taken = [];
    for (let i = 0; i < 8; i++) taken.push(await as(alice, () => shares.take(false)));
    const refused = await refusal(as(alice, () => shares.take(false)));
    const bobs = await as({ id: 'bob', kind: 'customer' }, () => shares.take(false));

    expect(taken.map((call) => call?.beyond)).toEqual([false, false, false, true, true, true, true, true]);
    expect(refused).toBeInstanceOf(CallerRateLimitedError);
    expect(told(refused)).toEqual({ status: 429, code: 'caller_rate_limited', retryAfter: '8' });
    expect(bobs?.beyond).toBe(false);
    clock.now = START + 8_000;
    expect((await as(alice, () => shares.take(false)))?.beyond).toBe(false);
  });

  it('lets a customer pay five orders two seconds apart: none refused, the 4th and 5th spare', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const alice = { id: 'alice', kind: 'customer' } as const;

    const charges = [];
    for (let i = 0; i < 5; i++) {
      clock.now = START + i * 2_000;
      charges.push(await refusal(as(alice, () => shares.take(true))));
    }

    // (refusal() is undefined for a call counted.)
    expect(charges).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it('takes back a call given back (a read answered from shared data), once however often it is given back', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const alice = { id: 'alice', kind: 'customer' } as const;

    const taken = [];
    for (let i = 0; i < 8; i++) taken.push(await as(alice, () => shares.take(false)));
    await taken[0]!.giveBack();
    await taken[0]!.giveBack();
    const ninth = await refusal(as(alice, () => shares.take(false)));
    const tenth = await refusal(as(alice, () => shares.take(false)));

    expect(ninth).toBeUndefined();
    expect(tenth).toBeInstanceOf(CallerRateLimitedError);
  });

  it('is remembered beyond its share, then refused, by the container until its window ends', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const alice = { id: 'alice', kind: 'customer' } as const;
    const bob = { id: 'bob', kind: 'customer' } as const;

    for (let i = 0; i < 3; i++) await as(alice, () => shares.take(false));
    const withinShare = as(alice, async () => shares.likelyBeyondShare());
    for (let i = 0; i < 5; i++) await as(alice, () => shares.take(false));
    const beyondShare = as(alice, async () => shares.likelyBeyondShare());
    const before = as(alice, async () => shares.likelyRefused());
    await refusal(as(alice, () => shares.take(false)));

    expect(await withinShare).toBe(false);
    expect(await beyondShare).toBe(true);
    expect(await before).toBe(false);
    expect(await as(alice, async () => shares.likelyRefused())).toBe(true);
    expect(await as(bob, async () => shares.likelyRefused())).toBe(false);
    expect(await as(bob, async () => shares.likelyBeyondShare())).toBe(false);
    clock.now = START + 8_000;
    expect(await as(alice, async () => shares.likelyRefused())).toBe(false);
    expect(await as(alice, async () => shares.likelyBeyondShare())).toBe(false);
  });

  it('is 6 money requests a minute across call windows; the 7th waits for the minute', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const alice = { id: 'alice', kind: 'customer' } as const;

    for (let i = 0; i < 6; i++) {
      clock.now = START + i * 10_000;
      await as(alice, () => shares.take(true));
    }
    // A read still fits this window; another money request does not fit this minute.
    await as(alice, () => shares.take(false));
    const refused = await refusal(as(alice, () => shares.take(true)));

    expect(told(refused)).toEqual({ status: 429, code: 'caller_rate_limited', retryAfter: '8' });
    clock.now = START + 58_000;
    await as(alice, () => shares.take(true));
  });

  it('refuses a money request for the call window alone with the call window’s wait, not the minute’s', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const alice = { id: 'alice', kind: 'customer' } as const;

    for (let i = 0; i < 8; i++) await as(alice, () => shares.take(false));
    const refused = await refusal(as(alice, () => shares.take(true)));

    expect(told(refused)).toEqual({ status: 429, code: 'caller_rate_limited', retryAfter: '8' });
  });
});

describe('the merchant’s share and the notifications’', () => {
  it('the merchant makes 10 calls per 10 s within its share where a customer makes 3, and spare ones without a cap', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const merchant = { id: 'backoffice', kind: 'merchant' } as const;

    const taken = [];
    for (let i = 0; i < 40; i++) taken.push(await as(merchant, () => shares.take(i % 2 === 0)));

    expect(taken.map((call) => call?.beyond)).toEqual([...Array(10).fill(false), ...Array(30).fill(true)]);
  });

  it('a customer whose id is the merchant’s has a share of its own: the kinds are counted apart', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);

    for (let i = 0; i < 3; i++) await as({ id: 'same', kind: 'customer' }, () => shares.take(false));

    await as({ id: 'same', kind: 'merchant' }, () => shares.take(false));
  });

  it('PayHere’s notifications confirm at most 4 reads per 10 s together', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);
    const notifications = { id: 'payhere', kind: 'notifications' } as const;

    for (let i = 0; i < 4; i++) await as(notifications, () => shares.take(false));

    expect(await refusal(as(notifications, () => shares.take(false)))).toBeInstanceOf(CallerRateLimitedError);
  });
});

describe('what is not counted', () => {
  it('work with no caller (the settle job) takes nothing from anyone', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock);

    for (let i = 0; i < 20; i++) await shares.take(true);
  });

  it('a table that cannot be reached counts nothing and refuses nothing: PayHere’s budget still bounds the calls', async () => {
    const clock = { now: START };
    const shares = await sharesAt(clock, DEFAULTS, 'http://127.0.0.1:9');

    for (let i = 0; i < 5; i++) await as({ id: 'alice', kind: 'customer' }, () => shares.take(true));
  });
});

describe('loadSharesConfig', () => {
  it('has the issue’s defaults', () => {
    expect(DEFAULTS).toEqual({
      customer: { calls: 3, cap: 8, callWindowMs: 10_000, money: 6, moneyWindowMs: 60_000 },
      merchant: {
        calls: 10,
        cap: Number.POSITIVE_INFINITY,
        callWindowMs: 10_000,
        money: 120,
        moneyWindowMs: 60_000,
      },
      notifications: { calls: 4, cap: 4, callWindowMs: 10_000, money: 4, moneyWindowMs: 10_000 },
    });
  });

  it('reads each share from its variable', () => {
    const config = loadSharesConfig({
      CALLER_RATE_LIMIT: '5/10000',
      CALLER_RATE_CAP: '12',
      CALLER_MONEY_RATE_LIMIT: '20/120000',
      MERCHANT_RATE_CAP: '50',
      NOTIFY_RATE_CAP: 'none',
    });

    expect(config.customer).toEqual({
      calls: 5,
      cap: 12,
      callWindowMs: 10_000,
      money: 20,
      moneyWindowMs: 120_000,
    });
    expect(config.merchant.cap).toBe(50);
    expect(config.notifications.cap).toBe(Number.POSITIVE_INFINITY);
  });

  it('keeps a cap no smaller than its share when the share is raised and the cap left as it is', () => {
    expect(loadSharesConfig({ CALLER_RATE_LIMIT: '12/10000' }).customer.cap).toBe(12);
  });

  it.each([
    ['CALLER_RATE_LIMIT', '3 per 10s', /CALLER_RATE_LIMIT must be <requests>\/<milliseconds>/],
    ['MERCHANT_RATE_LIMIT', '0/10000', /MERCHANT_RATE_LIMIT must be/],
    [
      'CALLER_MONEY_RATE_LIMIT',
      '6/15000',
      /CALLER_MONEY_RATE_LIMIT's window must be a multiple of CALLER_RATE_LIMIT's/,
    ],
    [
      'CALLER_RATE_CAP',
      '2',
      /CALLER_RATE_CAP must be a whole number of calls no smaller than the share \(3\)/,
    ],
    ['MERCHANT_RATE_CAP', 'lots', /MERCHANT_RATE_CAP must be a whole number/],
  ])('refuses %s=%s at start-up', (name, value, message) => {
    expect(() => loadSharesConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadSharesConfig({ [name]: value })).toThrow(message);
  });
});

describe('the reserved share', () => {
  it('is never taken by a customer’s money call: with the rest of the budget used, a customer is refused and the merchant charges', async () => {
    const sandbox = await startSandbox({ rateLimit: false });
    try {
      const { table } = await freshStateTable();
      // 4 calls a minute, 1 of them reserved for money calls and tokens.
      const payhere = createPayHere(
        {
          ...loadConfig({
            GATEWAY_BASE_URL: sandbox.url,
            GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
            GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
          }),
          rateLimit: { limit: 4, windowMs: 60_000 },
        },
        { sharedState: table },
      );
      // The token and two reads: the three slots every call may take are used.
      await payhere.listSubscriptions(Date.now() + 5_000);
      await payhere.listSubscriptions(Date.now() + 5_000);
      const used = sandbox.counters();
      const charge = (orderId: string) =>
        payhere.charge(
          {
            type: 'PAYMENT',
            order_id: orderId,
            items: 'Reserved',
            currency: 'LKR',
            amount: 10,
            customer_token: SEED.customerTokens.success,
          },
          Date.now() + 1_500,
        );

      const customers = await refusal(callers.run({ id: 'alice', kind: 'customer' }, () => charge('C-1')));
      const merchants = await callers.run({ id: 'shop', kind: 'merchant' }, () => charge('M-1'));

      expect((used.token ?? 0) + (used.listSubscriptions ?? 0)).toBe(3);
      expect(customers).toMatchObject({ httpStatus: 429, code: 'rate_limited' });
      expect(merchants.data).toMatchObject({ order_id: 'M-1', status_code: 2 });
      expect(sandbox.counters().charge).toBe(1);
    } finally {
      await sandbox.close();
    }
  });

  it('takes a customer’s charge to the budget as a money call, which reads yield to, not as a read', async () => {
    const sandbox = await startSandbox({ rateLimit: false });
    try {
      const { table } = await freshStateTable();
      const payhere = createPayHere(loadConfig(sandboxGatewayEnv(sandbox.url)), { sharedState: table });
      await payhere.listSubscriptions(Date.now() + 5_000);
      const takes = vi.spyOn(table, 'takeSlot');
      /** What the last slot taken left the slots that free to (lib/budget/limiter.ts yieldsTo). */
      const yieldedBy = async (work: () => Promise<unknown>) => {
        takes.mockClear();
        await callers.run({ id: 'alice', kind: 'customer' }, work);
        return takes.mock.calls.at(-1)![6];
      };

      const read = await yieldedBy(() => payhere.listSubscriptions(Date.now() + 5_000));
      const charge = await yieldedBy(() =>
        payhere.charge(
          {
            type: 'PAYMENT',
            order_id: `C-${randomUUID()}`,
            items: 'Kind',
            currency: 'LKR',
            amount: 10,
            customer_token: SEED.customerTokens.success,
          },
          Date.now() + 5_000,
        ),
      );

      expect(read).toContain('money');
      expect(charge).not.toContain('money');
    } finally {
      await sandbox.close();
    }
  });
});
