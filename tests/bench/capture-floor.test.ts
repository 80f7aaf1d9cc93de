import { describe, expect, it } from 'vitest';
import { captureBookkeeping } from '../../bench/warm.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { ledgerRequests } from '../helpers/ledger-requests.ts';
import { testLedger } from '../helpers/orders.ts';
import { chargeBody, newOrderId } from '../resilience/fixtures.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/**
 * The bench's capture floor (bench/warm.ts captureBookkeeping) stands for what the capture route
 * itself asks of the ledger once PayHere accepted it, so that the bench's "our code over the floor"
 * counts none of those round trips as the service's own: the same ledger requests, item for item,
 * as a merchant's capture through the handler sends (less the events' relay, after the answer),
 * whether the hold's order is in the ledger (authorized through the service, as deployed) or not
 * (authorized at PayHere directly, as the bench prepares its holds).
 */
const sandbox = useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();

/** A hold to capture: authorized through the service (its order in the ledger), or at PayHere. */
async function hold(through: 'service' | 'payhere'): Promise<{ token: string; orderId: string }> {
  const body = chargeBody(newOrderId(), 'AUTHORIZE');
  if (through === 'payhere') {
    const api = apiClient(sandbox, await accessToken(sandbox));
    const held = await api.post('payment/charge', body);
    return { token: held.json.data.authorization_token, orderId: body.order_id };
  }
  const authorized = await call('charge', { body });
  expect(authorized.statusCode).toBe(200);
  await backgroundSettled();
  return { token: authorized.body.data.authorization_token as string, orderId: body.order_id };
}

describe('the bench’s capture floor', () => {
  it.each(['service', 'payhere'] as const)(
    'asks the ledger for what a merchant’s capture through the route asks it (a hold authorized through the %s)',
    async (through) => {
      const routeHold = await hold(through);
      const floorHold = await hold(through);
      const capture = (token: string) => ({
        authorization_token: token,
        amount: 100,
        deduction_details: 'Shipped',
      });
      // PayHere's answer to the floor's capture, as the bench's floor hears it: its hold's order.
      const answer = {
        status: 1,
        msg: 'Successfully captured payment',
        data: { status_code: 2, order_id: floorHold.orderId },
      };

      const route = await ledgerRequests(async () => {
        const captured = await call('capture', { body: capture(routeHold.token) });
        expect(captured.statusCode).toBe(200);
      });
      const floor = await ledgerRequests(() =>
        captureBookkeeping(ledger, JSON.stringify(capture(floorHold.token)), JSON.stringify(answer)),
      );

      expect(route.length).toBeGreaterThan(0);
      expect([...floor].sort()).toEqual([...route].sort());
    },
  );
});
