import { describe, expect, it } from 'vitest';
import { readIdempotencyKey } from '../../lib/http/idempotency-key.ts';

const withHeader = (name: string, ...values: string[]) => ({
  headers: { [name]: values.at(-1)! },
  multiValueHeaders: { [name]: values },
});

describe('readIdempotencyKey', () => {
  it.each([
    ['a UUID', '6f1c2b3e-9a8d-4c7b-8e6f-5d4c3b2a1f0e'],
    ['one character', 'a'],
    ['255 characters', 'k'.repeat(255)],
    ['every allowed punctuation', 'order-42_retry.1:mobile'],
    ['digits only', '0123456789'],
  ])('accepts %s', (_, key) => {
    expect(readIdempotencyKey(withHeader('Idempotency-Key', key))).toEqual({ ok: true, key });
  });

  it('finds the header whatever its letter case', () => {
    expect(readIdempotencyKey(withHeader('IDEMPOTENCY-KEY', 'abc'))).toEqual({ ok: true, key: 'abc' });
    expect(readIdempotencyKey({ headers: { 'idempotency-key': 'abc' }, multiValueHeaders: {} })).toEqual({
      ok: true,
      key: 'abc',
    });
  });

  it('refuses a missing header, naming it', () => {
    const result = readIdempotencyKey({
      headers: { 'content-type': 'application/json' },
      multiValueHeaders: {},
    });

    expect(result).toEqual({
      ok: false,
      errors: [{ path: 'Idempotency-Key', message: expect.stringMatching(/is required/) }],
    });
  });

  it('refuses headers and multi-value headers that are null, as API Gateway sends them without headers', () => {
    const result = readIdempotencyKey({ headers: null as never, multiValueHeaders: null as never });

    expect(result.ok).toBe(false);
  });

  it.each([
    ['an empty value', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'abc def'],
    ['a slash', 'abc/def'],
    ['a hash (the record key separator)', 'abc#def'],
    ['a comma (two keys folded into one header)', 'abc, def'],
    ['non-ASCII letters', 'clé'],
    ['a newline', 'abc\n'],
  ])('refuses %s, naming the header', (_, key) => {
    const result = readIdempotencyKey(withHeader('Idempotency-Key', key));

    expect(result).toEqual({
      ok: false,
      errors: [{ path: 'Idempotency-Key', message: expect.stringMatching(/1 to 255 characters/) }],
    });
  });

  it('refuses two different keys on one request rather than picking one', () => {
    const result = readIdempotencyKey(withHeader('Idempotency-Key', 'first', 'second'));

    expect(result).toEqual({
      ok: false,
      errors: [{ path: 'Idempotency-Key', message: 'must be sent once' }],
    });
  });

  it('accepts the same key sent twice', () => {
    expect(readIdempotencyKey(withHeader('Idempotency-Key', 'same', 'same'))).toEqual({
      ok: true,
      key: 'same',
    });
  });
});
