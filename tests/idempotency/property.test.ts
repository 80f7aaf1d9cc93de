import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ChargeRequest } from '../../lib/schemas/charge.ts';
import { CURRENCIES } from '../../lib/schemas/fields.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { chargeBody } from './fixtures.ts';

/**
 * What counts as "the same request" under one key, over random inputs: any change of what is
 * charged is refused with 422 and reaches nobody; any change of spelling only is replayed.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

const RUNS = 20;

function baseCharge() {
  return chargeBody({
    itemList: [
      { name: 'Hire from Colombo 1 to Colombo 4', number: 'HIRE_12345', quantity: 1, unit_amount: 300 },
      { name: 'Tax', number: 'TAX_12345', quantity: 1, unit_amount: 45.67 },
    ],
    custom_1: 'note',
    custom_2: null,
  });
}
type Charge = ChargeRequest;

/** One field of the charge changed to another valid value. */
const mutation: fc.Arbitrary<(body: Charge) => Charge> = fc.oneof(
  fc.integer({ min: 1, max: 10_000_000 }).map((cents) => (body: Charge) => ({
    ...body,
    amount: cents / 100 === body.amount ? cents / 100 + 0.01 : cents / 100,
  })),
  fc
    .constantFrom(...CURRENCIES.filter((currency) => currency !== 'LKR'))
    .map((currency) => (body: Charge) => ({ ...body, currency }) as Charge),
  fc.string({ minLength: 1, maxLength: 128 }).map((token) => (body: Charge) => ({
    ...body,
    customer_token: token === body.customer_token ? `${token}X` : token,
  })),
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 63 }).map((orderId) => (body: Charge) => ({
    ...body,
    order_id: orderId === body.order_id ? `${orderId}X` : orderId,
  })),
);

describe('the same key with a different request', () => {
  it('is refused with 422 idempotency_key_reused and reaches no gateway (charge body)', async () => {
    await fc.assert(
      fc.asyncProperty(mutation, async (mutate) => {
        const key = randomUUID();
        const body = baseCharge();
        const first = await call('charge', { body, idempotencyKey: key });
        const chargesAfterFirst = sandbox.counters().charge;

        const reused = await call('charge', { body: mutate(body), idempotencyKey: key });

        expect(first.statusCode).toBe(200);
        expect(reused.statusCode).toBe(422);
        expect(reused.body.data.code).toBe('idempotency_key_reused');
        expect(sandbox.counters().charge).toBe(chargesAfterFirst);
        expect(sandbox.counters().search ?? 0).toBe(0);
      }),
      { numRuns: RUNS },
    );
  });

  it('is refused with 422 and reaches no gateway when only the path differs (subscription retry)', async () => {
    const subscriptionIds = fc.uniqueArray(fc.stringMatching(/^[1-9][0-9]{0,11}$/), {
      minLength: 2,
      maxLength: 2,
    });
    await fc.assert(
      fc.asyncProperty(subscriptionIds, async ([first, second]) => {
        const key = randomUUID();
        await call('retrySubscription', { id: first!, idempotencyKey: key });
        const retriesAfterFirst = sandbox.counters().retry;

        const reused = await call('retrySubscription', { id: second!, idempotencyKey: key });

        expect(reused.statusCode).toBe(422);
        expect(reused.body.data.code).toBe('idempotency_key_reused');
        expect(sandbox.counters().retry).toBe(retriesAfterFirst);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('the same key with the same request spelled differently', () => {
  it('is replayed: key order, whitespace, number and string escapes do not matter', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.integer(), async (firstSeed, secondSeed) => {
        const key = randomUUID();
        const body = baseCharge();
        const chargesBefore = sandbox.counters().charge ?? 0;

        const first = await call('charge', { body: noisyJson(body, firstSeed), idempotencyKey: key });
        const repeat = await call('charge', { body: noisyJson(body, secondSeed), idempotencyKey: key });

        expect(first.statusCode).toBe(200);
        expect(repeat.statusCode).toBe(200);
        expect(repeat.headers['Idempotent-Replayed']).toBe('true');
        expect(repeat.raw).toBe(first.raw);
        expect(sandbox.counters().charge).toBe(chargesBefore + 1);
      }),
      { numRuns: RUNS },
    );
  });

  it('noisyJson really writes different text for the same value', () => {
    const body = baseCharge();
    const spellings = new Set(Array.from({ length: 10 }, (_, seed) => noisyJson(body, seed)));

    expect(spellings.size).toBeGreaterThan(5);
    for (const text of spellings) expect(JSON.parse(text)).toEqual(body);
  });
});

/**
 * `value` as JSON text with a seeded choice of key order, whitespace between tokens, spelling of
 * numbers (345.67, 345.6700, 3.4567e+2) and \u escapes in strings: the same JSON value each time.
 */
function noisyJson(value: unknown, seed: number): string {
  let state = seed >>> 0 || 1;
  const random = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
  const pick = <T>(options: readonly T[]) => options[Math.floor(random() * options.length)]!;
  const space = () => pick(['', '', ' ', '  ', '\n', '\t', '\r\n    ']);
  const number = (n: number) => {
    const plain = JSON.stringify(n);
    return pick([plain, plain.includes('.') ? `${plain}00` : `${plain}.0`, n.toExponential()]);
  };
  const string = (s: string) =>
    `"${[...s]
      .map((char) => {
        const escaped = JSON.stringify(char).slice(1, -1);
        if (escaped !== char || random() < 0.7) return escaped;
        return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
      })
      .join('')}"`;
  const write = (node: unknown): string => {
    if (typeof node === 'number') return number(node);
    if (typeof node === 'string') return string(node);
    if (node === null || typeof node !== 'object') return JSON.stringify(node);
    if (Array.isArray(node)) return `[${node.map((item) => `${space()}${write(item)}${space()}`).join(',')}]`;
    const keys = Object.keys(node).sort(() => random() - 0.5);
    const members = keys.map(
      (key) =>
        `${space()}${string(key)}${space()}:${space()}${write((node as Record<string, unknown>)[key])}${space()}`,
    );
    return `{${members.join(',')}}`;
  };
  return `${space()}${write(value)}${space()}`;
}
