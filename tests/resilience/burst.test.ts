import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { RateLimitedError } from '../../lib/envelope/errors.ts';
import { CONNECT_TIMEOUT_MS, createPayHere } from '../../lib/gateway/index.ts';
import { Transport, type UpstreamRequest } from '../../lib/gateway/transport.ts';
import { SANDBOX_CREDENTIALS, type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { busiestWindow } from '../helpers/windows.ts';

/**
 * One clock for the container and the gateway. Sleeping moves it forward instead of waiting, but
 * only once no request is on the wire, so every request reaches the gateway at the time it was
 * sent (as on a real network, where a request takes milliseconds and the window is 10 s).
 */
function manualClock() {
  let now = 0;
  let onWire = 0;
  let idle: Array<() => void> = [];
  return {
    now: () => now,
    sleep: async (ms: number) => {
      const wakeAt = now + ms;
      // Let callers that just got a slot put their request on the wire first.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (onWire > 0) await new Promise<void>((resolve) => idle.push(resolve));
      now = Math.max(now, wakeAt);
    },
    async onTheWire<T>(send: () => Promise<T>): Promise<T> {
      onWire++;
      try {
        return await send();
      } finally {
        onWire--;
        if (onWire === 0) {
          const waiting = idle;
          idle = [];
          for (const resolve of waiting) resolve();
        }
      }
    },
  };
}

let sandbox: Sandbox;
const clock = manualClock();

beforeAll(async () => {
  // PayHere's own limit, on the same clock: any request over it would come back 429.
  sandbox = await startSandbox({ rateLimit: { limit: 20, windowMs: 10_000 }, now: clock.now });
});
afterAll(async () => {
  await sandbox.close();
});

function container(sent: number[]) {
  const config = loadConfig({
    GATEWAY_BASE_URL: sandbox.url,
    GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
    GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
  });
  class RecordingTransport extends Transport {
    override send(request: UpstreamRequest) {
      sent.push(clock.now());
      return clock.onTheWire(() => super.send(request));
    }
  }
  const transport = new RecordingTransport(config.gatewayBaseUrl, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
  return createPayHere(config, { now: clock.now, sleep: clock.sleep, transport });
}

describe('the per-container rate limit', () => {
  it('keeps 100 concurrent calls at 20 per 10 seconds, and all of them succeed', async () => {
    const sent: number[] = [];
    const payhere = container(sent);
    sandbox.reset();

    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => payhere.listSubscriptions(Date.now() + 60_000)),
    );

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(100);
    expect(sent.length).toBe(101); // one token, 100 calls: nothing was rejected and retried
    expect(busiestWindow(sent, 10_000)).toBe(20);
    expect(sandbox.counters().listSubscriptions).toBe(100);
  });

  it('answers rate_limited at once when no slot frees before the deadline', async () => {
    const sent: number[] = [];
    const payhere = container(sent);
    sandbox.reset();
    await Promise.all(Array.from({ length: 19 }, () => payhere.listSubscriptions(Date.now() + 60_000)));

    const late = await payhere.listSubscriptions(Date.now() + 2_000).catch((error: unknown) => error);

    expect(late).toBeInstanceOf(RateLimitedError);
    expect((late as RateLimitedError).headers['Retry-After']).toMatch(/^\d+$/);
    expect(sent.length).toBe(20);
  });
});
