import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { type IssuedToken, SharedTokenCache, TokenCache } from '../../lib/gateway/token.ts';
import { SANDBOX_CREDENTIALS, type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { captureLogs } from '../helpers/logs.ts';
import { freePort } from '../helpers/ports.ts';
import { freshStateTable } from '../helpers/state-table.ts';

const T0 = Date.UTC(2026, 10, 23, 9, 0, 0);

function clock() {
  let now = T0;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
    sleep: async (ms: number) => {
      now += ms;
    },
  };
}

/** PayHere's token endpoint as the test wants it: new tokens `tok-1`, `tok-2`..., counted. */
function tokenEndpoint(expiresInSeconds = 600) {
  let issued = 0;
  const waiting: Array<() => void> = [];
  const state = { hold: false };
  return {
    state,
    issued: () => issued,
    release: () => {
      for (const resume of waiting.splice(0)) resume();
    },
    fetchToken: async (): Promise<IssuedToken> => {
      issued += 1;
      const value = `tok-${issued}`;
      if (state.hold) await new Promise<void>((resume) => waiting.push(resume));
      return { value, expiresInSeconds };
    },
  };
}

type Endpoint = ReturnType<typeof tokenEndpoint>;
type Time = ReturnType<typeof clock>;

async function containersOn(count: number, endpoint: Endpoint, time: Time) {
  const { table } = await freshStateTable();
  return Array.from(
    { length: count },
    (_, i) =>
      new SharedTokenCache({
        table,
        fetchToken: endpoint.fetchToken,
        owner: `container-${i}`,
        fallback: new TokenCache(endpoint.fetchToken, time.now),
        now: time.now,
        sleep: time.sleep,
      }),
  );
}

const DEADLINE = T0 + 3_600_000;

describe('one access token for the deployment', () => {
  it('is fetched by one container and used by the others', async () => {
    const time = clock();
    const endpoint = tokenEndpoint();
    const [a, b, c] = await containersOn(3, endpoint, time);

    const tokens = [await a!.get(DEADLINE), await b!.get(DEADLINE), await c!.get(DEADLINE)];

    expect(tokens).toEqual(['tok-1', 'tok-1', 'tok-1']);
    expect(endpoint.issued()).toBe(1);
  });

  it('is fetched once when cold containers all ask at the same moment', async () => {
    const time = clock();
    const endpoint = tokenEndpoint();
    const containers = await containersOn(6, endpoint, time);

    const tokens = await Promise.all(containers.map((container) => container.get(DEADLINE)));

    expect(new Set(tokens)).toEqual(new Set(['tok-1']));
    expect(endpoint.issued()).toBe(1);
  });

  it('is refreshed by one container while the others keep using the current one', async () => {
    const time = clock();
    const endpoint = tokenEndpoint(600);
    const [a, b] = await containersOn(2, endpoint, time);
    await a!.get(DEADLINE);
    await b!.get(DEADLINE);
    time.advance(545_000); // past the refresh time (a minute before expiry), not past expiry

    endpoint.state.hold = true;
    const refreshing = a!.get(DEADLINE);
    await new Promise((resolve) => setTimeout(resolve, 50)); // a holds the lease, its fetch waits
    const meanwhile = await b!.get(DEADLINE);
    endpoint.release();
    const refreshed = await refreshing;
    time.advance(1_500);
    const afterwards = await b!.get(DEADLINE);

    expect(meanwhile).toBe('tok-1');
    expect(refreshed).toBe('tok-2');
    expect(afterwards).toBe('tok-2');
    expect(endpoint.issued()).toBe(2);
  });

  it('is renewed for a refused money call by the container itself, and shared when it can take the lease', async () => {
    const time = clock();
    const endpoint = tokenEndpoint();
    const [a, b] = await containersOn(2, endpoint, time);
    const revoked = await a!.get(DEADLINE);
    await b!.get(DEADLINE);

    const renewed = await a!.renew(revoked, DEADLINE);
    // b keeps tok-1 until PayHere refuses it too; then it takes the one a stored under the lease.
    await b!.invalidate(revoked);
    const seenByB = await b!.get(DEADLINE);

    expect(renewed).toBe('tok-2');
    expect(a!.fetchedHere(renewed)).toBe(true);
    expect(seenByB).toBe('tok-2');
    expect(endpoint.issued()).toBe(2);
  });

  it('is renewed by the container itself even while another holds the lease or stored a newer token', async () => {
    const time = clock();
    const endpoint = tokenEndpoint();
    const [a, b] = await containersOn(2, endpoint, time);
    const revoked = await a!.get(DEADLINE);
    await b!.get(DEADLINE);
    // b renews first: its token is in the table, fetched before a's call was refused, and may be as stale.
    const byB = await b!.renew(revoked, DEADLINE);

    const byA = await a!.renew(revoked, DEADLINE);

    expect(byB).toBe('tok-2');
    expect(byA).toBe('tok-3');
    expect([a!.fetchedHere(byA), b!.fetchedHere(byA)]).toEqual([true, false]);
    expect(endpoint.issued()).toBe(3);
  });

  it('drops a rejected token only if it is still the current one', async () => {
    const time = clock();
    const endpoint = tokenEndpoint();
    const [a, b] = await containersOn(2, endpoint, time);
    const first = await a!.get(DEADLINE);
    await b!.get(DEADLINE);

    // a's call was refused: tok-1 is dropped, a fetches tok-2. b's late refusal of tok-1 must not drop tok-2.
    await a!.invalidate(first);
    const second = await a!.get(DEADLINE);
    await b!.invalidate(first);
    const seenByB = await b!.get(DEADLINE);

    expect(second).toBe('tok-2');
    expect(seenByB).toBe('tok-2');
    expect(endpoint.issued()).toBe(2);
    expect([a!.fetchedHere('tok-2'), b!.fetchedHere('tok-2')]).toEqual([true, false]);
  });

  it('falls back to a token of the container’s own when the table cannot be reached, and says so', async () => {
    const time = clock();
    const endpoint = tokenEndpoint();
    const { table } = await freshStateTable({
      endpoint: `http://127.0.0.1:${await freePort()}`,
      timeoutMs: 300,
    });
    const cache = new SharedTokenCache({
      table,
      fetchToken: endpoint.fetchToken,
      owner: 'alone',
      fallback: new TokenCache(endpoint.fetchToken, time.now),
      now: time.now,
      sleep: time.sleep,
    });
    const lines = captureLogs('warn');

    const tokens = [await cache.get(DEADLINE), await cache.get(DEADLINE)];

    expect(tokens).toEqual(['tok-1', 'tok-1']);
    expect(endpoint.issued()).toBe(1);
    expect(lines.some((line) => line.message.includes('token of its own'))).toBe(true);
  });
});

describe('a token read ahead (preload), while a read looks for its shared answer', () => {
  async function coldContainer(endpoint: Endpoint, time: Time) {
    const { table } = await freshStateTable();
    const cache = (owner: string) =>
      new SharedTokenCache({
        table,
        fetchToken: endpoint.fetchToken,
        owner,
        fallback: new TokenCache(endpoint.fetchToken, time.now),
        now: time.now,
        sleep: time.sleep,
      });
    return { table, warm: cache('warm'), cold: cache('cold') };
  }

  it('reads the stored token once: the get() that follows waits for that read instead of reading again', async () => {
    // Prepare: another container stored the token.
    const time = clock();
    const endpoint = tokenEndpoint();
    const { table, warm, cold } = await coldContainer(endpoint, time);
    await warm.get(DEADLINE);
    const reads = vi.spyOn(table, 'readToken');

    // Act: the read ahead, and at once the call that needs the token.
    cold.preload();
    const token = await cold.get(DEADLINE);

    // Assess
    expect(token).toBe('tok-1');
    expect(reads).toHaveBeenCalledTimes(1);
    expect(endpoint.issued()).toBe(1);
  });

  it('never asks PayHere nor takes the lease when no token is stored: the call that follows may not need one', async () => {
    // Prepare: an empty table.
    const time = clock();
    const endpoint = tokenEndpoint();
    const { table, cold } = await coldContainer(endpoint, time);
    const leases = vi.spyOn(table, 'leaseToken');

    // Act
    cold.preload();
    await sleep(100);

    // Assess: nothing asked of PayHere, no lease; a get() then fetches as it always did.
    expect(endpoint.issued()).toBe(0);
    expect(leases).not.toHaveBeenCalled();
    expect(await cold.get(DEADLINE)).toBe('tok-1');
  });

  it('leaves a token that is due to get(), which refreshes it under the lease', async () => {
    // Prepare: the stored token is past its refresh time.
    const time = clock();
    const endpoint = tokenEndpoint();
    const { warm, cold } = await coldContainer(endpoint, time);
    await warm.get(DEADLINE);
    time.advance(600_000);

    // Act
    cold.preload();
    await sleep(100);
    const token = await cold.get(DEADLINE);

    // Assess: the due token was not taken into memory; get() fetched the next one.
    expect(token).toBe('tok-2');
    expect(endpoint.issued()).toBe(2);
  });
});

describe('a read whose token PayHere refuses', () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await startSandbox({ rateLimit: false });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('replaces a stale shared token too, and answers with the token it fetched itself', async () => {
    const { table } = await freshStateTable();
    const config = loadConfig({
      GATEWAY_BASE_URL: sandbox.url,
      GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
      GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
    });
    const [a, b] = [
      createPayHere(config, { sharedState: table }),
      createPayHere(config, { sharedState: table }),
    ];
    await a.listSubscriptions(Date.now() + 5_000);
    await b.listSubscriptions(Date.now() + 5_000);
    // a's token is refused once: a drops it and shares a new one, which b has not seen yet.
    sandbox.faults.inject('listSubscriptions', { kind: 'invalidToken' });
    await a.listSubscriptions(Date.now() + 5_000);
    sandbox.expireTokens();

    // b's own token is refused, then the shared one a fetched before the expiry, then b fetches one.
    const answer = await b.listSubscriptions(Date.now() + 5_000);

    expect(answer.msg).toMatch(/^Found \d+ subscriptions$/);
    expect(sandbox.counters().token).toBe(3);
  });
});

describe('an OAuth server that answers an early refresh with the same token', () => {
  let sandbox: Sandbox;
  const time = clock();

  beforeAll(async () => {
    // As Spring's token services do: a live token comes back with its remaining lifetime.
    sandbox = await startSandbox({ now: time.now, rateLimit: false, reuseLiveTokens: true });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('costs one token request per token lifetime plus one early refresh, not a request per call near expiry', async () => {
    const { table } = await freshStateTable();
    const config = loadConfig({
      GATEWAY_BASE_URL: sandbox.url,
      GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
      GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
      GATEWAY_RATE_LIMIT: '100000/1000',
    });
    const containers = Array.from({ length: 3 }, () =>
      createPayHere(config, { sharedState: table, now: time.now, sleep: time.sleep }),
    );

    // Three containers, one read every 5 s for 30 minutes (three 599 s token lifetimes).
    for (let i = 0; i < 360; i++) {
      await containers[i % 3]!.listSubscriptions(Date.now() + 5_000);
      time.advance(5_000);
    }

    // Each lifetime: the first request, and one early refresh that comes back unchanged (without
    // the rule in tokenTimes, 9 here: every refresh comes back with a tenth of the lifetime left).
    expect(sandbox.counters().token).toBeLessThanOrEqual(2 * 3);
    expect(sandbox.counters().listSubscriptions).toBe(360);
  }, 60_000);
});
