import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type * as z from 'zod/mini';
import type { FieldError } from '../../lib/envelope/errors.ts';
import { parse } from '../../lib/http/validation.ts';
import { CaptureRequest, captureUpstreamBody } from '../../lib/schemas/capture.ts';
import { ChargeRequest } from '../../lib/schemas/charge.ts';
import { OrderPath, SubscriptionPath } from '../../lib/schemas/paths.ts';
import { RefundRequest, refundUpstreamBody } from '../../lib/schemas/refund.ts';

// Request schemas against docs/contract.md "Requests": every rule accepted at its bounds, rejected past them,
// and every bad field named in the `errors` array.

const AUTH_TOKEN = 'e2a4c3f0-9b1d-4e5f-8a7b-1c2d3e4f5a6b';

function accepted<T>(schema: z.ZodMiniType<T>, input: unknown, prefix = ''): T {
  const result = parse(schema, input, prefix);
  if (!result.ok)
    throw new Error(`expected ${JSON.stringify(input)} to be accepted: ${JSON.stringify(result.errors)}`);
  return result.value;
}

function rejected<T>(schema: z.ZodMiniType<T>, input: unknown, prefix = ''): FieldError[] {
  const result = parse(schema, input, prefix);
  if (result.ok) throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
  return result.errors;
}

/** The distinct field paths an input is rejected for, sorted. */
function badFields<T>(schema: z.ZodMiniType<T>, input: unknown, prefix = ''): string[] {
  return [...new Set(rejected(schema, input, prefix).map((error) => error.path))].sort();
}

const chars = (n: number, c = 'a') => c.repeat(n);

function charge(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'PAYMENT',
    order_id: 'ORD-2024-0001',
    items: 'Door bell wireless',
    currency: 'LKR',
    amount: 1250.5,
    customer_token: '59AFEE022CC69CA39D325E1B59130862',
    ...overrides,
  };
}

function line(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'Door bell', number: 'DB-1', quantity: 1, unit_amount: 1250.5, ...overrides };
}

function capture(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { authorization_token: AUTH_TOKEN, amount: 100, deduction_details: 'Delivered', ...overrides };
}

function refund(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { payment_id: 320025071234567, description: 'Item out of stock', ...overrides };
}

describe('ChargeRequest', () => {
  it('accepts a complete charge and keeps every field as sent', () => {
    // Prepare
    const body = charge({
      type: 'AUTHORIZE',
      custom_1: 'shop-42',
      custom_2: null,
      notify_url: 'https://merchant.example.com/payhere/notify',
      itemList: [line(), line({ name: 'Battery', number: 'BT-9', quantity: 4, unit_amount: 0 })],
    });

    // Act
    const value = accepted(ChargeRequest, body);

    // Assess
    expect(value).toEqual(body);
  });

  it('accepts a charge with only the required fields', () => {
    // Act
    const value = accepted(ChargeRequest, charge());

    // Assess
    expect(value).toEqual(charge());
  });

  it.each(['order_id', 'items', 'currency', 'amount', 'customer_token', 'type'])('requires %s', (field) => {
    // Prepare
    const body = charge();
    delete body[field];

    // Act
    const errors = rejected(ChargeRequest, body);

    // Assess
    expect(errors.map((e) => e.path)).toEqual([field]);
  });

  describe('type', () => {
    it.each(['PAYMENT', 'AUTHORIZE'])('accepts %s', (type) => {
      expect(accepted(ChargeRequest, charge({ type })).type).toBe(type);
    });

    it.each(['payment', 'REFUND', 'CAPTURE', '', 1, null])('rejects %j', (type) => {
      expect(badFields(ChargeRequest, charge({ type }))).toEqual(['type']);
    });
  });

  describe('order_id', () => {
    it.each([
      ['1 character', 'A'],
      ['64 characters', chars(64, 'x')],
      ['spaces and punctuation', 'Order #42 / 2024-06-01 (retry)~'],
    ])('accepts %s', (_, order_id) => {
      expect(accepted(ChargeRequest, charge({ order_id })).order_id).toBe(order_id);
    });

    it.each([
      ['empty', ''],
      ['65 characters', chars(65, 'x')],
      ['a newline', 'ORD\n1'],
      ['a tab', 'ORD\t1'],
      ['a DEL character', 'ORD\x7F'],
      ['a non-ASCII letter', 'ORDÉ-1'],
      ['an emoji', 'ORD-💳'],
      ['a number', 1001],
    ])('rejects %s', (_, order_id) => {
      expect(badFields(ChargeRequest, charge({ order_id }))).toEqual(['order_id']);
    });

    it('accepts any printable ASCII string of 1 to 64 characters', () => {
      fc.assert(
        fc.property(
          fc.string({
            unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
            minLength: 1,
            maxLength: 64,
          }),
          (order_id) => parse(ChargeRequest, charge({ order_id }), '').ok,
        ),
      );
    });

    it('rejects any order id containing a character outside printable ASCII', () => {
      const printable = fc.string({
        unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
        maxLength: 30,
      });
      const unprintable = fc.oneof(
        fc.integer({ min: 0, max: 0x1f }),
        fc.integer({ min: 0x7f, max: 0xffff }).filter((c) => c < 0xd800 || c > 0xdfff),
      );
      fc.assert(
        fc.property(printable, unprintable, printable, (before, code, after) => {
          const errors = rejected(
            ChargeRequest,
            charge({ order_id: before + String.fromCharCode(code) + after }),
          );
          return errors.every((e) => e.path === 'order_id');
        }),
      );
    });
  });

  describe('items', () => {
    it.each([1, 255])('accepts %i characters', (n) => {
      expect(accepted(ChargeRequest, charge({ items: chars(n) })).items).toHaveLength(n);
    });

    it.each([
      ['empty', ''],
      ['256 characters', chars(256)],
      ['an array', ['Door bell']],
    ])('rejects %s', (_, items) => {
      expect(badFields(ChargeRequest, charge({ items }))).toEqual(['items']);
    });
  });

  describe('currency', () => {
    it.each(['LKR', 'USD', 'EUR', 'GBP', 'AUD'])('accepts %s', (currency) => {
      expect(accepted(ChargeRequest, charge({ currency })).currency).toBe(currency);
    });

    it.each(['lkr', 'JPY', 'INR', 'Rs', '', 144])('rejects %j', (currency) => {
      expect(badFields(ChargeRequest, charge({ currency }))).toEqual(['currency']);
    });
  });

  describe('amount', () => {
    it.each([0.01, 1, 10.1, 99.99, 1250.5, 0.07, 1.15, 4.35])('accepts %d', (amount) => {
      expect(accepted(ChargeRequest, charge({ amount })).amount).toBe(amount);
    });

    it.each([
      ['zero', 0],
      ['negative', -1],
      ['a negative cent', -0.01],
      ['three decimals', 1.005],
      ['a tenth of a cent', 0.001],
      ['three decimals on a large amount', 10_999.999],
      ['a string', '10.00'],
      ['null', null],
    ])('rejects %s', (_, amount) => {
      expect(badFields(ChargeRequest, charge({ amount }))).toEqual(['amount']);
    });

    it('accepts any positive amount with at most 2 decimals', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 9_999_999_999 }), (cents) => {
          return parse(ChargeRequest, charge({ amount: cents / 100 }), '').ok;
        }),
      );
    });

    it('rejects any amount with 3 decimals', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 99_999_999_999 }).filter((mills) => mills % 10 !== 0),
          (mills) => {
            const errors = rejected(ChargeRequest, charge({ amount: mills / 1000 }));
            return errors.length === 1 && errors[0]?.path === 'amount';
          },
        ),
      );
    });

    it('rejects any amount with more than 3 decimals', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 999_999_999 }),
          fc.integer({ min: 4, max: 6 }),
          (units, decimals) => {
            const amount = (units * 10 + 1) / 10 ** decimals;
            return !parse(ChargeRequest, charge({ amount }), '').ok;
          },
        ),
      );
    });

    // hasAtMostTwoDecimals is meant to hold up to the safe-integer range of cents, but compares
    // n * 100 to the nearest integer with an absolute tolerance of 1e-6; from about 1.3e8 upwards
    // the float error of n * 100 exceeds it and valid two-decimal amounts are refused.
    it.each([134_217_728.14, 134_774_147.42])('accepts the large two-decimal amount %d', (amount) => {
      expect(accepted(ChargeRequest, charge({ amount })).amount).toBe(amount);
    });
  });

  describe('customer_token', () => {
    it.each([1, 128])('accepts %i characters', (n) => {
      expect(accepted(ChargeRequest, charge({ customer_token: chars(n, 'F') })).customer_token).toHaveLength(
        n,
      );
    });

    it.each([
      ['empty', ''],
      ['129 characters', chars(129, 'F')],
    ])('rejects %s', (_, customer_token) => {
      expect(badFields(ChargeRequest, charge({ customer_token }))).toEqual(['customer_token']);
    });
  });

  describe.each(['custom_1', 'custom_2'])('%s', (field) => {
    it.each([
      ['null', null],
      ['an empty string', ''],
      ['255 characters', chars(255)],
    ])('accepts %s', (_, value) => {
      expect(accepted(ChargeRequest, charge({ [field]: value }))[field as 'custom_1']).toBe(value);
    });

    it.each([
      ['256 characters', chars(256)],
      ['a number', 42],
      ['an object', { ref: 1 }],
    ])('rejects %s', (_, value) => {
      expect(badFields(ChargeRequest, charge({ [field]: value }))).toEqual([field]);
    });
  });

  describe('notify_url', () => {
    it.each([
      'https://merchant.example.com/notify',
      'https://merchant.example.com:8443/payhere/notify?shop=42',
      `https://merchant.example.com/${chars(2048 - 'https://merchant.example.com/'.length)}`,
    ])('accepts %s', (notify_url) => {
      expect(accepted(ChargeRequest, charge({ notify_url })).notify_url).toBe(notify_url);
    });

    it.each([
      ['an http URL', 'http://merchant.example.com/notify'],
      ['an ftp URL', 'ftp://merchant.example.com/notify'],
      ['a javascript: URL', 'javascript:alert(1)'],
      ['a relative path', '/payhere/notify'],
      ['not a URL', 'merchant notify'],
      ['an empty string', ''],
      [
        '2049 characters',
        `https://merchant.example.com/${chars(2049 - 'https://merchant.example.com/'.length)}`,
      ],
      ['null', null],
    ])('rejects %s', (_, notify_url) => {
      expect(badFields(ChargeRequest, charge({ notify_url }))).toEqual(['notify_url']);
    });
  });

  describe('itemList', () => {
    it.each([0, 1, 100])('accepts %i lines', (n) => {
      const itemList = Array.from({ length: n }, (_, i) => line({ number: `L${i}` }));
      expect(accepted(ChargeRequest, charge({ itemList })).itemList).toHaveLength(n);
    });

    it('rejects 101 lines, naming itemList', () => {
      const itemList = Array.from({ length: 101 }, (_, i) => line({ number: `L${i}` }));
      expect(badFields(ChargeRequest, charge({ itemList }))).toEqual(['itemList']);
    });

    it('rejects an itemList that is not an array', () => {
      expect(badFields(ChargeRequest, charge({ itemList: line() }))).toEqual(['itemList']);
    });

    it.each([
      ['name of 1 character', { name: 'a' }],
      ['name of 255 characters', { name: chars(255) }],
      ['number of 1 character', { number: '1' }],
      ['number of 64 characters', { number: chars(64) }],
      ['quantity 1', { quantity: 1 }],
      ['quantity 1000', { quantity: 1000 }],
      ['unit_amount 0', { unit_amount: 0 }],
      ['unit_amount with 2 decimals', { unit_amount: 19.99 }],
    ])('accepts a line with %s', (_, overrides) => {
      expect(accepted(ChargeRequest, charge({ itemList: [line(overrides)] })).itemList).toEqual([
        line(overrides),
      ]);
    });

    it.each([
      ['name', 'empty', ''],
      ['name', '256 characters', chars(256)],
      ['name', 'missing', undefined],
      ['number', 'empty', ''],
      ['number', '65 characters', chars(65)],
      ['number', 'a number', 7],
      ['quantity', '0', 0],
      ['quantity', 'negative', -1],
      ['quantity', 'a fraction', 1.5],
      ['quantity', 'a string', '1'],
      ['unit_amount', 'negative', -0.01],
      ['unit_amount', 'three decimals', 19.999],
      ['unit_amount', 'missing', undefined],
    ])('rejects a line whose %s is %s, naming itemList.<index>.<field>', (field, _, value) => {
      // Prepare
      const bad = line();
      if (value === undefined) delete bad[field];
      else bad[field] = value;

      // Act
      const fields = badFields(ChargeRequest, charge({ itemList: [line(), bad] }));

      // Assess
      expect(fields).toEqual([`itemList.1.${field}`]);
    });

    it('names every bad field of every bad line', () => {
      // Prepare
      const itemList = [
        line({ quantity: 0 }),
        line(),
        line({ name: '', unit_amount: -5 }),
        line({ colour: 'red' }),
      ];

      // Act
      const fields = badFields(ChargeRequest, charge({ itemList }));

      // Assess
      expect(fields).toEqual([
        'itemList.0.quantity',
        'itemList.2.name',
        'itemList.2.unit_amount',
        'itemList.3.colour',
      ]);
    });
  });

  it('rejects unknown fields, naming each of them', () => {
    // Prepare
    const body = charge({ merchant_id: '1211149', first_name: 'Saman', card_no: '4916217501611292' });

    // Act
    const errors = rejected(ChargeRequest, body);

    // Assess
    expect(errors.map((e) => e.path).sort()).toEqual(['card_no', 'first_name', 'merchant_id']);
  });

  it('names every bad field at once, unknown fields included', () => {
    // Prepare
    const body = charge({
      type: 'SALE',
      order_id: '',
      currency: 'JPY',
      amount: 0,
      custom_1: chars(300),
      notify_url: 'http://insecure.example.com',
      extra: true,
    });

    // Act
    const fields = badFields(ChargeRequest, body);

    // Assess
    expect(fields).toEqual(['amount', 'currency', 'custom_1', 'extra', 'notify_url', 'order_id', 'type']);
  });

  it.each([
    ['null', null],
    ['an array', [charge()]],
    ['a string', JSON.stringify(charge())],
    ['a number', 42],
  ])('rejects a body that is %s, naming the body', (_, body) => {
    expect(badFields(ChargeRequest, body)).toEqual(['body']);
  });

  it('describes every problem in plain words, not zod’s generic message', () => {
    // Prepare
    const body = charge({ type: 'SALE', order_id: '', amount: 1.001, items: undefined, extra: 1 });

    // Act
    const errors = rejected(ChargeRequest, body);

    // Assess
    expect(errors.length).toBeGreaterThanOrEqual(5);
    for (const error of errors) {
      expect(error.message).toMatch(/\w/);
      expect(error.message).not.toMatch(/^invalid input$/i);
    }
  });
});

describe('CaptureRequest', () => {
  it('accepts the reason as deduction_details', () => {
    expect(accepted(CaptureRequest, capture())).toEqual(capture());
  });

  it('accepts the reason as description', () => {
    // Prepare
    const body = capture({ deduction_details: undefined, description: 'Delivered' });
    delete body.deduction_details;

    // Act
    const value = accepted(CaptureRequest, body);

    // Assess
    expect(value).toEqual({ authorization_token: AUTH_TOKEN, amount: 100, description: 'Delivered' });
  });

  it('accepts both when they are equal', () => {
    expect(accepted(CaptureRequest, capture({ description: 'Delivered' }))).toEqual(
      capture({ description: 'Delivered' }),
    );
  });

  it('rejects both when they differ, naming description only', () => {
    // Act
    const errors = rejected(CaptureRequest, capture({ description: 'Partly delivered' }));

    // Assess
    expect(errors.map((e) => e.path)).toEqual(['description']);
  });

  it('rejects a capture with neither, naming the reason field', () => {
    // Prepare
    const body = capture();
    delete body.deduction_details;

    // Act
    const errors = rejected(CaptureRequest, body);

    // Assess
    expect(errors).toHaveLength(1);
    expect(['deduction_details', 'description']).toContain(errors[0]?.path);
    expect(errors[0]?.message).toMatch(/description/);
  });

  it.each(['deduction_details', 'description'])('rejects an empty or too long %s', (field) => {
    const base = capture();
    delete base.deduction_details;
    expect(badFields(CaptureRequest, { ...base, [field]: '' })).toContain(field);
    expect(badFields(CaptureRequest, { ...base, [field]: chars(256) })).toContain(field);
    expect(accepted(CaptureRequest, { ...base, [field]: chars(255) })).toBeDefined();
  });

  it.each([AUTH_TOKEN, AUTH_TOKEN.toUpperCase(), '00000000-0000-0000-0000-000000000000'])(
    'accepts the authorization token %s',
    (authorization_token) => {
      expect(accepted(CaptureRequest, capture({ authorization_token })).authorization_token).toBe(
        authorization_token,
      );
    },
  );

  it.each([
    ['without dashes', AUTH_TOKEN.replaceAll('-', '')],
    ['with a non-hex character', AUTH_TOKEN.replace('e', 'g')],
    ['one character short', AUTH_TOKEN.slice(1)],
    ['wrapped in braces', `{${AUTH_TOKEN}}`],
    ['empty', ''],
    ['a number', 12345],
    ['missing', undefined],
  ])('rejects an authorization token %s', (_, authorization_token) => {
    const body = capture({ authorization_token });
    if (authorization_token === undefined) delete body.authorization_token;
    expect(badFields(CaptureRequest, body)).toEqual(['authorization_token']);
  });

  it.each([
    ['zero', 0],
    ['negative', -10],
    ['three decimals', 100.001],
    ['a string', '100'],
  ])('rejects an amount that is %s', (_, amount) => {
    expect(badFields(CaptureRequest, capture({ amount }))).toEqual(['amount']);
  });

  it('accepts any positive amount with at most 2 decimals', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9_999_999_999 }),
        (cents) => parse(CaptureRequest, capture({ amount: cents / 100 }), '').ok,
      ),
    );
  });

  it('rejects unknown fields, naming each of them', () => {
    expect(badFields(CaptureRequest, capture({ order_id: 'ORD-1', currency: 'LKR' }))).toEqual([
      'currency',
      'order_id',
    ]);
  });
});

describe('captureUpstreamBody', () => {
  it('sends deduction_details as given', () => {
    // Prepare
    const request = accepted(CaptureRequest, capture({ deduction_details: 'Two of three items shipped' }));

    // Act
    const upstream = captureUpstreamBody(request);

    // Assess
    expect(upstream).toEqual({
      authorization_token: AUTH_TOKEN,
      amount: 100,
      deduction_details: 'Two of three items shipped',
    });
  });

  it('sends a description as deduction_details and never as description', () => {
    // Prepare
    const body = capture({ description: 'Shipped' });
    delete body.deduction_details;
    const request = accepted(CaptureRequest, body);

    // Act
    const upstream = captureUpstreamBody(request);

    // Assess
    expect(upstream).toEqual({ authorization_token: AUTH_TOKEN, amount: 100, deduction_details: 'Shipped' });
    expect(upstream).not.toHaveProperty('description');
  });

  it('sends one deduction_details when both are given', () => {
    const request = accepted(
      CaptureRequest,
      capture({ deduction_details: 'Shipped', description: 'Shipped' }),
    );
    expect(captureUpstreamBody(request)).toEqual({
      authorization_token: AUTH_TOKEN,
      amount: 100,
      deduction_details: 'Shipped',
    });
  });
});

describe('RefundRequest', () => {
  it.each([
    ['an integer payment_id', 320025071234567],
    ['a digit-string payment_id', '320025071234567'],
    ['payment_id 1', 1],
    ['payment_id "1"', '1'],
  ])('accepts %s', (_, payment_id) => {
    expect(accepted(RefundRequest, refund({ payment_id })).payment_id).toBe(payment_id);
  });

  it.each([
    ['0', 0],
    ['"0"', '0'],
    ['negative', -5],
    ['"-5"', '-5'],
    ['a fraction', 1.5],
    ['a leading zero', '0123'],
    ['letters', '12a4'],
    ['a decimal string', '12.0'],
    ['spaces', ' 123'],
    ['empty', ''],
    ['null', null],
    ['a boolean', true],
  ])('rejects a payment_id that is %s', (_, payment_id) => {
    expect(badFields(RefundRequest, refund({ payment_id }))).toEqual(['payment_id']);
  });

  it('accepts an authorization token instead of a payment id', () => {
    // Prepare
    const body = { authorization_token: AUTH_TOKEN, description: 'Order cancelled' };

    // Act
    const value = accepted(RefundRequest, body);

    // Assess
    expect(value).toEqual(body);
  });

  it('rejects an authorization token that is not a UUID', () => {
    const body = { authorization_token: 'not-a-uuid', description: 'Order cancelled' };
    expect(badFields(RefundRequest, body)).toEqual(['authorization_token']);
  });

  it('rejects both a payment id and an authorization token', () => {
    // Act
    const fields = badFields(RefundRequest, refund({ authorization_token: AUTH_TOKEN }));

    // Assess
    expect(fields.length).toBeGreaterThan(0);
    expect(fields.every((f) => f === 'payment_id' || f === 'authorization_token')).toBe(true);
  });

  it('rejects neither a payment id nor an authorization token', () => {
    // Act
    const errors = rejected(RefundRequest, { description: 'Order cancelled' });

    // Assess
    expect(errors).toHaveLength(1);
    expect(['payment_id', 'authorization_token']).toContain(errors[0]?.path);
  });

  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['256 characters', chars(256)],
    ['a number', 5],
  ])('rejects a description that is %s', (_, description) => {
    const body = refund({ description });
    if (description === undefined) delete body.description;
    expect(badFields(RefundRequest, body)).toEqual(['description']);
  });

  it.each([1, 255])('accepts a description of %i characters', (n) => {
    expect(accepted(RefundRequest, refund({ description: chars(n) })).description).toHaveLength(n);
  });

  it('accepts an amount for a partial refund of a payment', () => {
    expect(accepted(RefundRequest, refund({ amount: 25.5 })).amount).toBe(25.5);
  });

  it('rejects an amount with an authorization token, naming amount', () => {
    const body = { authorization_token: AUTH_TOKEN, description: 'Order cancelled', amount: 10 };
    expect(badFields(RefundRequest, body)).toEqual(['amount']);
  });

  it.each([
    ['zero', 0],
    ['negative', -1],
    ['three decimals', 2.555],
  ])('rejects an amount that is %s', (_, amount) => {
    expect(badFields(RefundRequest, refund({ amount }))).toEqual(['amount']);
  });

  it('rejects unknown fields, naming each of them', () => {
    expect(badFields(RefundRequest, refund({ order_id: 'ORD-1', reason: 'x' }))).toEqual([
      'order_id',
      'reason',
    ]);
  });

  // The regex lets through 16-digit strings up to 9999999999999999; above Number.MAX_SAFE_INTEGER
  // Number() rounds them, so the refund would go upstream for a different payment id.
  it('never lets a digit-string payment_id through that cannot be sent upstream exactly', () => {
    // Prepare
    const payment_id = '9007199254740993';

    // Act
    const result = parse(RefundRequest, refund({ payment_id }), '');

    // Assess
    const upstream = result.ok ? refundUpstreamBody(result.value) : undefined;
    const sentAs =
      upstream === undefined ? 'rejected' : 'payment_id' in upstream ? String(upstream.payment_id) : 'none';
    expect(['rejected', payment_id]).toContain(sentAs);
  });
});

describe('refundUpstreamBody', () => {
  it('sends a digit-string payment_id as a number, without amount when none was given', () => {
    // Prepare
    const request = accepted(RefundRequest, refund({ payment_id: '320025071234567' }));

    // Act
    const upstream = refundUpstreamBody(request);

    // Assess
    expect(upstream).toEqual({ payment_id: 320025071234567, description: 'Item out of stock' });
    expect(upstream).not.toHaveProperty('amount');
  });

  it('sends an integer payment_id and the amount of a partial refund', () => {
    const request = accepted(RefundRequest, refund({ amount: 99.99 }));
    expect(refundUpstreamBody(request)).toEqual({
      payment_id: 320025071234567,
      description: 'Item out of stock',
      amount: 99.99,
    });
  });

  it('sends the authorization token and description only when releasing a hold', () => {
    // Prepare
    const request = accepted(RefundRequest, {
      authorization_token: AUTH_TOKEN,
      description: 'Order cancelled',
    });

    // Act
    const upstream = refundUpstreamBody(request);

    // Assess
    expect(upstream).toEqual({ authorization_token: AUTH_TOKEN, description: 'Order cancelled' });
  });

  it('sends any safe positive payment id given as digits as exactly that number', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (id) => {
        const request = accepted(RefundRequest, refund({ payment_id: String(id) }));
        const upstream = refundUpstreamBody(request);
        return 'payment_id' in upstream && upstream.payment_id === id;
      }),
    );
  });
});

describe('OrderPath', () => {
  it.each(['ORD-1', 'A', chars(64, 'z'), 'order 42 #a'])('accepts the order id %j', (id) => {
    expect(accepted(OrderPath, { id }, 'path')).toEqual({ id });
  });

  it.each([
    ['empty', ''],
    ['65 characters', chars(65)],
    ['non-printable', 'ORD\u00001'],
    ['non-ASCII', 'ORDÜ'],
  ])('rejects an order id that is %s, naming path.id', (_, id) => {
    expect(badFields(OrderPath, { id }, 'path')).toEqual(['path.id']);
  });

  it('rejects a missing id, naming path.id', () => {
    expect(badFields(OrderPath, {}, 'path')).toEqual(['path.id']);
  });
});

describe('SubscriptionPath', () => {
  it.each(['1', '420075032251', String(Number.MAX_SAFE_INTEGER)])('accepts the subscription id %s', (id) => {
    expect(accepted(SubscriptionPath, { id }, 'path')).toEqual({ id });
  });

  it.each([
    ['empty', ''],
    ['letters', 'abc'],
    ['mixed', '12a'],
    ['negative', '-1'],
    ['a decimal', '1.0'],
    ['21 digits', chars(21, '9')],
    ['an order id', 'ORD-1'],
  ])('rejects a subscription id that is %s, naming path.id', (_, id) => {
    expect(badFields(SubscriptionPath, { id }, 'path')).toEqual(['path.id']);
  });
});

describe('SubscriptionPath, beyond exact JSON numbers', () => {
  it('refuses an id that would reach upstream as a different number', () => {
    const result = parse(SubscriptionPath, { id: '12345678901234567' }, 'path');

    expect(result.ok).toBe(false);
    expect(result.ok ? [] : result.errors).toEqual([
      { path: 'path.id', message: 'is too large to be a subscription id' },
    ]);
  });
});

describe('ChargeRequest notify_url, as PayHere receives it', () => {
  it('refuses an https URL without "//", which the URL parser would accept', () => {
    const result = parse(
      ChargeRequest,
      {
        type: 'PAYMENT',
        order_id: 'O-1',
        items: 'x',
        currency: 'LKR',
        amount: 1,
        customer_token: 'T',
        notify_url: 'https:example.com/notify',
      },
      '',
    );

    expect(result.ok ? [] : result.errors).toEqual([{ path: 'notify_url', message: 'must be an https URL' }]);
  });
});
