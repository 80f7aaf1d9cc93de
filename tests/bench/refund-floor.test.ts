import { describe, expect, it } from 'vitest';
import { refundBookkeeping } from '../../bench/warm.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { ledgerRequests } from '../helpers/ledger-requests.ts';
import { testLedger } from '../helpers/orders.ts';
import { chargeBody } from '../resilience/fixtures.ts';

/**
 * The bench's refund floor (bench/warm.ts refundBookkeeping) stands for what the refund route itself
 * asks of the ledger, so that the bench's "our code over the floor" counts none of those round trips
 * as the service's own: the same ledger requests, item for item, as a merchant's refund through the
 * handler sends (less the events' relay, which runs after the answer).
 */
useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();

async function chargedPayment(): Promise<string> {
  const charged = await call('charge', { body: chargeBody() });
  expect(charged.statusCode).toBe(200);
  await backgroundSettled();
  return String(charged.body.data.payment_id);
}

describe('the bench’s refund floor', () => {
  it('asks the ledger for what a merchant’s refund through the route asks it', async () => {
    const routePayment = await chargedPayment();
    const floorPayment = await chargedPayment();
    const body = { payment_id: routePayment, amount: 20, description: 'Broken' };

    const route = await ledgerRequests(async () => {
      const refunded = await call('refund', { body });
      expect(refunded.statusCode).toBe(200);
    });
    const floor = await ledgerRequests(() =>
      refundBookkeeping(ledger, JSON.stringify({ ...body, payment_id: floorPayment }), async () =>
        JSON.stringify({ status: 1, msg: 'Refund accepted', data: { refund_id: 1 } }),
      ),
    );

    expect(route.length).toBeGreaterThan(0);
    // Requests sent together may leave in either order: the same requests, counted.
    expect([...floor].sort()).toEqual([...route].sort());
  });
});
