// Real HTTP against a sandbox on loopback, with the few request shapes the tests need.
import { SANDBOX_CREDENTIALS, type Sandbox } from '../../sandbox/server.ts';

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
