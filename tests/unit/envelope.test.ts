import { describe, expect, it } from 'vitest';
import { ok, respond } from '../../lib/envelope/envelope.ts';

describe('respond', () => {
  it('answers the HTTP status with the envelope as a JSON body', () => {
    // Act
    const result = respond(402, { status: -1, msg: 'Card declined', data: { status_code: -2 } });

    // Assess
    expect(result.statusCode).toBe(402);
    expect(result.headers).toEqual({
      'Content-Type': 'application/json',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
    expect(JSON.parse(result.body)).toEqual({ status: -1, msg: 'Card declined', data: { status_code: -2 } });
  });

  it('adds extra headers next to Content-Type', () => {
    // Act
    const result = respond(
      429,
      { status: -1, msg: 'slow down', data: { code: 'rate_limited' } },
      { 'Retry-After': '3' },
    );

    // Assess
    expect(result.headers).toEqual({
      'Content-Type': 'application/json',
      'Retry-After': '3',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
  });

  it('never lets a caller drop no-store or nosniff', () => {
    // Act
    const result = respond(
      200,
      { status: 1, msg: 'ok', data: null },
      { 'Cache-Control': 'max-age=3600', 'X-Content-Type-Options': '' },
    );

    // Assess
    expect(result.headers).toMatchObject({
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    });
  });

  it('keeps a null data in the body', () => {
    // Act
    const result = respond(200, { status: 1, msg: 'Subscription cancelled', data: null });

    // Assess
    expect(JSON.parse(result.body)).toEqual({ status: 1, msg: 'Subscription cancelled', data: null });
  });
});

describe('ok', () => {
  it('answers 200 with status 1, the message and the data', () => {
    // Act
    const result = ok('Payments with order_id:ORD-1', [{ payment_id: 1 }]);

    // Assess
    expect(result.statusCode).toBe(200);
    expect(result.headers?.['Content-Type']).toBe('application/json');
    expect(JSON.parse(result.body)).toEqual({
      status: 1,
      msg: 'Payments with order_id:ORD-1',
      data: [{ payment_id: 1 }],
    });
  });
});
