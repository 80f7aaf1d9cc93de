import { describe, expect, it } from 'vitest';
import { type ClientOptions, createClient, NetworkError, nextStep } from '../../client/index.ts';

/** The client's own rules, against a scripted fetch (end to end: client-offline.test.ts). */

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

type Scripted = { status: number; body: unknown; headers?: Record<string, string> } | Error;

function scriptedFetch(script: Scripted[]) {
  const sent: Sent[] = [];
  const fetch = (async (input: string, init: RequestInit) => {
    sent.push({
      url: input,
      method: init.method ?? 'GET',
      headers: init.headers as Record<string, string>,
      body: init.body as string | undefined,
    });
    const next = script.shift();
    if (!next) throw new Error('the script ran out');
    if (next instanceof Error) throw next;
    return new Response(JSON.stringify(next.body), {
      status: next.status,
      headers: { 'Content-Type': 'application/json', ...next.headers },
    });
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

function client(script: Scripted[], options: Partial<ClientOptions> = {}) {
  const { fetch, sent } = scriptedFetch(script);
  const waits: number[] = [];
  let keys = 0;
  let tokens = 0;
  const api = createClient({
    baseUrl: 'https://api.example.test/prod/',
    token: () => `token-${++tokens}`,
    fetch,
    newIdempotencyKey: () => `key-${++keys}`,
    sleep: async (ms) => void waits.push(ms),
    ...options,
  });
  return { api, sent, waits };
}

const charge = {
  type: 'PAYMENT',
  order_id: 'Order-1001',
  items: 'Taxi Hire 123',
  currency: 'LKR',
  amount: 345.67,
  customer_token: '59AFEE022CC69CA39D325E1B59130862',
} as const;
const paid = {
  status: 1,
  msg: 'Automatic payment charged successfully',
  data: { order_id: 'Order-1001', currency: 'LKR', amount: 345.67, payment_id: 320040000001, status_code: 2 },
};
const unknown = {
  status: 0,
  msg: 'The gateway did not confirm the charge.',
  data: { code: 'outcome_unknown' },
};
const lost = new TypeError('fetch failed');

describe('a money call', () => {
  it('sends a new Idempotency-Key per call, with the token, as JSON', async () => {
    const { api, sent } = client([
      { status: 200, body: paid },
      { status: 200, body: paid },
    ]);

    const first = await api.charge({ body: charge });
    await api.charge({ body: charge });

    expect(sent.map((request) => request.headers['Idempotency-Key'])).toEqual(['key-1', 'key-2']);
    expect(sent[0]).toEqual({
      url: 'https://api.example.test/prod/gateway/api/payments/charge',
      method: 'POST',
      headers: {
        Accept: 'application/json',
        Authorization: 'Bearer token-1',
        'Content-Type': 'application/json',
        'Idempotency-Key': 'key-1',
      },
      body: JSON.stringify(charge),
    });
    expect(first).toMatchObject({ httpStatus: 200, status: 1, replayed: false, idempotencyKey: 'key-1' });
  });

  it('repeats with the same key after a lost answer, asking for the token again', async () => {
    const { api, sent } = client([
      lost,
      { status: 200, body: paid, headers: { 'Idempotent-Replayed': 'true' } },
    ]);

    const answer = await api.charge({ body: charge });

    expect(sent.map((request) => request.headers['Idempotency-Key'])).toEqual(['key-1', 'key-1']);
    expect(sent.map((request) => request.headers.Authorization)).toEqual([
      'Bearer token-1',
      'Bearer token-2',
    ]);
    expect(answer).toMatchObject({ httpStatus: 200, replayed: true });
  });

  it('repeats with the same key after 202 outcome_unknown, and keeps the key when it stays unknown', async () => {
    const { api, sent, waits } = client([
      { status: 202, body: unknown },
      { status: 202, body: unknown },
      { status: 202, body: unknown },
    ]);

    const answer = await api.charge({ body: charge });

    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((request) => request.headers['Idempotency-Key']))).toEqual(new Set(['key-1']));
    expect(waits).toEqual([500, 1000]);
    expect(answer).toMatchObject({
      httpStatus: 202,
      data: { code: 'outcome_unknown' },
      idempotencyKey: 'key-1',
    });
  });

  it('repeats an earlier call when given its key', async () => {
    const { api, sent } = client([{ status: 200, body: paid }]);

    await api.charge({ body: charge, idempotencyKey: 'the-first-key' });

    expect(sent[0]!.headers['Idempotency-Key']).toBe('the-first-key');
  });

  it('fails with the key to repeat it later when no attempt got an answer', async () => {
    const { api, sent } = client([lost, lost, lost]);

    const failure = await api.charge({ body: charge }).catch((error: unknown) => error);

    expect(sent).toHaveLength(3);
    expect(failure).toBeInstanceOf(NetworkError);
    expect((failure as NetworkError).idempotencyKey).toBe('key-1');
  });

  it('honours Retry-After on 409 idempotency_in_progress, with the same key', async () => {
    const inProgress = { status: -1, msg: 'still processing', data: { code: 'idempotency_in_progress' } };
    const { api, sent, waits } = client([
      { status: 409, body: inProgress, headers: { 'Retry-After': '2' } },
      { status: 200, body: paid, headers: { 'Idempotent-Replayed': 'true' } },
    ]);

    const answer = await api.charge({ body: charge });

    expect(waits).toEqual([2000]);
    expect(sent.map((request) => request.headers['Idempotency-Key'])).toEqual(['key-1', 'key-1']);
    expect(answer.httpStatus).toBe(200);
  });

  it('does not wait longer than maxWaitSeconds: a longer Retry-After is answered at once', async () => {
    const limited = { status: -1, msg: 'Too many requests', data: { code: 'rate_limited' } };
    const { api, sent, waits } = client(
      [{ status: 429, body: limited, headers: { 'Retry-After': '3600' } }],
      {
        maxWaitSeconds: 5,
      },
    );

    const answer = await api.charge({ body: charge });

    expect(sent).toHaveLength(1);
    expect(waits).toEqual([]);
    expect(answer).toMatchObject({ httpStatus: 429, data: { code: 'rate_limited' } });
  });

  it('answers a failure with its typed code, without repeating it', async () => {
    const rejected = {
      status: -1,
      msg: 'The gateway refused the charge: Invalid token',
      data: { code: 'gateway_rejected' },
    };
    const { api, sent } = client([{ status: 422, body: rejected }]);

    const answer = await api.charge({ body: charge });

    expect(sent).toHaveLength(1);
    if (answer.httpStatus !== 422) throw new Error(`expected 422, got ${answer.httpStatus}`);
    const code: 'idempotency_key_reused' | 'gateway_rejected' = answer.data.code;
    expect(code).toBe('gateway_rejected');
  });

  it('names the customer with On-Behalf-Of where the call creates orders, and refuses it elsewhere', async () => {
    const { api, sent } = client([{ status: 200, body: paid }]);

    await api.charge({ body: charge, onBehalfOf: 'alice' });
    const refused = await api
      .refund({ body: { payment_id: 1, description: 'x' }, onBehalfOf: 'alice' })
      .catch((error: unknown) => error);

    expect(sent[0]!.headers['On-Behalf-Of']).toBe('alice');
    expect(refused).toBeInstanceOf(TypeError);
    expect(sent).toHaveLength(1);
  });
});

describe('a read', () => {
  it('sends no Idempotency-Key and puts path parameters in the path, encoded', async () => {
    const found = { status: 1, msg: 'Payments with order_id:Order 1/2', data: [] };
    const { api, sent } = client([{ status: 200, body: found, headers: { Age: '4' } }]);

    const answer = await api.retrievePayments({ path: { id: 'Order 1/2' } });

    expect(sent[0]!.url).toBe('https://api.example.test/prod/gateway/api/payments/Order%201%2F2');
    expect(sent[0]!.headers['Idempotency-Key']).toBeUndefined();
    expect(answer).toMatchObject({ httpStatus: 200, age: 4, replayed: false });
    expect(answer.idempotencyKey).toBeUndefined();
  });

  it('repeats after a lost answer, and honours Retry-After on 503', async () => {
    const unavailable = { status: -1, msg: 'later', data: { code: 'gateway_unavailable' } };
    const list = { status: 1, msg: 'Found 0 subscriptions', data: [] };
    const { api, waits } = client([
      lost,
      { status: 503, body: unavailable, headers: { 'Retry-After': '1' } },
      { status: 200, body: list },
    ]);

    const answer = await api.listSubscriptions();

    expect(waits).toEqual([500, 1000]);
    expect(answer.httpStatus).toBe(200);
  });
});

describe('nextStep', () => {
  const limits = { attempts: 3, maxWaitMs: 10_000 };
  const answered = (httpStatus: number, code?: string, retryAfter: string | null = null) =>
    ({ lost: false, httpStatus, code, retryAfter }) as const;

  it.each([
    ['a lost answer', { lost: true } as const, 1, { repeat: true, waitMs: 500 }],
    ['a lost answer, second time', { lost: true } as const, 2, { repeat: true, waitMs: 1000 }],
    ['anything after the last attempt', { lost: true } as const, 3, { repeat: false }],
    ['outcome_unknown', answered(202, 'outcome_unknown'), 1, { repeat: true, waitMs: 500 }],
    ['a pending payment', answered(202), 1, { repeat: false }],
    ['429 with Retry-After', answered(429, 'rate_limited', '3'), 1, { repeat: true, waitMs: 3000 }],
    ['429 without Retry-After', answered(429, 'rate_limited'), 1, { repeat: false }],
    ['409 conflict', answered(409, 'conflict', '1'), 1, { repeat: false }],
    ['Retry-After beyond the bound', answered(503, 'gateway_unavailable', '11'), 1, { repeat: false }],
    ['a success', answered(200), 1, { repeat: false }],
  ])('%s', (_, outcome, attempt, expected) => {
    expect(nextStep(outcome, attempt, limits)).toEqual(expected);
  });
});

describe('query strings', () => {
  it('sends the parameters a list takes, leaving out those not given, and none otherwise', async () => {
    const page = { status: 1, msg: 'Found 0 orders', data: { orders: [], next_cursor: null } };
    const { api, sent } = client([
      { status: 200, body: page },
      { status: 200, body: page },
    ]);

    await api.listOrders({
      query: { status: 'succeeded', customer: 'alice bob', limit: '2', cursor: undefined },
    });
    await api.listOrders();

    expect(sent.map((request) => request.url)).toEqual([
      'https://api.example.test/prod/gateway/api/orders?status=succeeded&customer=alice+bob&limit=2',
      'https://api.example.test/prod/gateway/api/orders',
    ]);
  });
});

describe('webhook deliveries', () => {
  it('lists the deliveries with their filters, and redelivers an event to one endpoint', async () => {
    const page = { status: 1, msg: 'Found 0 deliveries', data: { deliveries: [], next_cursor: null } };
    const due = {
      status: 1,
      msg: 'Event evt_01 is due for delivery to 1 endpoints',
      data: { event_id: 'evt_01', endpoints: ['crm'], due_at: '2026-01-15T04:40:00.000Z' },
    };
    const { api, sent } = client([
      { status: 200, body: page },
      { status: 200, body: due },
    ]);

    const list = await api.webhookDeliveries({ query: { status: 'failed', endpoint: 'crm' } });
    const redelivery = await api.redeliverEvent({ path: { id: 'evt_01' }, query: { endpoint: 'crm' } });

    expect(list.httpStatus === 200 && list.data.deliveries).toEqual([]);
    expect(redelivery.httpStatus === 200 && redelivery.data.endpoints).toEqual(['crm']);
    expect(sent.map((request) => [request.method, request.url])).toEqual([
      ['GET', 'https://api.example.test/prod/gateway/api/webhooks/deliveries?status=failed&endpoint=crm'],
      ['POST', 'https://api.example.test/prod/gateway/api/events/evt_01/redeliver?endpoint=crm'],
    ]);
  });
});

describe('the reconciliation report as CSV', () => {
  const csvFetch = (answers: Response[]) => {
    const sent: { url: string; accept: string }[] = [];
    const fetch = (async (input: string, init: RequestInit) => {
      sent.push({ url: input, accept: (init.headers as Record<string, string>).Accept! });
      return answers.shift()!;
    }) as typeof globalThis.fetch;
    return { fetch, sent };
  };
  const options = (fetch: typeof globalThis.fetch) => ({
    baseUrl: 'https://api.example.test/prod',
    token: () => 'token',
    fetch,
    sleep: async () => undefined,
  });

  it('asks for text/csv with format=csv and answers its text', async () => {
    const text = 'date,line\r\n2026-01-15,total\r\n';
    const { fetch, sent } = csvFetch([
      new Response(text, { status: 200, headers: { 'Content-Type': 'text/csv; charset=utf-8' } }),
    ]);

    const answer = await createClient(options(fetch)).reconciliationCsv({
      query: { from: '2026-01-15', to: '2026-01-15' },
    });

    expect(answer).toEqual({ httpStatus: 200, csv: text });
    expect(sent).toEqual([
      {
        url: 'https://api.example.test/prod/gateway/api/reports/reconciliation?from=2026-01-15&to=2026-01-15&format=csv',
        accept: 'text/csv',
      },
    ]);
  });

  it('answers a failure with its envelope', async () => {
    const refused = {
      status: -2,
      msg: 'Only the merchant reads reconciliation reports.',
      data: { code: 'forbidden' },
    };
    const { fetch } = csvFetch([
      new Response(JSON.stringify(refused), { status: 403, headers: { 'Content-Type': 'application/json' } }),
    ]);

    const answer = await createClient(options(fetch)).reconciliationCsv({
      query: { from: '2026-01-15', to: '2026-01-15' },
    });

    expect(answer).toMatchObject({ httpStatus: 403, ...refused });
  });

  it('refuses format=csv on the JSON call before sending anything', async () => {
    const { fetch, sent } = csvFetch([]);

    await expect(
      createClient(options(fetch)).reconciliationReport({
        query: { from: '2026-01-15', to: '2026-01-15', format: 'csv' },
      }),
    ).rejects.toThrow(/use reconciliationCsv/);
    expect(sent).toEqual([]);
  });
});
