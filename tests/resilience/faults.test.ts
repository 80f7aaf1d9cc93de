import { describe, expect, it } from 'vitest';
import { call, useTestGateway } from '../helpers/gateway.ts';
import type { GatewayRouteName } from '../helpers/routes.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';
import { chargeBody, MONEY_ROUTES, paymentsOf, UPSTREAM, validRequest } from './fixtures.ts';

const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

/** Prepare a valid request, then count only what the call under test does. */
async function prepare(route: GatewayRouteName) {
  const request = await validRequest(sandbox, route);
  sandbox.resetCounters();
  return request;
}

describe('a charge whose answer is lost', () => {
  it('is reconciled from the order search after a reset once the charge was processed', async () => {
    const body = chargeBody();
    sandbox.faults.inject('charge', { kind: 'reset' });

    const answer = await call('charge', { body });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.status).toBe(1);
    expect(answer.body.data).toMatchObject({ order_id: body.order_id, status_code: 2, amount: body.amount });
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 1 });
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it.each([
    ['a 500 page', { kind: 'status', status: 500, process: true }],
    ['a 200 with an HTML body', { kind: 'nonJson', process: true }],
    [
      'a 200 with a JSON body of the wrong shape',
      {
        kind: 'status',
        status: 200,
        process: true,
        contentType: 'application/json',
        body: '{"status":1,"msg":"ok","data":{"unexpected":true}}',
      },
    ],
  ] as const)('is reconciled after %s', async (_, fault) => {
    const body = chargeBody();
    sandbox.faults.inject('charge', fault);

    const answer = await call('charge', { body });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data.payment_id).toEqual(expect.any(Number));
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 1 });
  });

  it.each([
    ['a reset before processing', { kind: 'resetBeforeProcessing' }],
    ['a 502 without processing', { kind: 'status', status: 502 }],
    ['a 503 without processing', { kind: 'status', status: 503 }],
  ] as const)('answers 202 outcome_unknown after %s, and is never re-sent', async (_, fault) => {
    const body = chargeBody();
    sandbox.faults.inject('charge', fault);

    const answer = await call('charge', { body });

    expect(answer.statusCode).toBe(202);
    expect(answer.body).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    expect(answer.body.msg).toMatch(/same Idempotency-Key/);
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 1 });
    expect(await paymentsOf(sandbox, body.order_id)).toBe(0);
  });

  it('answers 202 outcome_unknown when the gateway is too slow, before the Lambda deadline', async () => {
    const body = chargeBody();
    sandbox.faults.inject('charge', { kind: 'hang' });
    const started = Date.now();

    // 12 s of Lambda time left: 1 s for upstream work, 1 s kept back to answer and 10 s for the
    // bookkeeping after PayHere answers (lib/config/dynamodb.ts WRITES_AFTER_ANSWER_MS).
    const answer = await call('charge', { body, remainingMs: 12_000 });

    expect(Date.now() - started).toBeLessThan(1_900);
    expect(answer.statusCode).toBe(202);
    expect(answer.body.data.code).toBe('outcome_unknown');
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 1 });
  });

  it('answers 202 outcome_unknown for a lost AUTHORIZE: a hold never shows in the order search', async () => {
    const body = chargeBody(undefined, 'AUTHORIZE');
    sandbox.faults.inject('charge', { kind: 'reset' });

    const answer = await call('charge', { body });

    expect(answer.statusCode).toBe(202);
    expect(answer.body.data.code).toBe('outcome_unknown');
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 0 });
  });

  it('adopts a payment PayHere dated before the charge was sent: its clock may run behind ours', async () => {
    const body = chargeBody();
    // The order's one payment no charge owns, dated a second before the lost charge was sent: by
    // PayHere's clock alone it could be "earlier", but records decide, and clocks only rank.
    // PayHere dates payments to the second: its clock is set back for this payment, not waited out.
    sandbox.setClockOffset(-1_100);
    const earlier = await apiClient(sandbox, await accessToken(sandbox))
      .post('payment/charge', body)
      .finally(() => sandbox.setClockOffset(0));
    sandbox.resetCounters();
    sandbox.faults.inject('charge', { kind: 'status', status: 502 });

    const answer = await call('charge', { body });

    expect(earlier.json.data.status_code).toBe(2);
    expect(answer.statusCode).toBe(200);
    expect(answer.body.data.payment_id).toBe(earlier.json.data.payment_id);
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 1 });
  });

  it('answers 202 outcome_unknown when even the search is impossible', async () => {
    const body = chargeBody();
    sandbox.faults.inject('charge', { kind: 'resetBeforeProcessing' });
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);

    const answer = await call('charge', { body });

    expect(answer.statusCode).toBe(202);
    expect(answer.body.data.code).toBe('outcome_unknown');
    expect(sandbox.counters().charge).toBe(1);
  });
});

describe('a charge refused before processing', () => {
  it('answers 429 rate_limited when the gateway throttles, without a search', async () => {
    // 3 s: neither a refusal's 1 s floor nor the 10 s pause a 429 without Retry-After gets; the
    // file's shared budget pauses that long, and the next test waits it out.
    sandbox.faults.inject('charge', { kind: 'rateLimited', retryAfterSeconds: 3 });

    const answer = await call('charge', { body: chargeBody() });

    expect(answer.statusCode).toBe(429);
    expect(answer.body).toMatchObject({ status: -1, data: { code: 'rate_limited' } });
    expect(answer.headers['Retry-After']).toBe('3');
    expect(sandbox.counters()).toMatchObject({ charge: 1, search: 0 });
  });

  it('is sent once more, on a token fetched then, when OAuth calls the token invalid: the caller gets the charge’s own answer', async () => {
    const body = chargeBody();
    const tokensBefore = sandbox.counters().token ?? 0;
    sandbox.faults.inject('charge', { kind: 'invalidToken' });

    const answer = await call('charge', { body });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data).toMatchObject({ order_id: body.order_id, status_code: 2 });
    // The refused attempt and the one PayHere processed; one new token, fetched by this container.
    expect(sandbox.counters()).toMatchObject({ charge: 2, search: 0 });
    expect((sandbox.counters().token ?? 0) - tokensBefore).toBe(1);
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('is sent once more only: refused again, it is reported as not sent and its key released', async () => {
    const body = chargeBody();
    const key = `invalid-token-twice-${body.order_id}`;
    sandbox.faults.inject('charge', { kind: 'invalidToken' }, 2);

    const refused = await call('charge', { body, idempotencyKey: key });
    const charges = sandbox.counters().charge;
    const repeated = await call('charge', { body, idempotencyKey: key });

    expect(refused.statusCode).toBe(503);
    expect(refused.body.msg).toMatch(/nothing was processed.*same Idempotency-Key/);
    expect(charges).toBe(2);
    expect(repeated.statusCode).toBe(200);
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });
});

describe('a money request that never left', () => {
  it.each([
    ['the token endpoint fails', 'token', { kind: 'status', status: 500 }, 3, 502],
    ['the token endpoint hangs', 'token', { kind: 'hang' }, 3, 504],
    [
      'the gateway does not know the path',
      'charge',
      { kind: 'status', status: 404, body: 'Not Found', contentType: 'text/plain' },
      1,
      502,
    ],
    [
      'the gateway refuses the API key',
      'charge',
      {
        kind: 'status',
        status: 401,
        contentType: 'application/json',
        body: '{"status":-1,"msg":"Access denied for the domain","data":null}',
      },
      1,
      502,
    ],
  ] as const)(
    'answers an error, not outcome_unknown, when %s, and its key charges later',
    async (_, endpoint, fault, times, httpStatus) => {
      const body = chargeBody();
      const key = `never-left-${endpoint}-${httpStatus}-${body.order_id}`;
      // The charge must fetch a token: the one it holds is refused (revoked), so it fetches another.
      if (endpoint === 'token') sandbox.expireTokens();
      sandbox.faults.inject(endpoint, fault, times);

      const failed = await call('charge', { body, idempotencyKey: key, remainingMs: 12_500 });
      sandbox.faults.clear();
      const retried = await call('charge', { body, idempotencyKey: key });

      expect(failed.statusCode).toBe(httpStatus);
      expect(failed.body.status).toBe(-1);
      expect(retried.statusCode).toBe(200);
      expect(retried.headers['Idempotent-Replayed']).toBeUndefined();
      expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
    },
  );

  it('is released, not sent again, when the gateway says invalid_token under any status', async () => {
    const body = chargeBody();
    const key = `invalid-token-400-${body.order_id}`;
    sandbox.faults.inject('charge', {
      kind: 'status',
      status: 400,
      contentType: 'application/json',
      body: '{"error":"invalid_token","error_description":"Invalid access token: x"}',
    });

    const refused = await call('charge', { body, idempotencyKey: key });
    const repeated = await call('charge', { body, idempotencyKey: key });

    expect(refused.statusCode).toBe(503);
    expect(repeated.statusCode).toBe(200);
    expect(sandbox.counters()).toMatchObject({ charge: 2, token: 1 });
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('is never sent again after an HTTP 200 saying "Authentication error", and its key is released', async () => {
    const body = chargeBody();
    const key = `authentication-error-${body.order_id}`;
    sandbox.faults.inject('charge', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: '{"status":-2,"msg":"Authentication error","data":null}',
    });

    const refused = await call('charge', { body, idempotencyKey: key });
    const charges = sandbox.counters().charge;

    expect(refused.statusCode).toBe(503);
    expect(charges).toBe(1);
  });
});

/** PayHere's refusal worded otherwise than "Authentication error": top-level -2, no data. */
const CUSTOMER_AUTHENTICATION_FAILED = {
  kind: 'status',
  status: 200,
  contentType: 'application/json',
  body: '{"status":-2,"msg":"Customer authentication failed","data":null}',
} as const;

describe("PayHere's refusal envelopes are answers, never unknowns", () => {
  it.each(MONEY_ROUTES)(
    '%s answered {"status":-2,...,"data":null} is refused (422), sent once, and its key keeps that answer',
    async (route) => {
      const request = await prepare(route);
      const key = `refused-${route}-${Date.now()}-${Math.random()}`;
      sandbox.faults.inject(UPSTREAM[route] as never, CUSTOMER_AUTHENTICATION_FAILED);

      const refused = await call(route, { ...request, idempotencyKey: key });
      const counted = sandbox.counters();
      const repeated = await call(route, { ...request, idempotencyKey: key });

      expect(refused.statusCode).toBe(422);
      expect(refused.body).toMatchObject({ status: -1, data: { code: 'gateway_rejected' } });
      expect(refused.body.msg).toMatch(/Customer authentication failed/);
      // Nothing was processed, so nothing is searched for.
      expect(counted[UPSTREAM[route]]).toBe(1);
      expect(counted.search ?? 0).toBe(0);
      // A cancel takes no Idempotency-Key (yet): its repeat is a new request.
      if (route !== 'cancelSubscription') {
        expect(repeated.statusCode).toBe(422);
        expect(repeated.headers['Idempotent-Replayed']).toBe('true');
        expect(sandbox.counters()[UPSTREAM[route]]).toBe(1);
      }
    },
  );

  it('leaves the order chargeable: a new attempt with a new key charges it once', async () => {
    const body = chargeBody();
    sandbox.faults.inject('charge', CUSTOMER_AUTHENTICATION_FAILED);

    const refused = await call('charge', { body });
    const again = await call('charge', { body });

    expect(refused.statusCode).toBe(422);
    expect(again.statusCode).toBe(200);
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });
});

describe.each(['capture', 'refund', 'retrySubscription'] as const)('a %s whose answer is lost', (route) => {
  const endpoint = UPSTREAM[route];

  it.each([
    ['a reset after processing', { kind: 'reset' }],
    ['a reset before processing', { kind: 'resetBeforeProcessing' }],
    ['a 503', { kind: 'status', status: 503 }],
    ['an HTML body', { kind: 'nonJson', process: true }],
  ] as const)('answers 202 outcome_unknown after %s and is sent exactly once', async (_, fault) => {
    const request = await prepare(route);
    sandbox.faults.inject(endpoint as never, fault);

    const answer = await call(route, request);

    expect(answer.statusCode).toBe(202);
    expect(answer.body).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    expect(sandbox.counters()[endpoint]).toBe(1);
  });
});

describe('a cancel whose answer is lost', () => {
  it('is settled by the subscription state when the cancel was processed', async () => {
    const request = await prepare('cancelSubscription');
    sandbox.faults.inject('cancel', { kind: 'reset' });

    const answer = await call('cancelSubscription', request);

    expect(answer.statusCode).toBe(200);
    expect(answer.body.msg).toBe('Successfully cancelled the subscription');
    expect(sandbox.counters()).toMatchObject({ cancel: 1, getSubscription: 1 });
  });

  it('answers 202 outcome_unknown when the subscription is still active, advising to repeat the DELETE', async () => {
    const request = await prepare('cancelSubscription');
    sandbox.faults.inject('cancel', { kind: 'resetBeforeProcessing' });

    const answer = await call('cancelSubscription', request);

    expect(answer.statusCode).toBe(202);
    expect(answer.body.data.code).toBe('outcome_unknown');
    expect(answer.body.msg).toMatch(/Send the DELETE again/);
    // A repeat of a key is settled from the subscription's state, never sent again.
    expect(answer.body.msg).toMatch(/same key checks the subscription's state/);
    expect(sandbox.counters().cancel).toBe(1);
  });
});

describe('reads', () => {
  it.each([
    ['a 502', { kind: 'status', status: 502 }],
    ['a 503', { kind: 'status', status: 503 }],
    ['a 504', { kind: 'status', status: 504 }],
    ['a 429', { kind: 'rateLimited', retryAfterSeconds: 0 }],
    ['a connection reset', { kind: 'resetBeforeProcessing' }],
  ] as const)('are retried after %s', async (_, fault) => {
    sandbox.faults.inject('search', fault);

    const answer = await call('retrievePayments', { id: 'LP8006126139' });

    expect(answer.statusCode).toBe(200);
    expect(sandbox.counters().search).toBe(2);
  });

  it('are tried at most three times, then answer 502 gateway_error', async () => {
    sandbox.faults.inject('search', { kind: 'status', status: 503 }, 5);

    const answer = await call('retrievePayments', { id: 'LP8006126139' });

    expect(answer.statusCode).toBe(502);
    expect(answer.body).toMatchObject({ status: -1, data: { code: 'gateway_error' } });
    expect(sandbox.counters().search).toBe(3);
  });

  it('wait for Retry-After before trying again', async () => {
    sandbox.faults.inject('listSubscriptions', { kind: 'rateLimited', retryAfterSeconds: 1 });
    const started = Date.now();

    const answer = await call('listSubscriptions');

    expect(answer.statusCode).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
  });

  it.each([
    ['an HTML error page', { kind: 'status', status: 500 }],
    ['an HTML body with 200', { kind: 'nonJson' }],
    [
      'an unknown envelope status',
      {
        kind: 'status',
        status: 200,
        contentType: 'application/json',
        body: '{"status":7,"msg":"?","data":null}',
      },
    ],
    [
      'records of the wrong shape',
      {
        kind: 'status',
        status: 200,
        contentType: 'application/json',
        body: '{"status":1,"msg":"ok","data":"oops"}',
      },
    ],
    ['an unexpected HTTP status', { kind: 'status', status: 418, contentType: 'text/plain', body: 'teapot' }],
  ] as const)('answer 502 gateway_error for %s, revealing nothing of it', async (_, fault) => {
    sandbox.faults.inject('search', fault);

    const answer = await call('retrievePayments', { id: 'LP8006126139' });

    expect(answer.statusCode).toBe(502);
    expect(answer.body.data).toEqual({ code: 'gateway_error' });
    expect(answer.raw).not.toMatch(/html|teapot|oops|"\?"/i);
  });

  it('answer 504 gateway_timeout when the gateway does not answer in time', async () => {
    sandbox.faults.inject('getSubscription', { kind: 'hang' }, 3);

    const answer = await call('getSubscription', { id: '420075032251', remainingMs: 1_800 });

    expect(answer.statusCode).toBe(504);
    expect(answer.body).toMatchObject({ status: -1, data: { code: 'gateway_timeout' } });
  });

  it('survive an expired access token with one refresh', async () => {
    await call('subscriptionPayments', { id: '420075032251' });
    // The second call must reach PayHere, not the answer the first one shared.
    await forgetSharedReads();
    sandbox.resetCounters();
    sandbox.expireTokens();

    const answer = await call('subscriptionPayments', { id: '420075032251' });

    expect(answer.statusCode).toBe(200);
    expect(sandbox.counters()).toMatchObject({ token: 1, subscriptionPayments: 2 });
  });

  it('answer 502, saying the service is misconfigured, when the gateway keeps refusing the token', async () => {
    // Every token refused, a freshly fetched one too. The container's token may be one another
    // container fetched (the shared token), so the token it fetches itself is the last one tried.
    sandbox.faults.inject('listSubscriptions', { kind: 'invalidToken' }, Infinity);

    const answer = await call('listSubscriptions');

    expect(answer.statusCode).toBe(502);
    expect(answer.body.msg).toBe('The payment service is misconfigured; try again later.');
    expect(sandbox.counters().token).toBe(1);
    expect(sandbox.counters().listSubscriptions).toBeGreaterThanOrEqual(2);
    expect(sandbox.counters().listSubscriptions).toBeLessThanOrEqual(3);
  });

  it('survive a keep-alive socket the gateway closed while idle', async () => {
    await call('retrievePayments', { id: 'LP8006126139' });
    sandbox.closeIdleConnections();

    const answer = await call('retrievePayments', { id: 'LP8006126139' });

    expect(answer.statusCode).toBe(200);
  });
});
