import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, requestFingerprint } from '../../lib/idempotency/fingerprint.ts';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    const value = { b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } };

    expect(canonicalJson(value)).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('writes no whitespace and escapes strings as JSON does', () => {
    expect(canonicalJson({ text: 'a "quoted"\nline', ü: 'é' })).toBe(
      '{"text":"a \\"quoted\\"\\nline","ü":"é"}',
    );
  });

  it('leaves out undefined properties, as an absent field is the same request', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
  });

  it('keeps null distinct from absent', () => {
    expect(canonicalJson({ a: 1, custom_2: null })).not.toBe(canonicalJson({ a: 1 }));
  });

  it('writes the same number however the client spelled it', () => {
    const spellings = ['345.67', '345.670', '3.4567e2', '34567E-2'].map((text) => JSON.parse(text));

    expect(new Set(spellings.map(canonicalJson))).toEqual(new Set(['345.67']));
    expect(canonicalJson(-0)).toBe('0');
  });

  it('refuses values JSON cannot carry instead of hashing something ambiguous', () => {
    expect(() => canonicalJson({ amount: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ amount: Number.POSITIVE_INFINITY })).toThrow(TypeError);
    expect(() => canonicalJson({ id: 1n })).toThrow(TypeError);
  });

  it('is the same for any key order, and parses back to the value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer(), (value, seed) => {
        const shuffled = shuffleKeys(value, seed);

        expect(canonicalJson(shuffled)).toBe(canonicalJson(value));
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 200 },
    );
  });
});

describe('requestFingerprint', () => {
  const body = { order_id: 'A-1', amount: 10, currency: 'LKR', itemList: [{ name: 'x' }, { name: 'y' }] };

  it('is a SHA-256 in hex', () => {
    expect(requestFingerprint({ body, path: undefined })).toMatch(/^[0-9a-f]{64}$/);
  });

  it('does not change with key order', () => {
    const reordered = {
      itemList: [{ name: 'x' }, { name: 'y' }],
      currency: 'LKR',
      amount: 10,
      order_id: 'A-1',
    };

    expect(requestFingerprint({ body: reordered, path: undefined })).toBe(
      requestFingerprint({ body, path: undefined }),
    );
  });

  it.each([
    ['the amount', { ...body, amount: 10.01 }],
    ['the currency', { ...body, currency: 'USD' }],
    ['the order id', { ...body, order_id: 'A-2' }],
    ['the order of item lines', { ...body, itemList: [{ name: 'y' }, { name: 'x' }] }],
    ['a field added', { ...body, custom_1: 'note' }],
  ])('changes with %s', (_, changed) => {
    expect(requestFingerprint({ body: changed, path: undefined })).not.toBe(
      requestFingerprint({ body, path: undefined }),
    );
  });

  it('tells the path from the body', () => {
    expect(requestFingerprint({ body: undefined, path: { id: '1' } })).not.toBe(
      requestFingerprint({ body: { id: '1' }, path: undefined }),
    );
    expect(requestFingerprint({ body: undefined, path: { id: '1' } })).not.toBe(
      requestFingerprint({ body: undefined, path: { id: '2' } }),
    );
  });
});

/** The same JSON value with every object's keys in a seeded random order. */
function shuffleKeys(value: unknown, seed: number): unknown {
  let state = seed >>> 0;
  const random = () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const keys = Object.keys(node).sort(() => random() - 0.5);
    return Object.fromEntries(keys.map((key) => [key, visit((node as Record<string, unknown>)[key])]));
  };
  return visit(value);
}
