import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, SEED, startSandbox } from '../../sandbox/server.ts';
import type { Offline } from '../../scripts/offline.ts';
import { MERCHANT_SCOPES, TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { injectDynamoDbFault } from '../helpers/dynamodb-faults.ts';
import { startOfflineAgainst } from '../helpers/offline.ts';
import { testLedger } from '../helpers/orders.ts';
import { chargeBody, paymentsOf } from '../resilience/fixtures.ts';

/**
 * Every unknown ends in PayHere's truth through `npm start`'s stack (serverless-offline, the
 * functions in their workers, the sandbox and the local DynamoDB as real loopback servers, faults
 * injected over their control routes): a claim whose DynamoDB answer was lost, PayHere's clock
 * behind ours, a pending charge PayHere fails later. The functions run with no settle delay and no
 * wait between looks, so a repeat of a key settles at once.
 */
let sandbox: Sandbox;
let offline: Offline;
let api: string;
const ledger = testLedger();

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
  ({ offline, api } = await startOfflineAgainst(sandbox, {
    ...TEST_AUTH_ENV,
    ESBUILD_WORK_FOLDER: '.esbuild-unknowns-offline',
    SETTLE_DELAY_SECONDS: '0',
    SETTLE_SECOND_LOOK_SECONDS: '0',
    UNKNOWN_LOOK_AGAIN_SECONDS: '0',
  }));
}, 180_000);

afterAll(async () => {
  await offline?.stop();
  await sandbox?.close();
});

async function charge(body: object, key = randomUUID()) {
  const response = await fetch(`${api}/payments/charge`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${await tokenFor(MERCHANT_SCOPES)}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { data: any; msg: string } };
}

describe('through npm start’s stack', () => {
  it('a claim whose DynamoDB answer was lost is the charge’s own: paid once, the order succeeded', async () => {
    const body = chargeBody();
    await injectDynamoDbFault({
      operation: 'UpdateItem',
      table: process.env.LEDGER_TABLE!,
      keyPrefix: `order#${body.order_id}`,
      fault: { kind: 'applyAndLose' },
    });

    const charged = await charge(body);

    expect(charged.status).toBe(200);
    expect(await ledger.getOrder(body.order_id)).toMatchObject({
      state: 'succeeded',
      charge: { inflight: false },
    });
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });

  it('with PayHere’s clock 3 s behind, a lost charge’s repeat adopts its payment; a new key is refused', async () => {
    sandbox.setClockOffset(-3_000);
    try {
      const body = chargeBody();
      const key = randomUUID();
      sandbox.faults.inject('charge', { kind: 'reset' });
      sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
      const lost = await charge(body, key);
      sandbox.faults.clear();

      const repeat = await charge(body, key);
      const another = await charge(body);

      expect(lost.status).toBe(202);
      expect(repeat.status).toBe(200);
      expect(another.status).toBe(409);
      expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
    } finally {
      sandbox.setClockOffset(0);
    }
  });

  it('a pending charge PayHere fails later, signed, for its payment: the order may be charged again', async () => {
    const body = { ...chargeBody(), customer_token: SEED.customerTokens.pending };
    const pending = await charge(body);

    await sandbox.decidePending(body.order_id, 'failure', {
      notify_url: `${offline.baseUrl}/gateway/notify`,
    });
    const failed = await ledger.getOrder(body.order_id);
    const again = await charge({ ...body, customer_token: SEED.customerTokens.success });

    expect(pending.status).toBe(202);
    expect(failed?.state).toBe('failed');
    expect(again.status).toBe(200);
  });
});
