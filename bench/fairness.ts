/**
 * One customer hammering every way it could spend PayHere's budget for everyone (issue "No one
 * caller, and no stranger, can take the service from everyone else") while another customer
 * charges its own priced order every second, through serverless-offline (`npm start`'s stack,
 * several function workers) against the sandbox with PayHere's own limit, which logs every
 * arrival. Bounded in time: `durationMs` of load, each attacking loop one request at a time.
 * Used by tests/e2e/fairness-offline.test.ts (what must hold) and the bench (the table).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { LedgerStore } from '../lib/ledger/store.ts';
import { type Sandbox, SEED, sandboxGatewayEnv, startSandbox } from '../sandbox/server.ts';
import { createTable, LOCAL_IDEMPOTENCY_TABLE } from '../scripts/local-dynamodb.ts';
import { type Offline, startOffline } from '../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../tests/helpers/auth.ts';
import { signed } from '../tests/helpers/notifications.ts';
import { customer, customerToken, payingCustomer, saveCard } from '../tests/helpers/orders.ts';
import { freePort } from '../tests/helpers/ports.ts';
import { dynamoDbAt } from '../tests/helpers/state-table.ts';
import { busiestWindow } from '../tests/helpers/windows.ts';

/** The shares of this run: a customer may charge every second (10 per 10 s, with room for jitter). */
export const FAIRNESS_SHARES = {
  CALLER_RATE_LIMIT: '12/10000',
  CALLER_MONEY_RATE_LIMIT: '40/60000',
  MERCHANT_RATE_LIMIT: '100000/1000',
  MERCHANT_MONEY_RATE_LIMIT: '100000/1000',
  NOTIFY_RATE_LIMIT: '4/10000',
  ORDER_FAILED_ATTEMPTS: '3/3600000',
  UNKNOWN_LOOK_AGAIN_SECONDS: '30',
};

/** What the attacking customer does, each in a loop of its own. */
export const VECTORS = [
  'cancel its cancelled subscription, no key',
  'cancel it, a fresh key each time',
  'repeat a key whose outcome is unknown',
  'view its checkout whose report PayHere refutes',
  're-charge its failed order with a declining card, fresh keys',
  'replay one signed notification (no token)',
  'anonymous junk to /gateway/notify',
  'anonymous junk to the charge route',
] as const;

export interface FairnessFigures {
  durationMs: number;
  /** The victim's charges: status of each, and the slowest answer. */
  victim: { statuses: Record<string, number>; slowestMs: number; charges: number };
  /** The attacker's answers by vector and status. */
  attacker: Record<string, Record<string, number>>;
  /** PayHere's arrivals: all, the victim's charges among them, the most in any 10 s window. */
  arrivals: {
    total: number;
    victimCharges: number;
    byEndpoint: Record<string, number>;
    busiestWindow: number;
  };
}

const PAUSE_MS = 100;

export async function runFairness(options: { env: Record<string, string>; durationMs: number }) {
  const sandbox = await startSandbox({ rateLimit: { limit: 20, windowMs: 10_000 } });
  let offline: Offline | undefined;
  try {
    // A budget and token of the run's own, with PayHere's real size.
    const stateTable = `fairness-state-${randomUUID()}`;
    await createTable(options.env.DYNAMODB_ENDPOINT!, stateTable);
    // serverless-offline's functions keep keys in the local stage's idempotency table, whatever
    // the environment names: the tests' run has it, the bench's does not yet.
    await createTable(options.env.DYNAMODB_ENDPOINT!, LOCAL_IDEMPOTENCY_TABLE, { settleIndex: true }).catch(
      (error: { name?: string }) => {
        if (error.name !== 'ResourceInUseException') throw error;
      },
    );
    const env = {
      ...options.env,
      STATE_TABLE: stateTable,
      ...TEST_AUTH_ENV,
      ...sandboxGatewayEnv(sandbox.url),
      ...FAIRNESS_SHARES,
      GATEWAY_RATE_LIMIT: '20/10000',
      LOG_LEVEL: 'silent',
    };
    offline = await startOffline({ port: await freePort(), lambdaPort: await freePort(), env });
    return await hammer(sandbox, `${offline.baseUrl}/gateway`, env, options.durationMs);
  } finally {
    await offline?.stop();
    await sandbox.close();
  }
}

async function hammer(
  sandbox: Sandbox,
  base: string,
  env: Record<string, string>,
  durationMs: number,
): Promise<FairnessFigures> {
  const ledger = new LedgerStore({
    client: dynamoDbAt(env.DYNAMODB_ENDPOINT!),
    table: env.LEDGER_TABLE!,
  });
  const merchant = `Bearer ${await tokenFor(MERCHANT_SCOPES)}`;
  const send = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, ms: performance.now() - started, text };
  };
  const checkout = async (owner: string, kind: 'charge' | 'payment') => {
    const created = await send(
      'POST',
      '/api/checkouts',
      { authorization: merchant, 'on-behalf-of': owner },
      { kind, items: 'Door bell', currency: 'LKR', amount: 100 },
    );
    if (created.status !== 201) throw new Error(`checkout: ${created.status} ${created.text}`);
    return (JSON.parse(created.text) as { data: { order_id: string } }).data.order_id;
  };
  const chargeOf = (orderId: string, token: string) => ({
    type: 'PAYMENT',
    order_id: orderId,
    items: 'Door bell',
    currency: 'LKR',
    amount: 100,
    customer_token: token,
  });

  // The victim: a saved card and one priced order per second of the run.
  const victim = customer('victim');
  await saveCard(ledger, victim, SEED.customerTokens.success);
  const victimAuth = `Bearer ${await customerToken(victim)}`;
  const victimOrders: string[] = [];
  for (let i = 0; i < durationMs / 1000; i++) victimOrders.push(await checkout(victim, 'charge'));

  // The attacker: a subscription it cancelled, a declining saved card and a failed order, an
  // order whose charge's outcome is unknown, and a checkout with a report PayHere refutes.
  const attacker = await payingCustomer(sandbox, ledger, 0, 'attacker');
  await saveCard(ledger, attacker.sub, SEED.customerTokens.declined);
  const auth = { authorization: attacker.authorization };
  const subscription = `/api/subscriptions/${attacker.subscriptionId}`;
  await send('DELETE', subscription, auth);
  const failedOrder = await checkout(attacker.sub, 'charge');
  const unknownOrder = await checkout(attacker.sub, 'charge');
  const unknownKey = randomUUID();
  sandbox.faults.inject('charge', { kind: 'reset' });
  sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
  const unknown = await send(
    'POST',
    '/api/payments/charge',
    { ...auth, 'idempotency-key': unknownKey },
    chargeOf(unknownOrder, SEED.customerTokens.declined),
  );
  sandbox.faults.clear();
  if (unknown.status !== 202)
    throw new Error(`the attacker's unknown charge: ${unknown.status} ${unknown.text}`);
  const reportedOrder = await checkout(attacker.sub, 'payment');
  const notification = new URLSearchParams(
    signed({
      order_id: reportedOrder,
      payhere_amount: '100.00',
      status_code: '2',
      payment_id: '320099990001',
    }),
  ).toString();
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  await send('POST', '/notify', form, notification);
  await delay(10_500);
  sandbox.resetCounters();

  const attacks: Record<(typeof VECTORS)[number], () => Promise<{ status: number }>> = {
    'cancel its cancelled subscription, no key': () => send('DELETE', subscription, auth),
    'cancel it, a fresh key each time': () =>
      send('DELETE', subscription, { ...auth, 'idempotency-key': randomUUID() }),
    'repeat a key whose outcome is unknown': () =>
      send(
        'POST',
        '/api/payments/charge',
        { ...auth, 'idempotency-key': unknownKey },
        chargeOf(unknownOrder, SEED.customerTokens.declined),
      ),
    'view its checkout whose report PayHere refutes': () =>
      send('GET', `/api/checkouts/${reportedOrder}`, auth),
    're-charge its failed order with a declining card, fresh keys': () =>
      send(
        'POST',
        '/api/payments/charge',
        { ...auth, 'idempotency-key': randomUUID() },
        chargeOf(failedOrder, SEED.customerTokens.declined),
      ),
    'replay one signed notification (no token)': () => send('POST', '/notify', form, notification),
    'anonymous junk to /gateway/notify': () => send('POST', '/notify', form, 'order_id=x&md5sig=y'),
    'anonymous junk to the charge route': () =>
      send('POST', '/api/payments/charge', { 'idempotency-key': randomUUID() }, {}),
  };
  const byVector: FairnessFigures['attacker'] = {};
  const startedAt = Date.now();
  const until = startedAt + durationMs;
  const loops = VECTORS.map(async (vector) => {
    const statuses: Record<string, number> = {};
    byVector[vector] = statuses;
    while (Date.now() < until) {
      const { status } = await attacks[vector]();
      statuses[status] = (statuses[status] ?? 0) + 1;
      await delay(PAUSE_MS);
    }
  });
  const victimAnswers = victimOrders.map(async (orderId, i) => {
    await delay(i * 1000);
    return send(
      'POST',
      '/api/payments/charge',
      { authorization: victimAuth, 'idempotency-key': randomUUID() },
      chargeOf(orderId, SEED.customerTokens.success),
    );
  });
  const [answers] = await Promise.all([Promise.all(victimAnswers), Promise.all(loops)]);

  const statuses: Record<string, number> = {};
  for (const answer of answers) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
  const arrivals = sandbox.arrivals();
  const byEndpoint = sandbox.counters();
  return {
    durationMs: Date.now() - startedAt,
    victim: {
      statuses,
      slowestMs: Math.max(...answers.map((answer) => answer.ms)),
      charges: answers.length,
    },
    attacker: byVector,
    arrivals: {
      total: arrivals.length,
      victimCharges: answers.filter((answer) => answer.status === 200).length,
      byEndpoint,
      busiestWindow: busiestWindow(
        arrivals.map((arrival) => arrival.at),
        10_000,
      ),
    },
  };
}

/** The bench's table of a run, and what it must show (the same as the test's). */
export function fairnessSection(figures: FairnessFigures): { lines: string[]; failures: string[] } {
  const seconds = Math.round(figures.durationMs / 1000);
  const failures: string[] = [];
  const victimOk = Object.keys(figures.victim.statuses).every((status) => status === '200');
  if (!victimOk)
    failures.push(`fairness: the charging customer got ${JSON.stringify(figures.victim.statuses)}`);
  if (figures.arrivals.busiestWindow > 20)
    failures.push(`fairness: ${figures.arrivals.busiestWindow} PayHere arrivals in one 10 s window`);
  const format = (statuses: Record<string, number>) =>
    Object.entries(statuses)
      .map(([status, n]) => `${status}: ${n}`)
      .join(', ');
  const others = figures.arrivals.total - figures.arrivals.victimCharges;
  const lines = [
    '## Fairness: one customer against everyone',
    '',
    `One customer hammers every vector below for ${seconds} s (each in a loop of its own, one request at a time, ${PAUSE_MS} ms apart) while a second customer charges its own priced order every second, through serverless-offline (npm start's stack, several function workers) against the sandbox with PayHere's limit (20 per 10 s), shares as deployed but a customer's: ${FAIRNESS_SHARES.CALLER_RATE_LIMIT} calls and ${FAIRNESS_SHARES.CALLER_MONEY_RATE_LIMIT} money requests (ms), so that a charge a second fits. Budgets: every charge of the second customer 200; no 10 s window of PayHere arrivals over 20.`,
    '',
    '| caller | what | answers |',
    '|---|---|---|',
    `| the second customer | a charge every second | ${format(figures.victim.statuses)} (slowest ${Math.round(figures.victim.slowestMs)} ms) |`,
    ...VECTORS.map(
      (vector) => `| the first customer | ${vector} | ${format(figures.attacker[vector] ?? {})} |`,
    ),
    '',
    '| PayHere calls | count |',
    '|---|---|',
    `| the second customer's charges | ${figures.arrivals.victimCharges} |`,
    `| everything else (the first customer's vectors, tokens) | ${others}: ${format(
      Object.fromEntries(
        Object.entries(figures.arrivals.byEndpoint)
          .map(
            ([endpoint, n]) =>
              [endpoint, endpoint === 'charge' ? n - figures.arrivals.victimCharges : n] as const,
          )
          .filter(([, n]) => n > 0),
      ),
    )} |`,
    `| most in any 10 s window | ${figures.arrivals.busiestWindow} |`,
  ];
  return { lines, failures };
}
