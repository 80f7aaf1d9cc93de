import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { DYNAMODB_WRITE_WORST_MS, WRITES_AFTER_ANSWER_MS } from '../../lib/config/dynamodb.ts';
import type { DynamoDBClient } from '../../lib/dynamodb/index.ts';
import { GatewayUnavailableError, notSent } from '../../lib/envelope/errors.ts';
import { paymentOutcomeResponse } from '../../lib/envelope/payment-outcome.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { MAX_REQUEST_BUDGET_MS, RESPONSE_RESERVE_MS } from '../../lib/http/deadline.ts';
import { runIdempotent } from '../../lib/idempotency/idempotent.ts';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { chargeBody, localClient, testStore, validRequest } from './fixtures.ts';

/**
 * Issue "One truth for did it reach PayHere?": each case that fell between the old mechanisms,
 * with the behaviour that keeps money safe: a request that may have reached PayHere is never sent
 * again; one that provably did not is released so its key can be retried.
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const payhere = () => createPayHere(loadConfig(process.env));

/** A DynamoDB client that sends the chosen writes twice, as the SDK does when it lost the first answer. */
function repeatingClient(repeat: (name: string) => boolean): DynamoDBClient {
  const base = localClient();
  return {
    send: async (command: { constructor: { name: string } }) => {
      if (repeat(command.constructor.name)) await base.send(command as never);
      return base.send(command as never);
    },
  } as unknown as DynamoDBClient;
}

/** A DynamoDB client whose chosen writes always fail, as when the table cannot be reached. */
function failingClient(fails: (name: string) => boolean): DynamoDBClient {
  const base = localClient();
  return {
    send: async (command: { constructor: { name: string } }) => {
      if (fails(command.constructor.name))
        throw Object.assign(new Error('connect ETIMEDOUT'), { name: 'TimeoutError' });
      return base.send(command as never);
    },
  } as unknown as DynamoDBClient;
}

const ok = { statusCode: 200, headers: {}, body: '{"status":1}' };

describe('a money request abandoned before it was sent', () => {
  it('is not sent, and its key is released: the deadline passed before a byte left', async () => {
    const store = testStore();
    const key = randomUUID();
    const request = validRequest(chargeBody());
    const charge = async (deadline: number) =>
      paymentOutcomeResponse((await payhere().charge(request.body, deadline)).data, 'ok', [2]);

    const late = await runIdempotent({ operation: 'charge', store }, key, request, () =>
      charge(Date.now() - 1),
    ).catch((error: unknown) => error);
    const sent = sandbox.counters().charge ?? 0;
    const again = await runIdempotent({ operation: 'charge', store }, key, request, () =>
      charge(Date.now() + 5_000),
    );

    // Thrown on, released: route() renders it as its envelope (504, retry with the same key).
    expect(late).toMatchObject({ httpStatus: 504, reach: 'not_sent' });
    expect(sent).toBe(0);
    expect(again.statusCode).toBe(200);
    expect(JSON.parse(again.body).data.order_id).toBe(request.body.order_id);
  });
});

/** A charge run under a new key with `store`: its answer, and how often its request was sent. */
async function chargeOnce(store: ReturnType<typeof testStore>) {
  let executions = 0;
  const answer = await runIdempotent(
    { operation: 'charge', store },
    randomUUID(),
    validRequest(chargeBody()),
    async () => {
      executions++;
      return ok;
    },
  );
  return { answer, executions };
}

describe('the SDK repeating a write of ours that was done', () => {
  it('begin: the record it finds is our own, so the request goes ahead (not 409 for 25 s)', async () => {
    const store = testStore(
      undefined,
      repeatingClient((name) => name === 'PutItemCommand'),
    );
    const { answer, executions } = await chargeOnce(store);

    expect(answer.statusCode).toBe(200);
    expect(executions).toBe(1);
  });

  it('begin: applied on every try with every answer lost, the record found is ours, so the request goes ahead', async () => {
    // Prepare: the record's write lands and its answer never comes back (all the SDK's tries).
    const base = localClient();
    const lost = {
      send: async (command: { constructor: { name: string } }) => {
        const answer = await base.send(command as never);
        if (command.constructor.name === 'PutItemCommand')
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        return answer;
      },
    } as unknown as DynamoDBClient;
    const store = testStore(undefined, lost);

    // Act
    const { answer, executions } = await chargeOnce(store);

    // Assess: sent once, not answered 503 with a record left that locks the key as possibly sent.
    expect(answer.statusCode).toBe(200);
    expect(executions).toBe(1);
  });

  it('finish and release: the answer or the deletion is ours, done', async () => {
    const store = testStore(
      undefined,
      repeatingClient((name) => name !== 'GetItemCommand'),
    );
    const key = `test#${randomUUID()}`;
    const begun = await store.begin(key, 'fp', Date.now() + 10_000);
    if (!('acquired' in begun)) throw new Error('expected to acquire');
    const other = await store.begin(`test#${randomUUID()}`, 'fp', Date.now() + 10_000);
    if (!('acquired' in other)) throw new Error('expected to acquire');

    expect(await store.finish(begun.acquired, 'complete', ok)).toBe(true);
    expect(await store.release(other.acquired)).toBe(true);
  });
});

describe('a release that fails', () => {
  it('is marked not sent, so the next repeat sends the request instead of calling it unknown', async () => {
    const store = testStore(
      undefined,
      failingClient((name) => name === 'DeleteItemCommand'),
    );
    const key = randomUUID();
    const request = validRequest(chargeBody());
    let executions = 0;
    const execute = async () => {
      executions++;
      if (executions === 1) throw notSent(new GatewayUnavailableError('the gateway could not be reached'));
      return ok;
    };

    const first = await runIdempotent({ operation: 'charge', store }, key, request, execute).catch(
      (error: unknown) => error,
    );
    const repeat = await runIdempotent(
      { operation: 'charge', store },
      key,
      validRequest(request.body),
      execute,
    );

    expect(first).toMatchObject({ httpStatus: 503, reach: 'not_sent' });
    expect(repeat.statusCode).toBe(200);
    expect(executions).toBe(2);
  });

  it('that cannot even be marked leaves the key locked, then unknown: never sent twice', async () => {
    const failing = failingClient((name) => name === 'DeleteItemCommand' || name === 'UpdateItemCommand');
    const store = testStore(undefined, failing);
    const key = randomUUID();
    const request = validRequest(chargeBody());
    let executions = 0;
    const execute = async () => {
      executions++;
      throw notSent(new GatewayUnavailableError('the gateway could not be reached'));
    };

    await runIdempotent({ operation: 'charge', store }, key, request, execute).catch(() => undefined);
    const repeat = await runIdempotent(
      { operation: 'charge', store },
      key,
      validRequest(request.body),
      execute,
    ).catch((error: unknown) => error);

    expect(repeat).toMatchObject({ httpStatus: 409, code: 'idempotency_in_progress' });
    expect(executions).toBe(1);
  });
});

describe('the request deadline', () => {
  it('keeps the bookkeeping after PayHere answers inside the function’s timeout', () => {
    // serverless.yml gives every function 25 s; the writes after the answer can take this long at worst.
    const functionTimeoutMs = 25_000;
    const upstreamMs = Math.min(
      MAX_REQUEST_BUDGET_MS,
      functionTimeoutMs - RESPONSE_RESERVE_MS - WRITES_AFTER_ANSWER_MS,
    );

    expect(WRITES_AFTER_ANSWER_MS).toBeGreaterThanOrEqual(2 * DYNAMODB_WRITE_WORST_MS);
    expect(upstreamMs + WRITES_AFTER_ANSWER_MS + RESPONSE_RESERVE_MS).toBeLessThanOrEqual(functionTimeoutMs);
    expect(upstreamMs).toBeGreaterThanOrEqual(10_000);
  });

  it('of a money request ends that much earlier than a read’s', async () => {
    const started = Date.now();
    sandbox.faults.inject('charge', { kind: 'hang' });

    // 12 s left: 1 s for PayHere, 1 s to answer, 10 s for the writes after the answer.
    const answer = await call('charge', { body: chargeBody(), remainingMs: 12_000 });

    expect(answer.statusCode).toBe(202);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('answers that decide the outcome', () => {
  it('a capture answered status_code 2 with its amounts as strings is captured, not unknown', async () => {
    sandbox.faults.inject('capture', {
      kind: 'status',
      status: 200,
      contentType: 'application/json',
      body: '{"status":1,"msg":"Successfully captured payment","data":{"status_code":"2","captured_amount":"80.00","amount":"100.00","payment_id":"320025527952"}}',
    });

    const answer = await call('capture', {
      body: { authorization_token: SEED.authorizationTokens.capturable, amount: 80, deduction_details: 'x' },
    });

    expect(answer.statusCode).toBe(200);
    expect(answer.body.data).toMatchObject({ status_code: '2', captured_amount: '80.00' });
  });
});

describe('fingerprints taken over the request as PayHere receives it', () => {
  it('capture: `description` and `deduction_details` are the same field', async () => {
    const key = randomUUID();
    const hold = (await call('charge', { body: chargeBody({ type: 'AUTHORIZE' }) })).body.data
      .authorization_token;

    const first = await call('capture', {
      body: { authorization_token: hold, amount: 5, description: 'Part' },
      idempotencyKey: key,
    });
    const again = await call('capture', {
      body: { authorization_token: hold, amount: 5, deduction_details: 'Part' },
      idempotencyKey: key,
    });

    expect(first.statusCode).toBe(200);
    expect(again.headers['Idempotent-Replayed']).toBe('true');
  });

  it('refund: a payment id as a number or as a digit string is the same payment', async () => {
    const key = randomUUID();
    const paid = (await call('charge', { body: chargeBody() })).body.data.payment_id;

    const first = await call('refund', {
      body: { payment_id: paid, description: 'Returned' },
      idempotencyKey: key,
    });
    const again = await call('refund', {
      body: { payment_id: String(paid), description: 'Returned' },
      idempotencyKey: key,
    });

    expect(first.statusCode).toBe(200);
    expect(again.headers['Idempotent-Replayed']).toBe('true');
  });

  it('retry: a subscription id with a leading zero is the same subscription', async () => {
    const key = randomUUID();

    const first = await call('retrySubscription', {
      id: String(SEED.subscriptions.failed),
      idempotencyKey: key,
    });
    const again = await call('retrySubscription', {
      id: `0${SEED.subscriptions.failed}`,
      idempotencyKey: key,
    });

    expect(first.statusCode).toBe(200);
    expect(again.headers['Idempotent-Replayed']).toBe('true');
  });
});

describe('a hold whose answer was lost', () => {
  it('is settled on repeat from PayHere’s notification of it, never sent again', async () => {
    const key = randomUUID();
    const body = chargeBody({ type: 'AUTHORIZE', amount: 120.5 });
    sandbox.faults.inject('charge', { kind: 'reset' });
    const first = await call('charge', { body, idempotencyKey: key });
    const hold = randomUUID();
    await notify(
      signed({
        order_id: body.order_id,
        payhere_amount: '120.50',
        status_code: '3',
        authorization_token: hold,
      }),
    );

    const repeat = await call('charge', { body, idempotencyKey: key });

    expect(first.statusCode).toBe(202);
    expect(first.body.msg).toMatch(/GET \/gateway\/api\/checkouts\//);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.body.data).toMatchObject({ status_code: 3, authorization_token: hold });
    expect(sandbox.counters().charge).toBe(1);
  });
});
