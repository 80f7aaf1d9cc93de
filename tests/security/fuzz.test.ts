import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SEED } from '../../sandbox/server.ts';
import {
  ALL_TEST_SCOPES,
  MERCHANT_SCOPES,
  ROUTE_SCOPES,
  TEST_KEY,
  testKey,
  testToken,
  tokenFor,
} from '../helpers/auth.ts';
import { apiEvent, lambdaContext } from '../helpers/events.ts';
import { handlerOf, startTestGateway } from '../helpers/gateway.ts';
import { IDEMPOTENT_ROUTES, ROUTES, type RouteName } from '../helpers/routes.ts';

/**
 * Every route, in-process, against at least 1,000 generated invalid bodies, 1,000 invalid paths
 * and 1,000 invalid header sets, each invalid by construction in that one dimension (the rest of
 * the request is valid). No answer may be a 5xx, every answer is the envelope of docs/contract.md
 * "Envelope" with its status pairing, and the gateway sandbox must not see a single request.
 */
const NUM_RUNS = 1_000;
const ROUTE_NAMES = Object.keys(ROUTES) as RouteName[];
const PATH_ROUTES: Partial<Record<RouteName, 'order' | 'subscription'>> = {
  retrievePayments: 'order',
  getCheckout: 'order',
  getSubscription: 'subscription',
  subscriptionPayments: 'subscription',
  retrySubscription: 'subscription',
  cancelSubscription: 'subscription',
};
/** docs/contract.md "Failures": the codes each HTTP status may carry. */
const CODES: Record<number, string[]> = {
  400: ['invalid_request', 'invalid_json'],
  401: ['unauthorized'],
  403: ['forbidden'],
  413: ['payload_too_large'],
  415: ['unsupported_media_type'],
};
const JSON_MEDIA_TYPE = /^application\/(.+\+)?json($|;.+)/;

let sandbox: Sandbox;
const badTokens: string[] = [];

beforeAll(async () => {
  sandbox = await startTestGateway();
  await Promise.all(ROUTE_NAMES.map(handlerOf));
  const now = Math.floor(Date.now() / 1000);
  const claims = { scope: MERCHANT_SCOPES, sub: 'fuzz' };
  badTokens.push(
    await testToken({ ...claims, expiresInSeconds: -120 }),
    await testToken(claims, { issuer: 'https://evil.example' }),
    await testToken(claims, { audience: 'another-api' }),
    await testToken(claims, { privateJwk: testKey(TEST_KEY.kid).privateJwk }),
    await testToken(claims, { kid: 'unknown', privateJwk: testKey('unknown').privateJwk }),
    `${b64url({ alg: 'none' })}.${b64url({ ...claims, exp: now + 600 })}.`,
  );
});
afterAll(async () => {
  await sandbox.close();
});

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

// --- the valid request of each route, and one-dimension departures from it -------------------

const VALID_BODIES: Partial<Record<RouteName, Record<string, unknown>>> = {
  charge: {
    type: 'PAYMENT',
    order_id: 'Fuzz-1',
    items: 'Taxi Hire 123',
    currency: 'LKR',
    amount: 345.67,
    customer_token: SEED.customerTokens.success,
  },
  capture: {
    authorization_token: SEED.authorizationTokens.capturable,
    amount: 80,
    deduction_details: 'reason',
  },
  refund: { payment_id: SEED.payments.refundable, description: 'Item is out of stock' },
  createCheckout: { kind: 'payment', items: 'Taxi Hire 123', currency: 'LKR', amount: 345.67 },
};
/** The routes that create orders: On-Behalf-Of is theirs (docs/contract.md "Ownership"). */
const CREATES_ORDERS: readonly RouteName[] = ['charge', 'createCheckout'];
/** The path parameter of a route with one. */
const paramOf = (route: RouteName) => (route === 'getCheckout' ? 'order_id' : 'id');
/** Fields whose removal makes the body invalid (refund needs payment_id or authorization_token). */
const REQUIRED: Partial<Record<RouteName, string[]>> = {
  charge: ['type', 'order_id', 'items', 'currency', 'amount', 'customer_token'],
  capture: ['authorization_token', 'amount', 'deduction_details'],
  refund: ['payment_id', 'description'],
  createCheckout: ['kind', 'items', 'currency', 'amount'],
};
const STRING_FIELDS: Partial<Record<RouteName, string[]>> = {
  charge: ['type', 'order_id', 'items', 'currency', 'customer_token'],
  capture: ['authorization_token', 'deduction_details'],
  refund: ['description'],
  createCheckout: ['kind', 'items', 'currency'],
};

const notAString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string()),
  fc.object(),
);
const notANumber = fc.oneof(
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer()),
  fc.object(),
);
const badAmount = fc.oneof(
  fc.constantFrom(0, -1, 0.001, 1.005, 1e300),
  fc.double({ max: 0, noNaN: true }),
  fc.integer({ min: 1, max: 1_000_000 }).map((n) => n + 0.001),
);

function invalidBody(route: RouteName): fc.Arbitrary<string> {
  const valid = VALID_BODIES[route];
  const raw = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc
      .jsonValue()
      .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v))
      .map((v) => JSON.stringify(v)),
    fc.nat({ max: 4_000 }).map((n) => `{"padding":"${'x'.repeat(10 * 1024 + n)}"}`),
  );
  if (!valid) {
    // A route that takes no body: any body at all is invalid.
    return fc
      .oneof(
        raw,
        fc.jsonValue().map((v) => JSON.stringify(v)),
      )
      .filter((body) => body !== '');
  }
  const known = Object.keys(valid).concat(['custom_1', 'custom_2', 'notify_url', 'itemList', 'description']);
  const mutated = fc.oneof(
    fc.constantFrom(...REQUIRED[route]!).map((field) => {
      const { [field]: _removed, ...rest } = valid;
      return rest;
    }),
    fc
      .tuple(fc.constantFrom(...STRING_FIELDS[route]!), notAString)
      .map(([field, value]) => ({ ...valid, [field]: value })),
    notANumber.map((amount) => ({ ...valid, amount })),
    badAmount.map((amount) => ({ ...valid, amount })),
    fc
      .tuple(
        fc.string().filter((key) => !known.includes(key)),
        fc.jsonValue(),
      )
      .map(([key, value]) => ({ ...valid, [key]: value })),
    fc
      .string({ minLength: 256, maxLength: 600 })
      .map((text) => ({ ...valid, [STRING_FIELDS[route]!.at(-1)!]: text })),
    fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 5 }),
  );
  return fc.oneof(
    raw,
    mutated.map((body) => JSON.stringify(body)),
  );
}

function validPath(route: RouteName): Record<string, string> | null {
  if (PATH_ROUTES[route] === 'order') return { [paramOf(route)]: SEED.orders.sample };
  if (PATH_ROUTES[route] === 'subscription') return { id: String(SEED.subscriptions.failed) };
  return null;
}

function invalidPath(route: RouteName): fc.Arbitrary<Record<string, string> | null> {
  const kind = PATH_ROUTES[route];
  if (!kind) return fc.dictionary(fc.string(), fc.string(), { minKeys: 1, maxKeys: 3 });
  const id =
    kind === 'order'
      ? fc.oneof(
          fc.constant(''),
          fc.string({ minLength: 65, maxLength: 300 }),
          fc.string({ unit: 'binary', minLength: 1, maxLength: 64 }).filter((s) => /[^\x20-\x7E]/.test(s)),
        )
      : fc.oneof(
          fc.string({ maxLength: 30 }).filter((s) => !/^[0-9]{1,20}$/.test(s)),
          fc.stringMatching(/^[0-9]{21,40}$/),
        );
  return fc.oneof(
    id.map((value) => ({ [paramOf(route)]: value })),
    fc.constant(null),
    fc
      .string({ minLength: 1 })
      .filter((key) => key !== paramOf(route))
      .map((key) => ({ ...validPath(route)!, [key]: 'x' })),
  );
}

async function validHeaders(route: RouteName): Promise<Record<string, string>> {
  return {
    Authorization: `Bearer ${await tokenFor(`${ROUTE_SCOPES[route]} merchant`)}`,
    ...(VALID_BODIES[route] ? { 'Content-Type': 'application/json' } : {}),
    ...(IDEMPOTENT_ROUTES.includes(route) ? { 'Idempotency-Key': randomUUID() } : {}),
  };
}

async function invalidHeaders(route: RouteName): Promise<fc.Arbitrary<Record<string, string>>> {
  const valid = await validHeaders(route);
  const { Authorization: _token, ...rest } = valid;
  const withAuthorization = (value: string) => ({ ...rest, Authorization: value });
  const otherScopes = ALL_TEST_SCOPES.filter((scope) => scope !== ROUTE_SCOPES[route]);
  const otherScopeTokens = await Promise.all(otherScopes.map((scope) => tokenFor(`${scope} merchant`)));
  const customer = await tokenFor(ROUTE_SCOPES[route]);
  const variants: fc.Arbitrary<Record<string, string>>[] = [
    fc.constant(rest),
    fc.string().map(withAuthorization),
    fc.string().map((s) => withAuthorization(`Bearer ${s}`)),
    fc.constantFrom(...badTokens).map((token) => withAuthorization(`Bearer ${token}`)),
    fc.constantFrom(...otherScopeTokens).map((token) => withAuthorization(`Bearer ${token}`)),
    fc.nat({ max: 2_000 }).map((n) => withAuthorization(`Bearer ${'a'.repeat(8 * 1024 + n)}`)),
    fc
      .tuple(fc.stringMatching(/^X-[A-Za-z]{1,20}$/), fc.nat({ max: 2_000 }))
      .map(([name, n]) => ({ ...valid, [name]: 'v'.repeat(8 * 1024 + 1 + n) })),
    // On-Behalf-Of from a customer, whatever it names: 403.
    fc
      .string({ minLength: 1, maxLength: 40 })
      .filter((sub) => sub.trim() !== '')
      .map((sub) => ({ ...valid, Authorization: `Bearer ${customer}`, 'On-Behalf-Of': sub })),
    // From the merchant: anywhere but a route creating orders, or not a token subject: 400.
    (CREATES_ORDERS.includes(route)
      ? fc.oneof(
          fc.constantFrom('', ' ', ' alice', 'alice '),
          fc.string({ minLength: 256, maxLength: 400 }),
          fc
            .string({ unit: 'binary', minLength: 1, maxLength: 20 })
            .filter((sub) => /[^\x20-\x7E]/.test(sub)),
        )
      : fc.string({ maxLength: 40 })
    ).map((sub) => ({ ...valid, 'On-Behalf-Of': sub })),
  ];
  if (VALID_BODIES[route]) {
    const { 'Content-Type': _type, ...withoutType } = valid;
    variants.push(
      fc.constant(withoutType),
      fc
        .string()
        .filter((type) => !JSON_MEDIA_TYPE.test(type))
        .map((type) => ({ ...withoutType, 'Content-Type': type })),
    );
  }
  if (IDEMPOTENT_ROUTES.includes(route)) {
    const { 'Idempotency-Key': _key, ...withoutKey } = valid;
    variants.push(
      fc.constant(withoutKey),
      fc
        .string({ maxLength: 300 })
        .filter((key) => !/^[A-Za-z0-9\-_.:]{1,255}$/.test(key))
        .map((key) => ({
          ...withoutKey,
          'Idempotency-Key': key,
        })),
    );
  }
  return fc.oneof(...variants);
}

// --- invoking and judging -------------------------------------------------------------------

interface Attempt {
  headers: Record<string, string>;
  body: string | null;
  pathParameters: Record<string, string> | null;
}

async function invokeRoute(route: RouteName, attempt: Attempt): Promise<APIGatewayProxyResult> {
  const { headers } = attempt;
  const event: APIGatewayProxyEvent = apiEvent({ ...ROUTES[route], headers, replaceHeaders: true });
  event.body = attempt.body;
  event.pathParameters = attempt.pathParameters;
  const handler = await handlerOf(route);
  return handler(event, lambdaContext());
}

/** A 4xx in the envelope, its code one its status may carry, no stack in it: one object, shown whole on failure. */
function expectRefusalEnvelope(result: APIGatewayProxyResult): void {
  const { statusCode } = result;
  if (!(statusCode >= 400 && statusCode < 500)) throw new Error(`HTTP ${statusCode}: ${result.body}`);
  const envelope = JSON.parse(result.body);
  expect({
    contentType: result.headers?.['Content-Type'],
    fields: Object.keys(envelope).sort(),
    status: envelope.status,
    msg: typeof envelope.msg === 'string' && envelope.msg.length > 0,
    code: CODES[statusCode]?.includes(envelope.data.code)
      ? 'allowed'
      : `${envelope.data.code} with ${statusCode}`,
    stack: /at .+\.ts:\d+|Error:/.test(result.body) ? result.body : 'none',
  }).toEqual({
    contentType: 'application/json',
    fields: ['data', 'msg', 'status'],
    status: statusCode === 401 || statusCode === 403 ? -2 : -1,
    msg: true,
    code: 'allowed',
    stack: 'none',
  });
}

const gatewayCalls = () => Object.values(sandbox.counters()).reduce((sum, count) => sum + count, 0);

describe.each(ROUTE_NAMES)('%s refuses what is invalid', (route) => {
  it(`${NUM_RUNS} invalid bodies`, async () => {
    const headers = await validHeaders(route);
    await fc.assert(
      fc.asyncProperty(invalidBody(route), async (body) => {
        expectRefusalEnvelope(await invokeRoute(route, { headers, body, pathParameters: validPath(route) }));
      }),
      { numRuns: NUM_RUNS },
    );
    expect(gatewayCalls()).toBe(0);
  });

  it(`${NUM_RUNS} invalid paths`, async () => {
    const headers = await validHeaders(route);
    const body = VALID_BODIES[route] ? JSON.stringify(VALID_BODIES[route]) : null;
    await fc.assert(
      fc.asyncProperty(invalidPath(route), async (pathParameters) => {
        expectRefusalEnvelope(await invokeRoute(route, { headers, body, pathParameters }));
      }),
      { numRuns: NUM_RUNS },
    );
    expect(gatewayCalls()).toBe(0);
  });

  it(`${NUM_RUNS} invalid header sets`, async () => {
    const body = VALID_BODIES[route] ? JSON.stringify(VALID_BODIES[route]) : null;
    await fc.assert(
      fc.asyncProperty(await invalidHeaders(route), async (headers) => {
        expectRefusalEnvelope(await invokeRoute(route, { headers, body, pathParameters: validPath(route) }));
      }),
      { numRuns: NUM_RUNS },
    );
    expect(gatewayCalls()).toBe(0);
  });
});
