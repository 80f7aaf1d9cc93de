import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { MERCHANT_SCOPES, testToken } from '../helpers/auth.ts';
import type { Answer } from '../helpers/events.ts';
import { type CallOptions, call } from '../helpers/gateway.ts';
import { CUSTOMER_SCOPES, saveCard, testLedger } from '../helpers/orders.ts';
import type { RouteName } from '../helpers/routes.ts';
import {
  type FakeSecretsManager,
  gatewaySecret,
  startFakeSecretsManager,
  useSecretCredentials,
} from '../helpers/secrets-manager.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';

/**
 * The leak canary: the service runs its flows, failures included, with recognisable secrets (the
 * gateway credentials in Secrets Manager, the AWS key, the callers' tokens, the access tokens the
 * gateway issues, customer and authorization tokens, a card number) at LOG_LEVEL=debug. Every log
 * line written and every response sent is then searched for them.
 */
const tag = () => randomBytes(6).toString('hex').toUpperCase();
const SECRET_ID = 'payhere-payments-api/canary/gateway';
const FIRST = { appId: `CANARY-APPID-${tag()}`, appSecret: `CANARY-SECRET-${tag()}` };
const ROTATED = { appId: `CANARY-APPID-${tag()}`, appSecret: `CANARY-SECRET-${tag()}` };
const MERCHANT_SECRET = `CANARY-MERCHANT-${tag()}`;
const AWS_SECRET_KEY = `CANARY-AWSKEY-${tag()}`;
const CUSTOMER_TOKEN = `CANARYCUSTOMER${tag()}`;
/** docs/contract.md "Logs": full request bodies are never logged; this rides in every charge body. */
const BODY_MARKER = `CANARY-BODY-${tag()}`;
const CARD_NUMBER = '4916217501611292';
/** docs/contract.md "What an order keeps": a customer's personal fields and the merchant's metadata, never logged. */
const PERSON = {
  first_name: `CANARY-FIRST-${tag()}`,
  last_name: `CANARY-LAST-${tag()}`,
  email: 'canary.person@example.com',
  phone: '+94 77 765 4321',
  address: `CANARY-ADDRESS-${tag()}`,
  city: `CANARY-CITY-${tag()}`,
};
const METADATA = { crm_note: `CANARY-METADATA-${tag()}` };
const SUBJECT = 'canary-client';
const CUSTOMER = 'canary-customer';

const secretOf = (credentials: { appId: string; appSecret: string }) =>
  gatewaySecret(credentials, MERCHANT_SECRET);

// --- what is captured ---------------------------------------------------------------------

const logLines: string[] = [];
const responses: Answer[] = [];
const callerTokens: string[] = [];
const accessTokens: string[] = [];

beforeEach(() => {
  // restoreMocks undoes spies after every test: capture again for each one.
  const capture = (chunk: unknown) => {
    logLines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture);
});

/** A gateway in front of the sandbox that keeps the access tokens the sandbox issues. */
let proxy: Server;
let target: Sandbox;

async function startRecordingProxy(): Promise<string> {
  proxy = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    try {
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(
          ([name]) => !['host', 'connection', 'content-length'].includes(name),
        ),
      ) as Record<string, string>;
      const upstream = await fetch(`${target.url}${req.url}`, {
        method: req.method ?? 'GET',
        headers,
        ...(body === '' ? {} : { body }),
      });
      const text = await upstream.text();
      if (req.url?.endsWith('/oauth/token')) {
        const token = (JSON.parse(text) as { access_token?: string }).access_token;
        if (token) accessTokens.push(token);
      }
      const retryAfter = upstream.headers.get('retry-after');
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'text/plain',
        ...(retryAfter ? { 'retry-after': retryAfter } : {}),
      });
      res.end(text);
    } catch {
      req.socket.resetAndDestroy();
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

let secrets: FakeSecretsManager;

beforeAll(async () => {
  secrets = await startFakeSecretsManager();
  secrets.secrets.set(SECRET_ID, secretOf(FIRST));
  target = await startSandbox({ rateLimit: false, credentials: FIRST });
  const proxyUrl = await startRecordingProxy();
  useSecretCredentials(secrets, SECRET_ID);
  Object.assign(process.env, {
    LOG_LEVEL: 'debug',
    GATEWAY_BASE_URL: proxyUrl,
    GATEWAY_RATE_LIMIT: '10000/1000',
    AWS_SECRET_ACCESS_KEY: AWS_SECRET_KEY,
  });
});
afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await target.close();
  await secrets.close();
});

/** Call a route as the canary client (every scope), keeping the answer for the final search. */
async function send(route: RouteName, options: CallOptions = {}, token?: string): Promise<Answer> {
  const bearer =
    token ??
    (await testToken({
      scope: MERCHANT_SCOPES,
      sub: SUBJECT,
    }));
  callerTokens.push(bearer);
  const answer = await call(route, {
    ...options,
    headers: { Authorization: `Bearer ${bearer}`, ...options.headers },
  });
  responses.push(answer);
  return answer;
}

const charge = (overrides: Record<string, unknown> = {}) => ({
  type: 'PAYMENT',
  order_id: `Canary-${tag()}`,
  items: `Taxi Hire, card ${CARD_NUMBER}`,
  currency: 'LKR',
  amount: 345.67,
  customer_token: SEED.customerTokens.success,
  custom_1: BODY_MARKER,
  customer_details: PERSON,
  ...overrides,
});

describe('the flows, run with canaries', () => {
  it('moves money and reads it back', async () => {
    const paid = await send('charge', { body: charge({ metadata: METADATA }) });
    const held = await send('charge', { body: charge({ type: 'AUTHORIZE', amount: 100 }) });
    const captured = await send('capture', {
      body: {
        authorization_token: held.body.data.authorization_token,
        amount: 50,
        deduction_details: 'partial',
      },
    });
    const refunded = await send('refund', {
      body: { payment_id: paid.body.data.payment_id, description: 'refund' },
    });
    const retrieved = await send('retrievePayments', { id: paid.body.data.order_id });

    expect([paid, held, captured, refunded, retrieved].map((a) => a.statusCode)).toEqual([
      200, 200, 200, 200, 200,
    ]);
  });

  it('manages subscriptions', async () => {
    const answers = [
      await send('listSubscriptions'),
      await send('getSubscription', { id: String(SEED.subscriptions.active) }),
      await send('subscriptionPayments', { id: String(SEED.subscriptions.active) }),
      await send('retrySubscription', { id: String(SEED.subscriptions.failed) }),
      await send('cancelSubscription', { id: String(SEED.subscriptions.active) }),
    ];

    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200]);
  });

  it('serves a customer: checkouts, its own charge and order, and refusals of what is not its own', async () => {
    await saveCard(testLedger(), CUSTOMER, SEED.customerTokens.successMaster);
    const asCustomer = await testToken({ scope: CUSTOMER_SCOPES, sub: CUSTOMER });
    const priced = await send('createCheckout', {
      body: {
        kind: 'charge',
        items: `Lamp, card ${CARD_NUMBER}`,
        currency: 'LKR',
        amount: 20,
        custom_1: BODY_MARKER,
        customer_details: PERSON,
        metadata: METADATA,
      },
      headers: { 'On-Behalf-Of': CUSTOMER },
    });
    const orderId = priced.body.data.order_id;
    const answers = [
      priced,
      await send(
        'createCheckout',
        { body: { kind: 'preapproval', items: 'Card', currency: 'LKR' } },
        asCustomer,
      ),
      await send(
        'charge',
        {
          body: charge({
            order_id: orderId,
            items: `Lamp, card ${CARD_NUMBER}`,
            amount: 20,
            customer_token: SEED.customerTokens.successMaster,
          }),
        },
        asCustomer,
      ),
      await send('getCheckout', { id: orderId }, asCustomer),
      await send('charge', { body: charge({ customer_token: SEED.customerTokens.success }) }, asCustomer),
      await send('getSubscription', { id: String(SEED.subscriptions.active) }, asCustomer),
    ];

    expect(answers.map((a) => a.statusCode)).toEqual([201, 201, 200, 200, 404, 404]);
  });

  it('fails in every way a caller or the gateway can make it fail', async () => {
    const answers = [
      await send('charge', { body: charge({ customer_token: CUSTOMER_TOKEN }) }),
      await send('charge', { body: charge({ customer_token: SEED.customerTokens.declined }) }),
      await send('charge', { body: { ...charge(), card_number: CARD_NUMBER, app_secret: FIRST.appSecret } }),
      await send('charge', { body: `{"customer_token":"${CUSTOMER_TOKEN}", "card": "${CARD_NUMBER}"` }),
      await send('charge', { body: `{"customer_token":"${CUSTOMER_TOKEN}","pad":"${'x'.repeat(11_000)}"}` }),
      await send('capture', {
        body: {
          authorization_token: SEED.authorizationTokens.captured,
          amount: 10,
          deduction_details: 'again',
        },
      }),
      await send('listSubscriptions', {}, `${FIRST.appSecret}.${CUSTOMER_TOKEN}.${CARD_NUMBER}`),
      await send('listSubscriptions', { headers: { Authorization: `Basic ${FIRST.appSecret}` } }),
      await send(
        'retrievePayments',
        { id: CARD_NUMBER },
        await testToken({ scope: 'subscriptions:read', sub: SUBJECT }),
      ),
    ];

    expect(answers.map((a) => a.statusCode)).toEqual([422, 402, 400, 400, 413, 409, 401, 401, 403]);
  });

  it('survives the gateway failing, with errors logged', async () => {
    target.faults.inject('charge', { kind: 'status', status: 500, process: true });
    const lost = await send('charge', { body: charge() });
    target.faults.inject('search', { kind: 'nonJson' }, 3);
    const unusable = await send('retrievePayments', { id: SEED.orders.sample });
    target.faults.inject('listSubscriptions', { kind: 'invalidToken' });
    const refreshed = await send('listSubscriptions');
    target.expireTokens();
    const afterExpiry = await send('getSubscription', { id: String(SEED.subscriptions.active) });

    expect([lost.statusCode, unusable.statusCode, refreshed.statusCode, afterExpiry.statusCode]).toEqual([
      200, 502, 200, 200,
    ]);
  });

  it('reads rotated credentials when the gateway rejects the old ones, and 503s on a broken secret', async () => {
    await target.close();
    target = await startSandbox({ rateLimit: false, credentials: ROTATED });
    secrets.secrets.set(SECRET_ID, secretOf(ROTATED));
    // Each list must come from the gateway (a new one each time), not from what was shared before.
    await forgetSharedReads();
    const rotated = await send('listSubscriptions');

    target.expireTokens();
    secrets.secrets.set(SECRET_ID, `${secretOf(ROTATED)} trailing garbage`);
    await target.close();
    target = await startSandbox({ rateLimit: false, credentials: FIRST });
    await forgetSharedReads();
    const broken = await send('listSubscriptions');

    expect([rotated.statusCode, broken.statusCode]).toEqual([200, 503]);
    expect(broken.body.msg).not.toContain(SECRET_ID);
  });
});

describe('what was written and sent', () => {
  const basic = (c: { appId: string; appSecret: string }) =>
    Buffer.from(`${c.appId}:${c.appSecret}`).toString('base64');
  const SECRETS = () => [
    FIRST.appSecret,
    ROTATED.appSecret,
    MERCHANT_SECRET,
    AWS_SECRET_KEY,
    basic(FIRST),
    basic(ROTATED),
    ...accessTokens,
    ...callerTokens,
  ];
  const NEVER_LOGGED = () => [
    ...SECRETS(),
    FIRST.appId,
    ROTATED.appId,
    CUSTOMER_TOKEN,
    BODY_MARKER,
    SEED.customerTokens.success,
    SEED.customerTokens.successMaster,
    SEED.customerTokens.declined,
    SEED.authorizationTokens.captured,
    CARD_NUMBER,
    ...responses
      .map((a) => a.body?.data?.authorization_token)
      .filter((t): t is string => typeof t === 'string'),
    'samanperera@gmail.com',
    '+94771234567',
    ...Object.values(PERSON),
    METADATA.crm_note,
  ];

  it('ran: log lines at every level, access tokens issued, tokens and responses collected', () => {
    const levels = new Set(logLines.map((line) => JSON.parse(line).level));

    expect(logLines.length).toBeGreaterThan(40);
    expect(levels).toEqual(new Set(['debug', 'info', 'error']));
    expect(accessTokens.length).toBeGreaterThanOrEqual(3);
    expect(responses.length).toBe(31);
  });

  it('logged structured JSON lines, each with the request id, and the caller once known', () => {
    for (const line of logLines) {
      const entry = JSON.parse(line);
      expect(entry.requestId).toEqual(expect.any(String));
      if (entry.message === 'caller authenticated') expect([SUBJECT, CUSTOMER]).toContain(entry.caller);
    }
    expect(logLines.some((line) => JSON.parse(line).caller === SUBJECT)).toBe(true);
  });

  it('logged none of the canaries', () => {
    const log = logLines.join('\n');

    const found = NEVER_LOGGED().filter((canary) => log.includes(canary));

    expect(found).toEqual([]);
  });

  it('sent none of the secrets or tokens in any response', () => {
    const sent = responses.map((a) => `${JSON.stringify(a.headers)}\n${a.raw}`).join('\n');

    const found = SECRETS().filter((canary) => sent.includes(canary));

    expect(found).toEqual([]);
    expect(sent).not.toContain(CUSTOMER_TOKEN);
    expect(sent).not.toContain(SEED.customerTokens.success);
  });
});
