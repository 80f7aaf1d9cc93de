import { setImmediate } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SharedStateTable } from '../../lib/budget/state-table.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { GatewayError, RateLimitedError } from '../../lib/envelope/errors.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { SANDBOX_CREDENTIALS, type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { freshStateTable } from '../helpers/state-table.ts';

/** The table, with every slot's release held back until `let go` (as a slow write would be). */
function holdingReleases(table: SharedStateTable) {
  const held: Array<() => void> = [];
  const release = table.releaseSlot.bind(table);
  table.releaseSlot = (...args) =>
    new Promise<boolean>((resolve, reject) => {
      held.push(() => release(...args).then(resolve, reject));
    });
  return { held, letGo: () => Promise.all(held.splice(0).map((go) => go())) };
}

/** A client of the sandbox with a budget of its own, `limit` calls a minute. */
function tightPayHere(sandbox: Sandbox, limit: number) {
  return createPayHere({
    ...loadConfig({
      GATEWAY_BASE_URL: sandbox.url,
      GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
      GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
    }),
    rateLimit: { limit, windowMs: 60_000 },
  });
}

describe("a PayHere call's slot of the shared budget", () => {
  let sandbox: Sandbox;

  beforeAll(async () => {
    sandbox = await startSandbox({ rateLimit: false });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('is freed after the answer, not before it: the caller waits for one write, the take', async () => {
    const { table } = await freshStateTable();
    const releases = holdingReleases(table);
    const payhere = createPayHere(
      loadConfig({
        GATEWAY_BASE_URL: sandbox.url,
        GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
        GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
      }),
      { sharedState: table },
    );
    const deadline = Date.now() + 5_000;

    // The answer came while the token request's release is still held, and before the read's was
    // even made (lib/net/background.ts): the caller waits for neither.
    const answer = await payhere.listSubscriptions(deadline);
    expect(answer.msg).toMatch(/^Found \d+ subscriptions$/);
    expect(releases.held).toHaveLength(1);
    await setImmediate();
    expect(releases.held).toHaveLength(2);

    // Once they land, the two slots are free a window after the answers, not after the deadline.
    const answeredBy = Date.now();
    await releases.letGo();
    const { busyUntil } = await table.readBudget();
    expect([...busyUntil.values()]).toHaveLength(2);
    for (const until of busyUntil.values()) expect(until).toBeLessThanOrEqual(answeredBy);
  });

  it.each([
    // Two slots a minute: the token and the first try. PayHere answers it 503, so the read is
    // tried again, and no slot frees before its deadline.
    { what: 'a retry the budget cannot fit', endpoint: 'listSubscriptions', slots: 2 },
    // One slot a minute: the token's first try, which PayHere answers 503.
    { what: 'a token request the budget cannot repeat', endpoint: 'token', slots: 1 },
  ] as const)('answers $what with the failure that asked for it, not 429', async ({ endpoint, slots }) => {
    const payhere = tightPayHere(sandbox, slots);
    sandbox.faults.inject(endpoint, { kind: 'status', status: 503 });
    const before = sandbox.counters()[endpoint] ?? 0;

    const failure = await payhere.listSubscriptions(Date.now() + 3_000).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(GatewayError);
    expect(failure).not.toBeInstanceOf(RateLimitedError);
    expect((sandbox.counters()[endpoint] ?? 0) - before).toBe(1);
  });
});
