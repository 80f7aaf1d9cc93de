import { describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES } from '../../lib/reads/store.ts';
import { type Index, PART, partsFor, partsOf } from '../../lib/reads/subscription-pages.ts';

/**
 * lib/reads/subscription-pages.ts: how a snapshot of PayHere's subscription list is cut into parts
 * the table keeps, and which parts a page reads (docs/contract.md "Subscription lists").
 */
const record = (id: number, bytes = 700) => ({
  subscription_id: id,
  order_id: `Order-${id}`,
  status: 'ACTIVE',
  currency: 'LKR',
  amount: 2500,
  description: 'x'.repeat(bytes),
});
const newestFirst = (count: number, bytes?: number) =>
  Array.from({ length: count }, (_, i) => record(420_080_000_000 + count - i, bytes));

describe('a snapshot’s parts', () => {
  it('hold at most 100 records each, in the list’s order', () => {
    const records = newestFirst(250);

    const parts = partsOf(records);

    expect(parts.map((part) => part.length)).toEqual([PART, PART, 50]);
    expect(parts.flat()).toEqual(records);
  });

  it('hold at most what the table keeps of one answer, however large the records', () => {
    const records = newestFirst(250, 9_000);

    const parts = partsOf(records);

    for (const part of parts)
      expect(Buffer.byteLength(JSON.stringify(part))).toBeLessThanOrEqual(MAX_ANSWER_BYTES);
    expect(parts.length).toBeGreaterThan(3);
    expect(parts.flat()).toEqual(records);
  });
});

describe('the parts a page reads', () => {
  const index: Index = {
    count: 250,
    parts: [
      { first: 250, last: 151, count: 100 },
      { first: 150, last: 51, count: 100 },
      { first: 50, last: 1, count: 50 },
    ],
  };

  it.each([
    ['the first page', Number.POSITIVE_INFINITY, 100, [0, 1]],
    ['a page after the middle of the first part', 200, 100, [0, 1]],
    ['a page after the first part’s last', 151, 100, [1, 2]],
    ['a small page', 200, 10, [0, 1]],
    ['the last part', 51, 100, [2]],
    ['past the end', 1, 100, []],
  ] as const)('%s, for every subscription', (_, below, limit, parts) => {
    expect(partsFor(index, below, limit, undefined)).toEqual(parts);
  });

  it('for a customer, only the parts holding its own, up to one more than a page', () => {
    expect(partsFor(index, Number.POSITIVE_INFINITY, 2, [240, 230, 120, 10])).toEqual([0, 1]);
    expect(partsFor(index, Number.POSITIVE_INFINITY, 3, [240, 230, 120, 10])).toEqual([0, 1, 2]);
    // An id no part holds (newer than the snapshot) reads nothing.
    expect(partsFor(index, Number.POSITIVE_INFINITY, 5, [999])).toEqual([]);
  });
});
