import { randomUUID } from 'node:crypto';
import { type Sandbox, SEED } from '../../sandbox/server.ts';
import type { CallOptions } from '../helpers/gateway.ts';
import type { GatewayRouteName } from '../helpers/routes.ts';
import { accessToken, apiClient } from '../sandbox/helpers.ts';

/** Which sandbox endpoint each route calls first. */
export const UPSTREAM: Record<GatewayRouteName, string> = {
  charge: 'charge',
  capture: 'capture',
  refund: 'refund',
  retrievePayments: 'search',
  listSubscriptions: 'listSubscriptions',
  getSubscription: 'getSubscription',
  subscriptionPayments: 'subscriptionPayments',
  retrySubscription: 'retry',
  cancelSubscription: 'cancel',
};

export const MONEY_ROUTES = [
  'charge',
  'capture',
  'refund',
  'retrySubscription',
  'cancelSubscription',
] as const;

export function newOrderId(): string {
  return `R-${randomUUID().slice(0, 18)}`;
}

export function chargeBody(orderId = newOrderId(), type: 'PAYMENT' | 'AUTHORIZE' = 'PAYMENT') {
  return {
    type,
    order_id: orderId,
    items: 'Resilience test',
    currency: 'LKR',
    amount: 120.5,
    customer_token: SEED.customerTokens.success,
  };
}

/**
 * A valid request for `route` whose preconditions hold in the sandbox right now: a fresh order,
 * a new authorization to capture, a new payment to refund. Set-up calls go straight to the
 * sandbox, so reset its counters afterwards.
 */
export async function validRequest(sandbox: Sandbox, route: GatewayRouteName): Promise<CallOptions> {
  switch (route) {
    case 'charge':
      return { body: chargeBody() };
    case 'capture': {
      const api = apiClient(sandbox, await accessToken(sandbox));
      const held = await api.post('payment/charge', chargeBody(newOrderId(), 'AUTHORIZE'));
      return {
        body: {
          authorization_token: held.json.data.authorization_token,
          amount: 100,
          deduction_details: 'test',
        },
      };
    }
    case 'refund': {
      const api = apiClient(sandbox, await accessToken(sandbox));
      const paid = await api.post('payment/charge', chargeBody());
      return { body: { payment_id: paid.json.data.payment_id, description: 'test refund' } };
    }
    case 'retrievePayments':
      return { id: SEED.orders.sample };
    case 'listSubscriptions':
      return {};
    case 'getSubscription':
    case 'subscriptionPayments':
      return { id: String(SEED.subscriptions.active) };
    case 'retrySubscription':
      sandbox.resetState();
      return { id: String(SEED.subscriptions.failed) };
    case 'cancelSubscription':
      sandbox.resetState();
      return { id: String(SEED.subscriptions.active) };
  }
}

/** How many successful payments the sandbox holds for an order (what a double charge would show). */
export async function paymentsOf(sandbox: Sandbox, orderId: string): Promise<number> {
  const answer = await apiClient(sandbox, await accessToken(sandbox)).search(orderId);
  return answer.json.status === 1 ? answer.json.data.length : 0;
}
