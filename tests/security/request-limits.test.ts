import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { withToken } from '../helpers/auth.ts';
import { type Answer, apiEvent, invoke } from '../helpers/events.ts';
import { call, handlerOf, useTestGateway } from '../helpers/gateway.ts';
import { ROUTES, type RouteName } from '../helpers/routes.ts';

/** What no valid request has is refused before anything parses it, and the gateway never sees it. */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

const LIMIT = 10 * 1024;
const gatewayCalls = () => Object.values(sandbox.counters()).reduce((sum, count) => sum + count, 0);

/** A valid charge, padded with trailing spaces (still valid JSON) to exactly `bytes` bytes. */
function chargeOfSize(bytes: number): string {
  const json = JSON.stringify({
    type: 'PAYMENT',
    order_id: `Size-${Math.random().toString(36).slice(2, 10)}`,
    items: 'Taxi Hire 123',
    currency: 'LKR',
    amount: 10,
    customer_token: SEED.customerTokens.success,
  });
  return json + ' '.repeat(bytes - Buffer.byteLength(json));
}

function expectRefused(answer: Answer, httpStatus: number, code: string) {
  expect(answer.statusCode).toBe(httpStatus);
  expect(answer.body.status).toBe(-1);
  expect(answer.body.data.code).toBe(code);
  expect(gatewayCalls()).toBe(0);
}

/** An event built by hand, with the route's token, for what `call` cannot express. */
async function raw(name: RouteName, edit: (event: ReturnType<typeof apiEvent>) => void): Promise<Answer> {
  const event = apiEvent({
    ...ROUTES[name],
    headers: await withToken(name, { 'Idempotency-Key': crypto.randomUUID() }),
  });
  edit(event);
  return invoke(await handlerOf(name), event);
}

describe('the body size limit (10 KB)', () => {
  it('accepts a body of exactly 10240 bytes', async () => {
    const answer = await call('charge', { body: chargeOfSize(LIMIT) });

    expect(answer.statusCode).toBe(200);
  });

  it('refuses 10241 bytes with 413 payload_too_large', async () => {
    const answer = await call('charge', { body: chargeOfSize(LIMIT + 1) });

    expectRefused(answer, 413, 'payload_too_large');
    expect(answer.body.msg).toBe('The request body is larger than 10240 bytes.');
  });

  it('counts bytes, not characters', async () => {
    const answer = await call('charge', { body: JSON.stringify({ items: 'é'.repeat(5200) }) });

    expectRefused(answer, 413, 'payload_too_large');
  });

  it('checks before parsing: an oversized body that is not JSON is 413, not 400', async () => {
    expectRefused(await call('charge', { body: '{'.repeat(LIMIT + 1) }), 413, 'payload_too_large');
  });

  it('counts the decoded size of a base64-encoded body', async () => {
    const small = await raw('charge', (event) => {
      event.body = Buffer.from(chargeOfSize(LIMIT)).toString('base64');
      event.isBase64Encoded = true;
    });
    const large = await raw('charge', (event) => {
      event.body = Buffer.from(chargeOfSize(LIMIT + 1)).toString('base64');
      event.isBase64Encoded = true;
    });

    expect(small.statusCode).toBe(200);
    expect(large.statusCode).toBe(413);
  });
});

describe('routes that take no body or no path parameter', () => {
  it.each([
    ['listSubscriptions', {}],
    ['retrievePayments', { id: SEED.orders.sample }],
    ['retrySubscription', { id: String(SEED.subscriptions.failed) }],
    ['cancelSubscription', { id: String(SEED.subscriptions.active) }],
  ] as const)('%s refuses a body, naming it', async (name, options) => {
    const answer = await call(name, { ...options, body: '{}' });

    expectRefused(answer, 400, 'invalid_request');
    expect(answer.body.data.errors).toEqual([
      { path: 'body', message: 'must be empty: this route takes no request body' },
    ]);
  });

  it('refuses a path parameter on a route that has none', async () => {
    const answer = await raw('listSubscriptions', (event) => {
      event.pathParameters = { id: '1' };
    });

    expectRefused(answer, 400, 'invalid_request');
    expect(answer.body.data.errors).toEqual([{ path: 'path.id', message: 'is not a known path parameter' }]);
  });
});

describe('header and path lengths', () => {
  it('refuses a header value over 8 KB, naming the header', async () => {
    const answer = await call('listSubscriptions', { headers: { 'X-Note': 'n'.repeat(8 * 1024 + 1) } });

    expectRefused(answer, 400, 'invalid_request');
    expect(answer.body.data.errors).toEqual([
      { path: 'headers.x-note', message: 'must be at most 8192 characters long' },
    ]);
  });

  it('accepts a header value of exactly 8 KB', async () => {
    expect(
      (await call('listSubscriptions', { headers: { 'X-Note': 'n'.repeat(8 * 1024) } })).statusCode,
    ).toBe(200);
  });

  it('refuses a header name over 256 characters without quoting it back', async () => {
    const name = `X-${'n'.repeat(300)}`;
    const answer = await call('listSubscriptions', { headers: { [name]: 'v' } });

    expectRefused(answer, 400, 'invalid_request');
    expect(answer.raw).not.toContain(name.slice(0, 100));
  });

  it('refuses a path id over 64 characters', async () => {
    expectRefused(await call('retrievePayments', { id: 'o'.repeat(65) }), 400, 'invalid_request');
  });
});
