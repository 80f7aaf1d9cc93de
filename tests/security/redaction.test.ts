import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { describeError, log, setLogContext } from '../../lib/log/log.ts';
import { redact, redactText } from '../../lib/log/redact.ts';

describe('redact: by field name', () => {
  it.each([
    'app_secret',
    'appSecret',
    'merchant_secret',
    'customer_token',
    'authorization_token',
    'access_token',
    'accessToken',
    'Authorization',
    'password',
    'md5sig',
    'body',
    'rawBody',
    // A customer's personal fields and the merchant's metadata (docs/contract.md "What an order keeps").
    'customer_details',
    'first_name',
    'last_name',
    'address',
    'city',
    'card_holder_name',
    'metadata',
  ])('removes %s entirely, at any depth', (name) => {
    const value = { [name]: 'VALUE-123', nested: { list: [{ [name]: { deep: 'VALUE-456' } }] } };

    const text = JSON.stringify(redact(value));

    expect(text).not.toContain('VALUE-123');
    expect(text).not.toContain('VALUE-456');
    expect(text).toContain('[redacted]');
  });

  it('keeps the id of a secret, which is not the secret', () => {
    expect(redact({ secretId: 'payhere-payments-api/prod/gateway' })).toEqual({
      secretId: 'payhere-payments-api/prod/gateway',
    });
  });

  it('masks card, email and phone fields', () => {
    expect(
      redact({ card_no: '4916217501611292', email: 'samanperera@gmail.com', phone: '+94771234567' }),
    ).toEqual({ card_no: '************1292', email: 's***@gmail.com', phone: '+94******67' });
  });
});

describe('redact: by the look of a value', () => {
  it.each([
    ['4916217501611292', '************1292'],
    ['card 4916 2175 0161 1292 declined', 'card ************1292 declined'],
    ['4916-2175-0161-1292', '************1292'],
    ['5555555555554444123', '************4123'],
  ])('masks the card number in %j', (text, masked) => {
    expect(redactText(text)).toBe(masked);
  });

  it.each([
    ['payment 320025071278', 'a 12-digit payment id'],
    ['c6af9ac6-7b61-11e6-9a41-93e8deadbeef', 'a request id'],
    ['12345678-1234-1234-1234-123456789012', 'an all-digit UUID'],
    ['2026-11-21T06:00:00.000Z', 'a timestamp'],
    ['Order55501', 'an order id'],
  ])('leaves %j (%s) alone', (text) => {
    expect(redactText(text)).toBe(text);
  });

  it('masks emails and phone numbers in free text', () => {
    expect(redactText('mail samanperera@gmail.com or call +94 77 123 4567 / 0771234567')).toBe(
      'mail s***@gmail.com or call +94******67 / 07******67',
    );
  });

  it('removes bearer and basic credentials and anything shaped like a JWT', () => {
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';

    const text = redactText(`Authorization: Bearer ${jwt}; Basic NE9WeDNwRlE6c2VjcmV0; token ${jwt}`);

    expect(text).not.toContain('eyJ');
    expect(text).not.toContain('NE9WeDNwRlE6c2VjcmV0');
    expect(text).toBe('Authorization: Bearer [redacted]; Basic [redacted]; token [redacted]');
  });
});

describe('the logger', () => {
  let lines: string[];

  beforeEach(() => {
    lines = [];
    const capture = (chunk: unknown) => {
      lines.push(String(chunk));
      return true;
    };
    vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    vi.spyOn(process.stderr, 'write').mockImplementation(capture);
    vi.stubEnv('LOG_LEVEL', 'debug');
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    setLogContext({});
  });

  it('writes one JSON line per event with the request id and the caller', () => {
    setLogContext({ requestId: 'req-1', caller: 'client-7' });

    log.info('something happened', { code: 'x' });

    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'info',
      message: 'something happened',
      requestId: 'req-1',
      caller: 'client-7',
      code: 'x',
    });
  });

  it('redacts every line, whatever a call site passes by mistake', () => {
    setLogContext({ requestId: 'req-1', caller: 'saman@example.com' });

    log.error('failed for 4916217501611292', {
      customer_token: '59AFEE022CC69CA39D325E1B59130862',
      headers: { authorization: 'Bearer abc.def.ghi' },
      error: { message: 'upstream said app_secret=4Y8oNM and card 4916 2175 0161 1292' },
      body: '{"customer_token":"59AFEE022CC69CA39D325E1B59130862"}',
    });

    const line = lines.join('');
    expect(line).not.toContain('59AFEE022CC69CA39D325E1B59130862');
    expect(line).not.toContain('abc.def.ghi');
    expect(line).not.toContain('4916217501611292');
    expect(line).not.toContain('4916 2175 0161 1292');
    expect(line).not.toContain('saman@example.com');
    expect(JSON.parse(line)).toMatchObject({
      message: 'failed for ************1292',
      caller: 's***@example.com',
    });
  });

  it('follows LOG_LEVEL at the time of writing', () => {
    vi.stubEnv('LOG_LEVEL', 'info');
    log.debug('hidden');
    vi.stubEnv('LOG_LEVEL', 'debug');
    log.debug('shown');

    expect(lines.map((line) => JSON.parse(line).message)).toEqual(['shown']);
  });

  it('formats an error’s stack only for a line it writes, redacted like the rest', () => {
    const error = new Error('charge failed', { cause: new Error('socket hang up') });
    const stack = vi.fn(
      () =>
        'Error: charge failed\n    at charge (lib/orders/charge-engine.ts:10:5)\n    at Bearer abc.def.ghi',
    );
    Object.defineProperty(error, 'stack', { get: stack });

    vi.stubEnv('LOG_LEVEL', 'info');
    log.debug('below the level', { error: describeError(error) });
    expect(stack).not.toHaveBeenCalled();
    expect(lines).toEqual([]);

    log.warn('at the level', { error: describeError(error) });
    expect(stack).toHaveBeenCalled();
    expect(JSON.parse(lines[0]!).error).toEqual({
      name: 'Error',
      message: 'charge failed',
      cause: { name: 'Error', message: 'socket hang up' },
      stack: '    at charge (lib/orders/charge-engine.ts:10:5)\n    at Bearer [redacted]',
    });
  });
});
