import { describe, expect, it } from 'vitest';
import type * as z from 'zod/mini';
import {
  CaptureResult,
  ChargeResult,
  OAuthError,
  PaymentList,
  PaymentRecord,
  RefundResult,
  SubscriptionList,
  SubscriptionRecord,
  TokenAnswer,
  UpstreamEnvelope,
} from '../../../lib/gateway/schemas.ts';

function parses<T>(schema: z.ZodMiniType<T>, input: unknown): boolean {
  return schema.safeParse(input).success;
}

const chargeResult = {
  order_id: 'ORD-2024-0001',
  items: 'Door bell wireless',
  currency: 'LKR',
  amount: 1250.5,
  custom_1: null,
  custom_2: null,
  payment_id: 320025071234567,
  status_code: 2,
  status_message: 'Successfully received the VISA payment',
  md5sig: 'A4D8B1C2E3F4A5B6C7D8E9F0A1B2C3D4',
  authorization_token: null,
};

const captureResult = {
  status_code: 2,
  status_message: 'Successfully captured',
  payment_id: 320025071234568,
  currency: 'LKR',
  amount: 1250.5,
  captured_amount: 1000,
  items: 'Door bell wireless',
  order_id: 'ORD-2024-0001',
  md5sig: 'A4D8B1C2E3F4A5B6C7D8E9F0A1B2C3D4',
  custom_1: null,
  custom_2: null,
};

const paymentRecord = {
  payment_id: 320025071234567,
  order_id: 'ORD-2024-0001',
  date: '2024-06-01 10:00:03',
  description: 'Door bell wireless',
  status: 'RECEIVED',
  currency: 'LKR',
  amount: 1250.5,
  customer: { fist_name: 'Saman', last_name: 'Perera' },
  amount_detail: { currency: 'LKR', gross: 1250.5, fee: 41.27, net: 1209.23 },
  payment_method: { method: 'VISA', card_customer_name: 'S Perera', card_no: '************1292' },
};

const subscriptionRecord = {
  subscription_id: 420075032251,
  order_id: 'SUB-0001',
  date: '2024-01-01 09:00:00',
  status: 'ACTIVE',
  currency: 'LKR',
  amount: 990,
  recurrence: '1 Month',
  duration: 'Forever',
};

describe('UpstreamEnvelope', () => {
  it('accepts the gateway envelope with extra fields, keeping them', () => {
    // Act
    const result = UpstreamEnvelope.safeParse({
      status: 1,
      msg: 'Found 1 payments',
      data: [],
      request_id: 'abc',
    });

    // Assess
    expect(result.success).toBe(true);
    expect(result.data).toEqual({ status: 1, msg: 'Found 1 payments', data: [], request_id: 'abc' });
  });

  it.each([-1, -2, 0, 1, 7])('keeps any numeric status, %i included', (status) => {
    expect(parses(UpstreamEnvelope, { status, msg: null })).toBe(true);
  });

  it.each([
    ['missing status', { msg: 'ok', data: null }],
    ['a string status', { status: '1', msg: 'ok' }],
    ['a numeric msg', { status: 1, msg: 5 }],
    ['an array', [{ status: 1 }]],
    ['an HTML page', '<html>502 Bad Gateway</html>'],
    ['null', null],
  ])('rejects %s', (_, input) => {
    expect(parses(UpstreamEnvelope, input)).toBe(false);
  });
});

describe('OAuthError', () => {
  it('accepts an OAuth error with or without a description', () => {
    expect(
      parses(OAuthError, { error: 'invalid_token', error_description: 'Access token expired: 9a...' }),
    ).toBe(true);
    expect(parses(OAuthError, { error: 'invalid_client' })).toBe(true);
  });

  it('rejects an answer without an error', () => {
    expect(parses(OAuthError, { error_description: 'Bad credentials' })).toBe(false);
  });
});

describe('TokenAnswer', () => {
  it('accepts a token answer with extra fields', () => {
    expect(
      parses(TokenAnswer, {
        access_token: '0b3f2c0e',
        token_type: 'bearer',
        expires_in: 599,
        scope: 'SANDBOX',
      }),
    ).toBe(true);
  });

  it.each([
    ['no access token', { token_type: 'bearer', expires_in: 599 }],
    ['an empty access token', { access_token: '', expires_in: 599 }],
    ['no expiry', { access_token: '0b3f2c0e' }],
    ['a zero expiry', { access_token: '0b3f2c0e', expires_in: 0 }],
    ['a string expiry', { access_token: '0b3f2c0e', expires_in: '599' }],
  ])('rejects %s', (_, input) => {
    expect(parses(TokenAnswer, input)).toBe(false);
  });
});

describe('ChargeResult', () => {
  it('accepts the result of seed 2.3 with extra fields, keeping them', () => {
    // Act
    const result = ChargeResult.safeParse({ ...chargeResult, card_type: 'VISA' });

    // Assess
    expect(result.data).toEqual({ ...chargeResult, card_type: 'VISA' });
  });

  it('accepts a result whose optional text fields are absent, and a string payment id', () => {
    expect(
      parses(ChargeResult, {
        order_id: 'ORD-1',
        currency: 'LKR',
        amount: 10,
        payment_id: '320025071234567',
        status_code: 0,
      }),
    ).toBe(true);
  });

  it('accepts a null payment id (a failed charge)', () => {
    expect(parses(ChargeResult, { ...chargeResult, payment_id: null, status_code: -2 })).toBe(true);
  });

  it('requires only the status code, which alone decides the outcome', () => {
    const { status_code: _code, ...withoutCode } = chargeResult;

    expect(parses(ChargeResult, { status_code: 2 })).toBe(true);
    expect(parses(ChargeResult, withoutCode)).toBe(false);
  });

  it.each([
    ['an amount as a string', { amount: '1250.50' }],
    [
      'no order id, currency, amount or payment id',
      { order_id: undefined, currency: undefined, amount: undefined, payment_id: undefined },
    ],
    ['a status code as a digit string', { status_code: '2' }],
    ['a negative status code as a string', { status_code: '-2' }],
  ])('accepts a result with %s, passed on as sent', (_, change) => {
    const result = ChargeResult.safeParse({ ...chargeResult, ...change });

    expect(result.success).toBe(true);
    expect(result.data).toEqual({ ...chargeResult, ...change });
  });

  it.each([
    ['a status code that is no number', { status_code: 'two' }],
    ['a status code with decimals', { status_code: 2.5 }],
    ['a null status code', { status_code: null }],
  ])('rejects a result with %s: the outcome cannot be told', (_, change) => {
    expect(parses(ChargeResult, { ...chargeResult, ...change })).toBe(false);
  });
});

describe('CaptureResult', () => {
  it('accepts the result of seed 2.5 with extra fields', () => {
    expect(parses(CaptureResult, { ...captureResult, authorization_token: null })).toBe(true);
  });

  it('accepts a captured amount given as a string ("80.00"), and requires only the status code', () => {
    expect(parses(CaptureResult, { status_code: 2, captured_amount: '80.00' })).toBe(true);
    expect(parses(CaptureResult, { captured_amount: 80 })).toBe(false);
  });
});

describe('PaymentRecord and PaymentList', () => {
  it('accepts a payment record and passes through every field PayHere sent', () => {
    // Act
    const result = PaymentRecord.safeParse(paymentRecord);

    // Assess
    expect(result.data).toEqual(paymentRecord);
  });

  it('accepts a list of records and an empty list', () => {
    expect(parses(PaymentList, [paymentRecord, { ...paymentRecord, payment_id: '320025071234999' }])).toBe(
      true,
    );
    expect(parses(PaymentList, [])).toBe(true);
  });

  it.each(['payment_id', 'order_id', 'status', 'currency', 'amount'])(
    'rejects a record without %s',
    (field) => {
      // Prepare
      const input: Record<string, unknown> = { ...paymentRecord };
      delete input[field];

      // Act / Assess
      expect(parses(PaymentRecord, input)).toBe(false);
      expect(parses(PaymentList, [paymentRecord, input])).toBe(false);
    },
  );

  it('rejects a single record where a list is expected', () => {
    expect(parses(PaymentList, paymentRecord)).toBe(false);
  });
});

describe('SubscriptionRecord and SubscriptionList', () => {
  it('accepts a subscription with extra fields', () => {
    expect(SubscriptionRecord.safeParse(subscriptionRecord).data).toEqual(subscriptionRecord);
    expect(parses(SubscriptionList, [subscriptionRecord])).toBe(true);
  });

  it.each(['subscription_id', 'order_id', 'status', 'currency', 'amount'])(
    'rejects a subscription without %s',
    (field) => {
      // Prepare
      const input: Record<string, unknown> = { ...subscriptionRecord };
      delete input[field];

      // Act / Assess
      expect(parses(SubscriptionRecord, input)).toBe(false);
    },
  );
});

describe('RefundResult', () => {
  it.each([
    ['a number', 320025071234999],
    ['a string', '320025071234999'],
    ['null (an authorization released)', null],
    ['absent', undefined],
  ])('accepts %s', (_, value) => {
    expect(parses(RefundResult, value)).toBe(true);
  });

  it.each([
    ['an object', { refund_id: 1 }],
    ['a boolean', true],
  ])('rejects %s', (_, value) => {
    expect(parses(RefundResult, value)).toBe(false);
  });
});
