import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';

/** The whole path a client takes: HTTP → serverless-offline → bundled handler → sandbox over loopback. */
let sandbox: Sandbox;
let offline: Offline;
let api: string;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline, api } = await startOfflineAgainst(sandbox, TEST_AUTH_ENV));
}, 120_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

/** Every POST is a money request here: it gets a fresh Idempotency-Key unless `headers` bring one. */
async function request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const hasKey = Object.keys(headers).some((name) => name.toLowerCase() === 'idempotency-key');
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await tokenFor(MERCHANT_SCOPES)}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(method === 'POST' && !hasKey ? { 'idempotency-key': randomUUID() } : {}),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const raw = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    replayed: response.headers.get('idempotent-replayed'),
    raw,
    body: JSON.parse(raw) as { status: number; msg: string; data: any },
  };
}

describe('the nine routes through serverless-offline', () => {
  it('charges, then retrieves the order', async () => {
    const orderId = `E2E-${Date.now()}`;
    const charged = await request('POST', '/payments/charge', {
      type: 'PAYMENT',
      order_id: orderId,
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      customer_token: SEED.customerTokens.success,
    });
    const retrieved = await request('GET', `/payments/${orderId}`);

    expect(charged.status).toBe(200);
    expect(charged.contentType).toMatch(/application\/json/);
    expect(charged.body).toMatchObject({ status: 1, data: { order_id: orderId, status_code: 2 } });
    expect(retrieved.status).toBe(200);
    expect(retrieved.body.msg).toBe(`Payments with order_id:${orderId}`);
    expect(retrieved.body.data[0].payment_id).toBe(charged.body.data.payment_id);
  });

  it('captures a hold', async () => {
    const captured = await request('POST', '/payments/capture', {
      authorization_token: SEED.authorizationTokens.capturable,
      amount: 80,
      deduction_details: 'Item1 is out of stock',
    });

    expect(captured.status).toBe(200);
    expect(captured.body.data.captured_amount).toBe(80);
  });

  it('refunds a payment', async () => {
    const refunded = await request('POST', '/payments/refund', {
      payment_id: SEED.payments.refundable,
      description: 'Item is out of stock',
    });

    expect(refunded.status).toBe(200);
    expect(refunded.body.data.refund_id).toEqual(expect.any(Number));
  });

  it('lists, reads and lists the payments of subscriptions', async () => {
    const list = await request('GET', '/subscriptions');
    const one = await request('GET', `/subscriptions/${SEED.subscriptions.active}`);
    const payments = await request('GET', `/subscriptions/${SEED.subscriptions.active}/payments`);

    expect(list.status).toBe(200);
    expect(list.body.msg).toMatch(/^Found \d+ subscriptions$/);
    expect(one.body.data.subscription_id).toBe(SEED.subscriptions.active);
    expect(payments.body.msg).toBe('Found 2 payments');
  });

  it('retries a failed subscription and cancels an active one', async () => {
    const retried = await request('POST', `/subscriptions/${SEED.subscriptions.failed}/retry`);
    const cancelled = await request('DELETE', `/subscriptions/${SEED.subscriptions.active}`);

    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({ status: 1, msg: 'Recurring payment charged successfully', data: null });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toEqual({ status: 1, msg: 'Successfully cancelled the subscription', data: null });
  });

  it('answers a misspelled field with 400 naming it', async () => {
    const answer = await request('POST', '/payments/capture', {
      authorization_token: SEED.authorizationTokens.capturable,
      amount: 80,
      deduction_detail: 'typo',
    });

    expect(answer.status).toBe(400);
    expect(answer.body.data.errors).toEqual(
      expect.arrayContaining([{ path: 'deduction_detail', message: 'is not a known field' }]),
    );
  });
});

describe('idempotency through serverless-offline', () => {
  it('answers a repeated charge from the store, byte for byte, without charging again', async () => {
    const key = randomUUID();
    const body = {
      type: 'PAYMENT',
      order_id: `E2E-IDEM-${Date.now()}`,
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 99.5,
      customer_token: SEED.customerTokens.success,
    };
    const chargesBefore = sandbox.counters().charge ?? 0;

    const first = await request('POST', '/payments/charge', body, { 'Idempotency-Key': key });
    const repeat = await request('POST', '/payments/charge', body, { 'Idempotency-Key': key });

    expect(first.status).toBe(200);
    expect(first.replayed).toBeNull();
    expect(repeat.status).toBe(200);
    expect(repeat.replayed).toBe('true');
    expect(repeat.raw).toBe(first.raw);
    expect((sandbox.counters().charge ?? 0) - chargesBefore).toBe(1);
  });

  it('refuses a charge without an Idempotency-Key with 400 naming the header', async () => {
    const answer = await fetch(`${api}/payments/charge`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${await tokenFor('payments:charge merchant')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ type: 'PAYMENT' }),
    });
    const body = (await answer.json()) as { data: { errors: { path: string }[] } };

    expect(answer.status).toBe(400);
    expect(body.data.errors.map((error) => error.path)).toContain('Idempotency-Key');
  });
});

describe('the headers of every answer, through serverless-offline', () => {
  it('keep Cache-Control: no-store and nosniff on an answer and on a refusal', async () => {
    const answers = [
      await fetch(`${api}/subscriptions`, {
        headers: { authorization: `Bearer ${await tokenFor(MERCHANT_SCOPES)}` },
      }),
      await fetch(`${api}/subscriptions`),
    ];

    expect(answers.map((answer) => answer.status)).toEqual([200, 401]);
    for (const answer of answers) {
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });
});

describe('a running serverless-offline', () => {
  it('serves the code it started with: a source file written while it answers rebuilds and reloads nothing', async () => {
    // The request waits 8 s on PayHere: long enough for a rebuild of every function, and the
    // reload that ends the workers answering (serverless-esbuild's watcher did both), to cut it short.
    sandbox.faults.inject('search', { kind: 'latency', ms: 8_000 });
    const probe = new URL(`./.watch-probe-${randomUUID()}.ts`, import.meta.url);
    const answering = request('GET', `/payments/WATCH-${randomUUID()}`);
    try {
      await writeFile(probe, 'export {};\n');
      const answer = await answering;

      expect(answer.status).toBe(404);
      expect(answer.body.data.code).toBe('not_found');
    } finally {
      sandbox.faults.clear();
      await rm(probe, { force: true });
    }
  }, 60_000);
});
