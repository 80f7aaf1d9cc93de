import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { InvalidRequestError } from '../../lib/envelope/errors.ts';
import { parse } from '../../lib/http/validation.ts';
import { ChargeRequest } from '../../lib/schemas/charge.ts';
import { OrderPath } from '../../lib/schemas/paths.ts';

const Line = z.strictObject({ name: z.string().check(z.minLength(1)), quantity: z.int().check(z.gte(1)) });
const Order = z.strictObject({
  id: z.string().check(z.maxLength(4)),
  kind: z.enum(['A', 'B']),
  lines: z.array(Line).check(z.maxLength(2)),
  note: z.optional(z.nullable(z.string())),
});

describe('parse', () => {
  it('returns the parsed value of a valid input', () => {
    // Prepare
    const input = { id: 'ab', kind: 'A', lines: [{ name: 'x', quantity: 2 }] };

    // Act
    const result = parse(Order, input, '');

    // Assess
    expect(result).toEqual({ ok: true, value: input });
  });

  it('names nested fields with dots and array indexes', () => {
    // Act
    const result = parse(
      Order,
      {
        id: 'ab',
        kind: 'A',
        lines: [
          { name: 'x', quantity: 1 },
          { name: '', quantity: 0 },
        ],
      },
      '',
    );

    // Assess
    expect(result.ok).toBe(false);
    expect(result.ok ? [] : result.errors.map((e) => e.path)).toEqual(['lines.1.name', 'lines.1.quantity']);
  });

  it('puts the prefix in front of every path', () => {
    // Act
    const result = parse(OrderPath, { id: '' }, 'path');

    // Assess
    expect(result.ok ? [] : result.errors.map((e) => e.path)).toEqual(['path.id']);
  });

  it('names the whole input "body" without a prefix, and by the prefix with one', () => {
    // Act
    const body = parse(Order, 'not an object', '');
    const header = parse(z.string().check(z.minLength(1)), '', 'idempotency-key');

    // Assess
    expect(body.ok ? [] : body.errors.map((e) => e.path)).toEqual(['body']);
    expect(header.ok ? [] : header.errors.map((e) => e.path)).toEqual(['idempotency-key']);
  });

  it('gives one error per unknown field, nested ones included', () => {
    // Act
    const result = parse(
      Order,
      { id: 'ab', kind: 'A', lines: [{ name: 'x', quantity: 1, sku: 'S' }], a: 1, b: 2 },
      '',
    );

    // Assess
    expect(result.ok ? [] : result.errors.map((e) => e.path).sort()).toEqual(['a', 'b', 'lines.0.sku']);
  });

  it.each([
    ['a missing field', { kind: 'A', lines: [] }, 'id', /required/],
    ['a wrong type', { id: 7, kind: 'A', lines: [] }, 'id', /string/],
    ['a too long string', { id: 'abcde', kind: 'A', lines: [] }, 'id', /at most 4/],
    ['a value outside an enum', { id: 'a', kind: 'C', lines: [] }, 'kind', /A, B/],
    [
      'too many items',
      {
        id: 'a',
        kind: 'A',
        lines: [
          { name: 'x', quantity: 1 },
          { name: 'x', quantity: 1 },
          { name: 'x', quantity: 1 },
        ],
      },
      'lines',
      /at most 2/,
    ],
    [
      'a fraction for an integer',
      { id: 'a', kind: 'A', lines: [{ name: 'x', quantity: 1.5 }] },
      'lines.0.quantity',
      /integer/,
    ],
    ['an unknown field', { id: 'a', kind: 'A', lines: [], extra: 1 }, 'extra', /not a known field/],
  ])('describes %s in plain words', (_, input, path, message) => {
    // Act
    const result = parse(Order, input, '');

    // Assess
    const error = result.ok ? undefined : result.errors.find((e) => e.path === path);
    expect(error?.message).toMatch(message);
  });

  it('keeps a message a schema sets on its own check', () => {
    // Act
    const result = parse(
      ChargeRequest,
      { type: 'PAYMENT', order_id: 'ORD\n', items: 'x', currency: 'LKR', amount: 1, customer_token: 't' },
      '',
    );

    // Assess
    expect(result.ok ? [] : result.errors).toEqual([
      { path: 'order_id', message: 'must contain printable characters only' },
    ]);
  });
});

describe('the 400 built from parse errors (as route() builds it)', () => {
  it('is invalid_request naming every bad field, in data.errors and in msg', () => {
    // Prepare
    const parsed = parse(
      Order,
      { id: 'abcdef', kind: 'Z', lines: [{ name: '', quantity: 1 }], extra: true },
      '',
    );

    // Act
    const error = new InvalidRequestError(parsed.ok ? [] : parsed.errors);

    // Assess
    expect(parsed.ok).toBe(false);
    expect([error.httpStatus, error.status, error.code]).toEqual([400, -1, 'invalid_request']);
    expect((error.details.errors as { path: string }[]).map((e) => e.path).sort()).toEqual([
      'extra',
      'id',
      'kind',
      'lines.0.name',
    ]);
    for (const field of ['extra', 'id', 'kind', 'lines.0.name']) expect(error.message).toContain(field);
  });
});
