import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { ALL_TEST_SCOPES, ROUTE_SCOPES, testToken } from '../helpers/auth.ts';
import { type CallOptions, call, useTestGateway } from '../helpers/gateway.ts';
import { ROUTES, type RouteName } from '../helpers/routes.ts';

/**
 * Every route against every scope, as the merchant: a token holding only the route's scope and
 * `merchant` gets the route's real answer (200 or 201); a token holding only any other scope (and
 * `merchant`) gets 403 and the gateway sees nothing. `merchant` alone grants no route. The expected
 * scopes are docs/contract.md's table (tests/helpers/auth.ts), not the handlers'.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });

/** A request each route answers with 200 on the sandbox's seeded data. */
const VALID: Record<RouteName, () => CallOptions> = {
  charge: () => ({
    body: {
      type: 'PAYMENT',
      order_id: `Scope-${Math.random().toString(36).slice(2, 10)}`,
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      customer_token: SEED.customerTokens.success,
    },
  }),
  capture: () => ({
    body: {
      authorization_token: SEED.authorizationTokens.capturable,
      amount: 80,
      deduction_details: 'Out of stock',
    },
  }),
  refund: () => ({ body: { payment_id: SEED.payments.refundable, description: 'Item is out of stock' } }),
  retrievePayments: () => ({ id: SEED.orders.sample }),
  listSubscriptions: () => ({}),
  getSubscription: () => ({ id: String(SEED.subscriptions.active) }),
  subscriptionPayments: () => ({ id: String(SEED.subscriptions.active) }),
  retrySubscription: () => ({ id: String(SEED.subscriptions.failed) }),
  cancelSubscription: () => ({ id: String(SEED.subscriptions.active) }),
  listOrders: () => ({ query: { limit: '5' } }),
  paymentRefunds: () => ({ id: '320099999999' }),
  reconciliationReport: () => ({ query: { from: '2025-01-01', to: '2025-01-01' } }),
  listEvents: () => ({}),
  createCheckout: () => ({
    body: { kind: 'payment', items: 'Taxi Hire 123', currency: 'LKR', amount: 345.67 },
  }),
  getCheckout: () => ({ id: `Scope-missing-${Math.random().toString(36).slice(2, 10)}` }),
  webhookDeliveries: () => ({ query: { limit: '5' } }),
  redeliverEvent: () => ({ id: `evt_scopemissing${Math.random().toString(36).slice(2, 10)}` }),
};

/** What each route answers a merchant when allowed (getCheckout, redeliverEvent: the order or event asked for does not exist). */
const ALLOWED_STATUS: Partial<Record<RouteName, number>> = {
  createCheckout: 201,
  getCheckout: 404,
  redeliverEvent: 404,
};

const callWithScope = async (route: RouteName, scope: unknown, merchant = true) => {
  const claim = merchant && typeof scope === 'string' ? `${scope} merchant` : scope;
  const token = await testToken({ scope: claim as string, sub: 'scope-tester' });
  const options = VALID[route]();
  return call(route, { ...options, headers: { Authorization: `Bearer ${token}` } });
};

const gatewayCalls = () => Object.values(sandbox.counters()).reduce((sum, count) => sum + count, 0);

describe('each route requires exactly its scope', () => {
  const matrix = (Object.keys(ROUTES) as RouteName[]).flatMap((route) =>
    ALL_TEST_SCOPES.map((scope) => ({ route, scope, allowed: ROUTE_SCOPES[route] === scope })),
  );

  it('covers seventeen routes and six scopes, one allowed scope per route', () => {
    expect(matrix).toHaveLength(102);
    expect(matrix.filter((cell) => cell.allowed)).toHaveLength(17);
  });

  it.each(matrix.filter((cell) => cell.allowed))(
    '$route with only $scope: allowed',
    async ({ route, scope }) => {
      const answer = await callWithScope(route, scope);

      expect(answer.statusCode).toBe(ALLOWED_STATUS[route] ?? 200);
    },
  );

  it.each(Object.keys(ROUTES) as RouteName[])('%s with merchant alone: 403', async (route) => {
    const answer = await callWithScope(route, 'merchant', false);

    expect(answer.statusCode).toBe(403);
    expect(gatewayCalls()).toBe(0);
  });

  it.each(matrix.filter((cell) => !cell.allowed))(
    '$route with only $scope: 403',
    async ({ route, scope }) => {
      const answer = await callWithScope(route, scope);

      expect(answer.statusCode).toBe(403);
      expect(answer.body).toEqual({
        status: -2,
        msg: `The token is valid but lacks the scope ${ROUTE_SCOPES[route]} that this route requires.`,
        data: { code: 'forbidden' },
      });
      expect(gatewayCalls()).toBe(0);
    },
  );
});

describe('the scope claim', () => {
  it('grants every scope it lists, space-separated, extra spaces tolerated', async () => {
    const answer = await callWithScope('listSubscriptions', '  payments:read   subscriptions:read ');

    expect(answer.statusCode).toBe(200);
  });

  it.each([
    ['no scope claim', undefined],
    ['an empty scope', ''],
    ['a scope that only starts like the right one', 'subscriptions:readonly'],
    ['a scope in other letter case', 'SUBSCRIPTIONS:READ'],
    ['comma-separated scopes', 'payments:read,subscriptions:read'],
    ['a scope claim that is an array', ['subscriptions:read']],
    ['a wildcard', '*'],
  ])('%s grants nothing: 403', async (_, scope) => {
    const answer = await callWithScope('listSubscriptions', scope, false);

    expect(answer.statusCode).toBe(403);
    expect(answer.body.data).toEqual({ code: 'forbidden' });
    expect(gatewayCalls()).toBe(0);
  });
});
