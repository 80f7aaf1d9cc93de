import { describe, expect, it } from 'vitest';
import { type IssuedToken, TokenCache } from '../../../lib/gateway/token.ts';

const T0 = Date.UTC(2024, 5, 1, 4, 30, 0);
const DEADLINE = T0 + 20_000;

interface Pending {
  deadline: number;
  resolve: (token: IssuedToken) => void;
  reject: (error: unknown) => void;
}

/** A token endpoint under the test's control: every fetch waits until the test answers it. */
function tokenEndpoint() {
  const fetches: Pending[] = [];
  const fetchToken = (deadline: number) =>
    new Promise<IssuedToken>((resolve, reject) => {
      fetches.push({ deadline, resolve, reject });
    });
  return { fetches, fetchToken };
}

/** A token endpoint that answers at once with tokens `tok-1`, `tok-2`... */
function instantEndpoint(expiresInSeconds: number) {
  let issued = 0;
  const fetchToken = async () => {
    issued += 1;
    return { value: `tok-${issued}`, expiresInSeconds };
  };
  return { fetchToken, issued: () => issued };
}

function clock(start = T0) {
  let now = start;
  return { now: () => now, set: (at: number) => (now = at), advance: (ms: number) => (now += ms) };
}

describe('TokenCache', () => {
  it('fetches a token on first use and hands the deadline to the fetch', async () => {
    // Prepare
    const endpoint = tokenEndpoint();
    const cache = new TokenCache(endpoint.fetchToken, clock().now);

    // Act
    const token = cache.get(DEADLINE);
    endpoint.fetches[0]?.resolve({ value: 'tok-1', expiresInSeconds: 600 });

    // Assess
    expect(await token).toBe('tok-1');
    expect(endpoint.fetches.map((f) => f.deadline)).toEqual([DEADLINE]);
  });

  it('answers from the cache until the refresh time', async () => {
    // Prepare
    const time = clock();
    const endpoint = instantEndpoint(600);
    const cache = new TokenCache(endpoint.fetchToken, time.now);
    await cache.get(DEADLINE);

    // Act
    time.advance(539_999);
    const token = await cache.get(DEADLINE);

    // Assess
    expect(token).toBe('tok-1');
    expect(endpoint.issued()).toBe(1);
  });

  it.each([
    ['a tenth of a short lifetime', 600, 540_000],
    ['a tenth of a 100 s lifetime', 100, 90_000],
    ['at most a minute of a long lifetime', 3600, 3_540_000],
    ['at most a minute of a day-long lifetime', 86_400, 86_340_000],
  ])('refreshes %s before expiry', async (_, expiresInSeconds, refreshAfterMs) => {
    // Prepare
    const time = clock();
    const endpoint = instantEndpoint(expiresInSeconds);
    const cache = new TokenCache(endpoint.fetchToken, time.now);
    await cache.get(DEADLINE);

    // Act
    time.set(T0 + refreshAfterMs - 1);
    const before = await cache.get(DEADLINE);
    time.set(T0 + refreshAfterMs);
    const at = await cache.get(DEADLINE);

    // Assess
    expect(before).toBe('tok-1');
    expect(at).toBe('tok-2');
    expect(endpoint.issued()).toBe(2);
  });

  it('counts the lifetime from when the fetch started, not when it answered', async () => {
    // Prepare
    const time = clock();
    const endpoint = tokenEndpoint();
    const cache = new TokenCache(endpoint.fetchToken, time.now);
    const first = cache.get(DEADLINE);
    time.advance(5_000);
    endpoint.fetches[0]?.resolve({ value: 'tok-1', expiresInSeconds: 100 });
    await first;

    // Act
    time.set(T0 + 90_000);
    const second = cache.get(DEADLINE);

    // Assess
    expect(endpoint.fetches).toHaveLength(2);
    endpoint.fetches[1]?.resolve({ value: 'tok-2', expiresInSeconds: 100 });
    expect(await second).toBe('tok-2');
  });

  it('shares one fetch among concurrent callers', async () => {
    // Prepare
    const endpoint = tokenEndpoint();
    const cache = new TokenCache(endpoint.fetchToken, clock().now);

    // Act
    const tokens = Array.from({ length: 25 }, () => cache.get(DEADLINE));
    endpoint.fetches[0]?.resolve({ value: 'tok-1', expiresInSeconds: 600 });
    const values = await Promise.all(tokens);

    // Assess
    expect(endpoint.fetches).toHaveLength(1);
    expect(new Set(values)).toEqual(new Set(['tok-1']));
  });

  it('shares one refresh among concurrent callers once the token is due', async () => {
    // Prepare
    const time = clock();
    const endpoint = tokenEndpoint();
    const cache = new TokenCache(endpoint.fetchToken, time.now);
    const first = cache.get(DEADLINE);
    endpoint.fetches[0]?.resolve({ value: 'tok-1', expiresInSeconds: 600 });
    await first;
    time.advance(600_000);

    // Act
    const tokens = Array.from({ length: 10 }, () => cache.get(DEADLINE));
    endpoint.fetches[1]?.resolve({ value: 'tok-2', expiresInSeconds: 600 });
    const values = await Promise.all(tokens);

    // Assess
    expect(endpoint.fetches).toHaveLength(2);
    expect(new Set(values)).toEqual(new Set(['tok-2']));
  });

  it('drops the token the gateway called invalid, so the next get fetches a new one', async () => {
    // Prepare
    const endpoint = instantEndpoint(600);
    const cache = new TokenCache(endpoint.fetchToken, clock().now);
    const rejected = await cache.get(DEADLINE);

    // Act
    cache.invalidate(rejected);
    const next = await cache.get(DEADLINE);

    // Assess
    expect(rejected).toBe('tok-1');
    expect(next).toBe('tok-2');
  });

  it('keeps the current token when an older one is invalidated', async () => {
    // Prepare
    const endpoint = instantEndpoint(600);
    const cache = new TokenCache(endpoint.fetchToken, clock().now);
    const old = await cache.get(DEADLINE);
    cache.invalidate(old);
    const current = await cache.get(DEADLINE);

    // Act
    cache.invalidate(old);
    const after = await cache.get(DEADLINE);

    // Assess
    expect(current).toBe('tok-2');
    expect(after).toBe('tok-2');
    expect(endpoint.issued()).toBe(2);
  });

  it('ignores invalidating a token before any was fetched', async () => {
    // Prepare
    const endpoint = instantEndpoint(600);
    const cache = new TokenCache(endpoint.fetchToken, clock().now);

    // Act
    cache.invalidate('tok-1');
    const token = await cache.get(DEADLINE);

    // Assess
    expect(token).toBe('tok-1');
    expect(endpoint.issued()).toBe(1);
  });

  it('fails every waiting caller when the fetch fails, and fetches again on the next get', async () => {
    // Prepare
    const endpoint = tokenEndpoint();
    const cache = new TokenCache(endpoint.fetchToken, clock().now);
    const waiting = [cache.get(DEADLINE), cache.get(DEADLINE)];
    const failure = new Error('token endpoint unavailable');

    // Act
    endpoint.fetches[0]?.reject(failure);
    const outcomes = await Promise.allSettled(waiting);
    const retry = cache.get(DEADLINE);
    endpoint.fetches[1]?.resolve({ value: 'tok-2', expiresInSeconds: 600 });

    // Assess
    expect(outcomes).toEqual([
      { status: 'rejected', reason: failure },
      { status: 'rejected', reason: failure },
    ]);
    expect(endpoint.fetches).toHaveLength(2);
    expect(await retry).toBe('tok-2');
  });

  it('does not hand out an expired token after a failed refresh', async () => {
    // Prepare
    const time = clock();
    const endpoint = tokenEndpoint();
    const cache = new TokenCache(endpoint.fetchToken, time.now);
    const first = cache.get(DEADLINE);
    endpoint.fetches[0]?.resolve({ value: 'tok-1', expiresInSeconds: 600 });
    await first;
    time.advance(600_000);
    const failed = cache.get(DEADLINE);
    endpoint.fetches[1]?.reject(new Error('timeout'));
    await expect(failed).rejects.toThrow('timeout');

    // Act
    const next = cache.get(DEADLINE);

    // Assess
    expect(endpoint.fetches).toHaveLength(3);
    endpoint.fetches[2]?.resolve({ value: 'tok-3', expiresInSeconds: 600 });
    expect(await next).toBe('tok-3');
  });
});
