// The pure parts: signature, amounts, fault queue, request checking, subscription terms, the
// notification form.
import { describe, expect, it } from 'vitest';
import { isLoopbackUrl } from '../../sandbox/deliveries.ts';
import { FaultController } from '../../sandbox/faults.ts';
import { amountDetail, isValidAmount } from '../../sandbox/money.ts';
import { type Notification, notificationForm } from '../../sandbox/notifications.ts';
import {
  dueDate,
  installmentCount,
  isDuration,
  isRecurrence,
  recurringSentence,
} from '../../sandbox/recurrence.ts';
import { CHECKOUT_PAYER } from '../../sandbox/seed.ts';
import { md5sig } from '../../sandbox/server.ts';
import { checkoutHash } from '../../sandbox/signature.ts';
import { checkCharge, checkQuery } from '../../sandbox/validate.ts';
import { checkoutHashOf, expectedMd5sig } from './signing.ts';

describe('md5sig', () => {
  it('matches the worked example of docs/payhere.md', () => {
    expect(
      md5sig({
        merchantId: '1211149',
        orderId: 'ORDER-1001',
        amount: '1000.00',
        currency: 'LKR',
        statusCode: 2,
        merchantSecret: 'MERCHANT_SECRET_EXAMPLE',
      }),
    ).toBe('C12CC18FD89630351949AE2037AA0A3E');
  });

  it('depends on the amount exactly as written', () => {
    const base = {
      merchantId: '1211149',
      orderId: 'ORDER-1001',
      currency: 'LKR',
      statusCode: '2',
      merchantSecret: 'MERCHANT_SECRET_EXAMPLE',
    };

    expect(md5sig({ ...base, amount: '1000.0' })).not.toBe(md5sig({ ...base, amount: '1000.00' }));
  });
});

describe('amounts', () => {
  it('accepts positive amounts with at most two decimals', () => {
    expect([0.01, 1, 345.67, 0.1 + 0.2].map(isValidAmount)).toEqual([true, true, true, true]);
    expect([0, -1, 10.005, Number.NaN].map(isValidAmount)).toEqual([false, false, false, false]);
  });

  it('computes the 2.9 % fee of the docs/payhere.md sample', () => {
    expect(amountDetail('LKR', 500)).toMatchObject({ gross: 500, fee: 14.5, net: 485.5 });
  });
});

describe('FaultController', () => {
  it('consumes faults in the order injected, for matching endpoints only', () => {
    const faults = new FaultController();
    faults.inject('charge', { kind: 'reset' });
    faults.inject('*', { kind: 'hang' }, 2);
    faults.inject('charge', { kind: 'nonJson' });

    expect(faults.pending()).toBe(4);
    expect(faults.take('search')?.kind).toBe('hang');
    expect(faults.take('charge')?.kind).toBe('reset');
    expect(faults.take('charge')?.kind).toBe('hang');
    expect(faults.take('charge')?.kind).toBe('nonJson');
    expect(faults.take('charge')).toBeUndefined();
    expect(faults.pending()).toBe(0);
  });

  it('keeps an unlimited fault and reports Infinity pending', () => {
    const faults = new FaultController();
    faults.inject('token', { kind: 'invalidToken' }, Number.POSITIVE_INFINITY);
    for (let i = 0; i < 5; i += 1) faults.take('token');

    expect(faults.pending()).toBe(Number.POSITIVE_INFINITY);
    faults.clear();
    expect(faults.pending()).toBe(0);
  });

  it('refuses a non-positive count', () => {
    expect(() => new FaultController().inject('charge', { kind: 'reset' }, 0)).toThrow(RangeError);
  });
});

describe('request checking', () => {
  it('names the misspelled field rather than the missing one', () => {
    const result = checkCharge({
      type: 'PAYMENT',
      order_id: 'o',
      items: 'i',
      currency: 'LKR',
      ammount: 1,
      customer_token: 't',
    });

    expect(result).toEqual({ ok: false, field: 'ammount' });
  });

  it('checks query parameters strictly', () => {
    expect(checkQuery(new URLSearchParams('order_id=a&order_id=b'), ['order_id'])).toEqual({
      ok: false,
      field: 'order_id',
    });
    expect(checkQuery(new URLSearchParams('order_id=a'), ['order_id'])).toEqual({
      ok: true,
      value: { order_id: 'a' },
    });
  });
});

describe('checkoutHash', () => {
  it('is the formula of docs/contract.md, over the amount as written', () => {
    const fields = { merchantId: '1211149', orderId: 'ORDER-1001', currency: 'LKR' };
    const secret = 'MERCHANT_SECRET_EXAMPLE';

    expect(checkoutHash({ ...fields, amount: '1000.00', merchantSecret: secret })).toBe(
      checkoutHashOf('ORDER-1001', '1000.00', 'LKR'),
    );
    expect(checkoutHash({ ...fields, amount: '1000.0', merchantSecret: secret })).not.toBe(
      checkoutHashOf('ORDER-1001', '1000.00', 'LKR'),
    );
  });
});

describe('subscription terms', () => {
  it("reads PayHere's forms and nothing else", () => {
    expect(['1 Month', '2 Week', '1 Year', '30 Day'].map(isRecurrence)).toEqual([true, true, true, true]);
    expect(['Forever', '1 month', '0 Month', '1 Months', 'Month'].map(isRecurrence)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(['Forever', '6 Month'].map(isDuration)).toEqual([true, true]);
    expect(isDuration('forever')).toBe(false);
  });

  it("writes the record's sentence", () => {
    expect(recurringSentence('1 Month', '1 Year')).toBe('Charged every month for 1 year');
    expect(recurringSentence('2 Week', '6 Month')).toBe('Charged every 2 weeks for 6 months');
    expect(recurringSentence('1 Year', 'Forever')).toBe('Charged every year forever');
  });

  it('counts the installments on the calendar', () => {
    expect(installmentCount('2025-01-15 10:00:00', '1 Month', '1 Year')).toBe(12);
    expect(installmentCount('2025-01-15 10:00:00', '1 Month', '2 Month')).toBe(2);
    expect(installmentCount('2025-02-01 10:00:00', '1 Week', '1 Month')).toBe(4);
    expect(installmentCount('2025-03-01 10:00:00', '1 Week', '1 Month')).toBe(5);
    expect(installmentCount('2025-01-15 10:00:00', '1 Year', '1 Month')).toBe(1);
    expect(installmentCount('2025-01-15 10:00:00', '1 Month', 'Forever')).toBeNull();
  });

  it('falls due on the same day of the month, or the last day of a shorter one', () => {
    expect(dueDate('2025-01-31 23:59:59', '1 Month', 1)).toBe('2025-01-31');
    expect(dueDate('2025-01-31 23:59:59', '1 Month', 2)).toBe('2025-02-28');
    expect(dueDate('2025-01-31 23:59:59', '1 Month', 3)).toBe('2025-03-31');
    expect(dueDate('2024-02-29 08:00:00', '1 Year', 2)).toBe('2025-02-28');
    expect(dueDate('2025-12-29 08:00:00', '1 Week', 2)).toBe('2026-01-05');
  });
});

describe('notificationForm', () => {
  const signer = { merchantId: '1211149', merchantSecret: 'MERCHANT_SECRET_EXAMPLE' };
  const notification: Notification = {
    url: 'http://127.0.0.1:1/notify',
    orderId: 'ORDER-1001',
    paymentId: 320040000001,
    amount: 1000,
    currency: 'LKR',
    statusCode: 3,
    statusMessage: 'Successfully authorized the VISA payment',
    custom1: null,
    custom2: 'b',
    payer: CHECKOUT_PAYER,
    authorizationToken: 'e34f3059-7b7d-4b62-a57c-784beaa169f4',
    capturedAmount: 0,
  };

  it('lists the fields in the order of PayHere samples, every one a string', () => {
    const form = notificationForm(notification, signer);

    expect(Object.keys(form)).toEqual([
      'merchant_id',
      'order_id',
      'payment_id',
      'captured_amount',
      'payhere_amount',
      'payhere_currency',
      'status_code',
      'md5sig',
      'custom_1',
      'custom_2',
      'status_message',
      'method',
      'card_holder_name',
      'card_no',
      'card_expiry',
      'recurring',
      'authorization_token',
    ]);
    expect(Object.values(form).every((value) => typeof value === 'string')).toBe(true);
    expect(form.md5sig).toBe(expectedMd5sig(form));
  });

  it('tampers after signing', () => {
    const form = notificationForm(notification, signer, { tamper: { order_id: 'ORDER-9999' } });

    expect(form.order_id).toBe('ORDER-9999');
    expect(form.md5sig).toBe(expectedMd5sig({ ...form, order_id: 'ORDER-1001' }));
  });

  it('signs with the secret asked for, or with one nobody holds', () => {
    const app = notificationForm(notification, signer, { signWith: 'APP_SECRET' });
    const bad = notificationForm(notification, signer, { badSignature: true });

    expect(app.md5sig).toBe(expectedMd5sig(app, 'APP_SECRET'));
    expect(bad.md5sig).not.toBe(expectedMd5sig(bad));
  });
});

describe('isLoopbackUrl', () => {
  it.each([
    'http://127.0.0.1:3000/gateway/notify',
    'http://localhost/notify',
    'http://[::1]:8080/notify',
    'https://127.0.0.2/notify',
  ])('allows %s', (url) => {
    expect(isLoopbackUrl(url)).toBe(true);
  });

  it.each([
    'https://www.abc.com/hire/notify',
    'http://10.0.0.1/notify',
    'http://127.0.0.1.example.com/notify',
    'ftp://127.0.0.1/notify',
    'not a url',
  ])('refuses %s', (url) => {
    expect(isLoopbackUrl(url)).toBe(false);
  });
});
