// Real HTTP against a sandbox on loopback, with the few request shapes the tests need.
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { SANDBOX_CREDENTIALS, type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import { type Receiver, startReceiver } from './receiver.ts';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface CallOptions {
  token?: string;
  json?: unknown;
  body?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export const BASIC_AUTH = `Basic ${Buffer.from(`${SANDBOX_CREDENTIALS.appId}:${SANDBOX_CREDENTIALS.appSecret}`).toString('base64')}`;

export async function call(
  sandbox: Sandbox,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  const response = await fetch(`${sandbox.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

export function requestToken(sandbox: Sandbox, authorization = BASIC_AUTH): Promise<Answer> {
  return call(sandbox, 'POST', '/merchant/v1/oauth/token', {
    headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
}

export async function accessToken(sandbox: Sandbox): Promise<string> {
  const answer = await requestToken(sandbox);
  if (answer.status !== 200) throw new Error(`token request failed: ${answer.status} ${answer.text}`);
  return answer.json.access_token as string;
}

/** A sandbox API client holding one access token. */
export function apiClient(sandbox: Sandbox, token: string) {
  return {
    get: (path: string) => call(sandbox, 'GET', `/merchant/v1/${path}`, { token }),
    post: (path: string, json: unknown) => call(sandbox, 'POST', `/merchant/v1/${path}`, { token, json }),
    search: (orderId: string) =>
      call(sandbox, 'GET', `/merchant/v1/payment/search?order_id=${encodeURIComponent(orderId)}`, { token }),
  };
}

export type ApiClient = ReturnType<typeof apiClient>;

/**
 * The customer paid `orderId` in PayHere's SDK (a saved card charged at PayHere, not through the
 * service): a payment of the order in the sandbox's records; its id.
 */
export async function payAtPayHere(sandbox: Sandbox, orderId: string, amount = 1000): Promise<number> {
  const paid = await apiClient(sandbox, await accessToken(sandbox)).post('payment/charge', {
    type: 'PAYMENT',
    order_id: orderId,
    items: 'Door bell',
    currency: 'LKR',
    amount,
    customer_token: SEED.customerTokens.success,
  });
  return paid.json.data.payment_id as number;
}

/** A controllable clock for token expiry and the rate-limit window. */
export function manualClock(start = Date.UTC(2025, 0, 15, 4, 30, 0)) {
  let current = start;
  return {
    now: () => current,
    advance: (ms: number) => {
      current += ms;
    },
  };
}

/**
 * A sandbox on `clock` (no rate limit) and a notify_url receiver for the file, both reset before
 * each test, with a client holding a fresh access token: the stand of the files that follow what
 * PayHere notifies.
 */
export function useSandboxAndReceiver(clock: { now: () => number }) {
  const stand = {} as { sandbox: Sandbox; receiver: Receiver; api: ApiClient };
  beforeAll(async () => {
    stand.sandbox = await startSandbox({ now: clock.now, rateLimit: false });
    stand.receiver = await startReceiver();
  });
  afterAll(async () => {
    await stand.sandbox?.close();
    await stand.receiver?.close();
  });
  beforeEach(async () => {
    stand.sandbox.reset();
    stand.receiver.clear();
    stand.api = apiClient(stand.sandbox, await accessToken(stand.sandbox));
  });
  return stand;
}
