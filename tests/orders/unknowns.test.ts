import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SEED } from '../../sandbox/server.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { notify, signed } from '../helpers/notifications.ts';
import { testLedger } from '../helpers/orders.ts';
import { ownIdempotencyTable, settleJob } from '../helpers/settle.ts';
import { chargeBody, paymentsOf } from '../resilience/fixtures.ts';

/**
 * Every unknown ends in PayHere's truth under the ordinary faults of a deployment, with PayHere's
 * stand-in producing them: its clock off ours, a charge it finishes late, a search that says
 * "pending", a pending charge it decides later. No order is paid twice; none stays unknown or
 * pending for good.
 */
const store = await ownIdempotencyTable();
/** How far the sandbox's clock is ahead of the service's: time passing at PayHere alone. */
let ahead = 0;
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens', now: () => Date.now() + ahead });
const ledger = testLedger();
const MINUTE = 60_000;
/** Past the default settle delay (10 minutes) after a request's window. */
const LATER = 12 * MINUTE;
const settle = (later: number) => settleJob(store, ledger, later).run();

/** A charge whose answer is lost, with the search that would settle it at once down: 202. */
async function lostCharge(fault: Parameters<typeof sandbox.faults.inject>[1], body = chargeBody()) {
  const key = randomUUID();
  sandbox.faults.inject('charge', fault);
  sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
  const answer = await call('charge', { body, idempotencyKey: key });
  sandbox.faults.clear();
  expect(answer.statusCode).toBe(202);
  return { body, key };
}

describe('a lost charge is matched by PayHere’s records, not by its clock', () => {
  it('with PayHere’s clock 3 s behind ours: the payment is adopted, the key answers it, no second charge', async () => {
    sandbox.setClockOffset(-3_000);
    try {
      const { body, key } = await lostCharge({ kind: 'reset' });

      const run = await settle(LATER);
      const repeat = await call('charge', { body, idempotencyKey: key });
      const another = await call('charge', { body });

      expect(run.settled).toBeGreaterThanOrEqual(1);
      expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
      expect(repeat.statusCode).toBe(200);
      expect(another.statusCode).toBe(409);
      expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
    } finally {
      sandbox.setClockOffset(0);
    }
  });

  it('finished by PayHere 26 s after it arrived: adopted when it shows, no second charge', async () => {
    const { body, key } = await lostCharge({ kind: 'processLate', ms: 26_000 });
    ahead += 27_000;

    await settle(LATER);
    const repeat = await call('charge', { body, idempotencyKey: key });
    const another = await call('charge', { body });

    expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
    expect(repeat.statusCode).toBe(200);
    expect(another.statusCode).toBe(409);
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });
});

describe('a lost capture is matched by PayHere’s records, not by its clock', () => {
  it('with PayHere’s clock 3 s behind ours, the captured payment settles it as captured', async () => {
    const held = await call('charge', { body: chargeBody(undefined, 'AUTHORIZE') });
    const capture = {
      authorization_token: held.body.data.authorization_token,
      amount: 120.5,
      deduction_details: 'Captured',
    };
    sandbox.setClockOffset(-3_000);
    try {
      const key = randomUUID();
      sandbox.faults.inject('capture', { kind: 'reset' });
      sandbox.faults.inject('search', { kind: 'status', status: 503 }, 3);
      const lost = await call('capture', { body: capture, idempotencyKey: key });
      sandbox.faults.clear();

      await settle(LATER);
      const repeat = await call('capture', { body: capture, idempotencyKey: key });

      expect(held.statusCode).toBe(200);
      expect(lost.statusCode).toBe(202);
      expect(repeat.statusCode).toBe(200);
    } finally {
      sandbox.setClockOffset(0);
    }
  });
});

describe('only "No payments found" means no payment', () => {
  it.each([
    ['a search answering pending', { kind: 'searchPending' as const }],
    ['a search refused otherwise', { kind: 'searchFailed' as const, msg: 'Error occurred' }],
  ])(
    '%s leaves the charge unknown past its delay; "not done" only after two looks at real answers',
    async (_, fault) => {
      const { body, key } = await lostCharge({ kind: 'resetBeforeProcessing' });
      sandbox.faults.inject('search', fault, Number.POSITIVE_INFINITY);

      await settle(LATER);
      await settle(LATER + 3 * MINUTE);
      const held = await ledger.getOrder(body.order_id);
      sandbox.faults.clear();
      await settle(LATER + 6 * MINUTE);
      await settle(LATER + 9 * MINUTE);
      const repeat = await call('charge', { body, idempotencyKey: key });

      expect(held?.state).toBe('unknown');
      expect((await ledger.getOrder(body.order_id))?.state).toBe('failed');
      expect(repeat.statusCode).toBe(402);
    },
  );
});

describe('a charge PayHere answered pending ends', () => {
  async function pendingCharge() {
    const body = { ...chargeBody(), customer_token: SEED.customerTokens.pending };
    const answer = await call('charge', { body });
    expect(answer.statusCode).toBe(202);
    const paymentId = String(answer.body.data.payment_id);
    expect(paymentId).toMatch(/^[0-9]+$/);
    return { body, paymentId };
  }

  it('failed by PayHere’s signed notification for its payment: chargeable again; a replay later moves nothing', async () => {
    const { body, paymentId } = await pendingCharge();
    const failure = signed({
      order_id: body.order_id,
      payhere_amount: '120.50',
      status_code: '-2',
      payment_id: paymentId,
    });

    await notify(failure);
    const failed = await ledger.getOrder(body.order_id);
    const again = await call('charge', { body: { ...body, customer_token: SEED.customerTokens.success } });
    await notify(failure);

    expect(failed?.state).toBe('failed');
    expect(again.statusCode).toBe(200);
    expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
  });

  it('not by a failure naming another payment', async () => {
    const { body } = await pendingCharge();

    await notify(
      signed({
        order_id: body.order_id,
        payhere_amount: '120.50',
        status_code: '-2',
        payment_id: '320099999999',
      }),
    );

    expect((await ledger.getOrder(body.order_id))?.state).toBe('pending');
    expect(
      (await call('charge', { body: { ...body, customer_token: SEED.customerTokens.success } })).statusCode,
    ).toBe(409);
  });

  it('not by a replay of an earlier signed failure with the payment id altered (PayHere does not sign it)', async () => {
    const { body, paymentId } = await pendingCharge();
    const earlier = { order_id: body.order_id, payhere_amount: '120.50', status_code: '-2' };
    await notify(signed({ ...earlier, payment_id: '320099999999' }));

    await notify(signed({ ...earlier, payment_id: paymentId }));

    expect((await ledger.getOrder(body.order_id))?.state).toBe('pending');
  });

  it('succeeded at PayHere without a notification: PayHere’s records decide it after the pending limit', async () => {
    const { body } = await pendingCharge();
    await sandbox.decidePending(body.order_id, 'success', {
      notify_url: 'https://notify.example.invalid/payhere',
    });

    await settle(24 * 60 * MINUTE + MINUTE);

    expect((await ledger.getOrder(body.order_id))?.state).toBe('succeeded');
    expect(await paymentsOf(sandbox, body.order_id)).toBe(1);
  });
});
