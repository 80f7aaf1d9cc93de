import { describe, expect, it } from 'vitest';
import { headerValues } from '../../lib/http/headers.ts';

describe('headerValues', () => {
  it('finds a header whatever its letter case, in either map', () => {
    expect(headerValues({ headers: { 'X-Thing': 'a' }, multiValueHeaders: {} }, 'x-thing')).toEqual(['a']);
    expect(headerValues({ headers: {}, multiValueHeaders: { 'X-THING': ['a'] } }, 'X-Thing')).toEqual(['a']);
  });

  it('returns every value of a repeated header, from the multi-value map first', () => {
    const event = {
      headers: { 'x-thing': 'b' },
      multiValueHeaders: { 'x-thing': ['a', 'b'], 'X-Thing': ['c'] },
    };

    expect(headerValues(event, 'X-Thing')).toEqual(['a', 'b', 'c']);
  });

  it('falls back to the single-value map, skipping absent values', () => {
    const event = { headers: { 'x-thing': 'a', 'X-THING': undefined }, multiValueHeaders: { other: ['z'] } };

    expect(headerValues(event, 'x-thing')).toEqual(['a']);
  });

  it('finds nothing in null maps (API Gateway sends null for a request without headers)', () => {
    expect(headerValues({ headers: null as never, multiValueHeaders: null as never }, 'x-thing')).toEqual([]);
  });

  it('reads the headers of the maps themselves, never of their prototype', () => {
    const headers = Object.create({ 'x-thing': 'inherited' }) as Record<string, string>;

    expect(headerValues({ headers, multiValueHeaders: {} }, 'x-thing')).toEqual([]);
    const named = JSON.parse('{"__proto__": "a"}') as Record<string, string>;
    expect(headerValues({ headers: named, multiValueHeaders: {} }, '__proto__')).toEqual(['a']);
  });
});
