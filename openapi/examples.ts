import type { Envelope } from '../lib/envelope/envelope.ts';
import { paymentOutcomeResponse } from '../lib/envelope/payment-outcome.ts';
import type { ChargeResult } from '../lib/gateway/schemas.ts';
import { checkoutHash } from '../lib/orders/checkout.ts';
import { NOTIFY_PATH } from '../lib/orders/config.ts';
import type { ReconciliationReport } from '../lib/orders/reconciliation.ts';
import { reconciliationCsv } from '../lib/orders/reconciliation-csv.ts';
import { SANDBOX_CREDENTIALS, SEED } from '../sandbox/server.ts';
import { md5sig } from '../sandbox/signature.ts';
import { GatewayState } from '../sandbox/state.ts';

/**
 * The document's examples: requests made with the sandbox's seeded data (sandbox/README.md) and
 * the answers the sandbox gives them, put in the envelope by the functions' own builders. A fresh
 * sandbox state at a fixed time makes them the same on every run (the generator runs in a process
 * of its own, so the sandbox's payment numbers start from the first one).
 */
const state = new GatewayState({
  now: () => Date.UTC(2026, 0, 15, 4, 30, 0),
  merchantId: SANDBOX_CREDENTIALS.merchantId,
  merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
});

const LOCAL_API = 'http://127.0.0.1:3000';

const ok = <T>(msg: string, data: T): Envelope<T> => ({ status: 1, msg, data });

/** The envelope the functions send for a charge or capture result (lib/envelope/payment-outcome.ts). */
function outcome(answer: { msg: string; data: unknown }, successCodes: number[]): Envelope {
  const response = paymentOutcomeResponse(answer.data as ChargeResult, answer.msg, successCodes);
  return JSON.parse(response.body) as Envelope;
}

const price = { items: 'Taxi Hire 123', currency: 'LKR', amount: 345.67 };

const payment = {
  type: 'PAYMENT' as const,
  order_id: 'Order-1001',
  ...price,
  customer_token: SEED.customerTokens.success,
  custom_1: 'ride-8842',
  itemList: [{ name: 'Hire', number: 'HIRE_12345', quantity: 1, unit_amount: 345.67 }],
};
const authorize = {
  type: 'AUTHORIZE' as const,
  order_id: 'Order-1002',
  ...price,
  customer_token: SEED.customerTokens.success,
};
const pending = { ...payment, order_id: 'Order-1003', customer_token: SEED.customerTokens.pending };
const declined = { ...payment, order_id: 'Order-1004', customer_token: SEED.customerTokens.declined };

// The sandbox makes a random token for every hold; the example shows a fixed one.
const held = state.charge(authorize);
const heldData = { ...(held.data as object), authorization_token: '0b7f3a52-9c1e-4d8a-b6f0-2e5d7c9a1f34' };

const capture = {
  authorization_token: SEED.authorizationTokens.capturable,
  amount: 80,
  deduction_details: 'Item1 is out of stock',
};

const refundPayment = { payment_id: SEED.payments.refundable, description: 'Item is out of stock' };
const refundPart = { payment_id: SEED.payments.sample, amount: 100, description: 'One item returned' };
const releaseHold = {
  authorization_token: SEED.authorizationTokens.releasable,
  description: 'Order cancelled',
};

const refunded = (envelope: { msg: string; data: unknown }) =>
  ok(envelope.msg, { refund_id: (envelope.data as number | null) ?? null });

const checkoutRequest = {
  kind: 'payment',
  order_id: 'Order-2001',
  items: 'Door bell',
  currency: 'LKR',
  amount: 1000,
  itemList: [{ name: 'Door bell', number: 'DB-1', quantity: 1, unit_amount: 1000 }],
  customer_details: { first_name: 'Saman', last_name: 'Perera', email: 'saman@example.com' },
  metadata: { crm_id: 'C-1042' },
};
const recurringRequest = {
  kind: 'recurring',
  order_id: 'Gym-2002',
  items: 'Gym membership',
  currency: 'LKR',
  amount: 2500,
  recurrence: '1 Month',
  duration: '1 Year',
  startup_fee: 1000,
};
const checkoutParameters = {
  order_id: checkoutRequest.order_id,
  kind: 'payment',
  items: checkoutRequest.items,
  currency: 'LKR',
  amount: 1000,
  merchant_id: SANDBOX_CREDENTIALS.merchantId,
  notify_url: `${LOCAL_API}${NOTIFY_PATH}`,
  hash: checkoutHash({
    merchantId: SANDBOX_CREDENTIALS.merchantId,
    merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
    orderId: checkoutRequest.order_id,
    amountCents: 100_000,
    currency: 'LKR',
  }),
  sandbox: true,
};
const preapprovalRequest = { kind: 'preapproval', items: 'Save a card for rides', currency: 'LKR' };
const preapprovalOrder = 'ORD-3f1c9e2a-7b44-4d0e-9a61-58c2f0d7b913';

/** PayHere's notification that the checkout above was paid, signed with the sandbox merchant's secret. */
const paidNotification = {
  merchant_id: SANDBOX_CREDENTIALS.merchantId,
  order_id: checkoutRequest.order_id,
  payment_id: '320040000009',
  payhere_amount: '1000.00',
  payhere_currency: 'LKR',
  status_code: '2',
  md5sig: md5sig({
    merchantId: SANDBOX_CREDENTIALS.merchantId,
    orderId: checkoutRequest.order_id,
    amount: '1000.00',
    currency: 'LKR',
    statusCode: '2',
    merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
  }),
  custom_1: '',
  custom_2: '',
  status_message: 'Successfully completed the payment.',
  method: 'VISA',
  card_holder_name: 'S Perera',
  card_no: '************1234',
  card_expiry: '12/29',
  recurring: '0',
};

/** A day's reconciliation: two orders paid, one payment PayHere holds that the ledger lacks, one it lacks. */
const report: ReconciliationReport = {
  from: '2026-01-15',
  to: '2026-01-15',
  time_zone: 'UTC',
  generated_at: '2026-01-16T02:00:00.000Z',
  complete: false,
  orders: 4,
  checked: 3,
  unchecked: 1,
  checked_now: 3,
  oldest_check: '2026-01-16T02:00:00.000Z',
  days: [
    {
      date: '2026-01-15',
      totals: [
        {
          currency: 'LKR',
          orders_paid: 2,
          ordered: 2500,
          payments: 2,
          gross: 2200,
          fee: 63.8,
          net: 2136.2,
          refunds: 1,
          refunded: 250,
        },
      ],
      orders_paid: [
        {
          order_id: 'Order-1001',
          kind: 'charge',
          customer: 'alice',
          status: 'succeeded',
          currency: 'LKR',
          amount: 1000,
          payment_id: 320040000011,
        },
        {
          order_id: 'Order-1002',
          kind: 'payment',
          customer: 'bob',
          status: 'succeeded',
          currency: 'LKR',
          amount: 1500,
          payment_id: 320040000012,
        },
      ],
      payments: [
        {
          order_id: 'Order-1001',
          payment_id: 320040000011,
          status: 'RECEIVED',
          currency: 'LKR',
          amount: 1000,
          gross: 1000,
          fee: 29,
          net: 971,
          settlement_currency: 'LKR',
          date: '2026-01-15 10:00:00',
          in_ledger: true,
          checked_at: '2026-01-16T02:00:00.000Z',
        },
        {
          order_id: 'Order-1003',
          payment_id: 320040000013,
          status: 'RECEIVED',
          currency: 'LKR',
          amount: 1200,
          gross: 1200,
          fee: 34.8,
          net: 1165.2,
          settlement_currency: 'LKR',
          date: '2026-01-15 11:20:00',
          in_ledger: false,
          checked_at: '2026-01-16T02:00:00.000Z',
        },
      ],
      refunds: [
        {
          order_id: 'Order-1001',
          payment_id: 320040000011,
          amount: 250,
          full: false,
          at: '2026-01-15T06:00:00.000Z',
          refund_id: 560034010257,
          status: 'accepted',
        },
      ],
      differences: [
        {
          kind: 'payment_not_at_payhere',
          order_id: 'Order-1002',
          payment_id: 320040000012,
          ledger_status: 'succeeded',
          currency: 'LKR',
          ledger_amount: 1500,
          payhere_amount: null,
          action:
            "The ledger has order Order-1002 paid by payment 320040000012, but PayHere's records of the order show no payment: do not ship it until PayHere's portal shows the payment; if it never does, the order is not paid.",
          checked_at: '2026-01-16T02:00:00.000Z',
        },
        {
          kind: 'payment_not_in_ledger',
          order_id: 'Order-1003',
          payment_id: 320040000013,
          ledger_status: 'created',
          currency: 'LKR',
          ledger_amount: 1200,
          payhere_amount: 1200,
          action:
            'PayHere holds payment 320040000013 of 1200.00 LKR for order Order-1003, whose notification never reached the service: GET /gateway/api/checkouts/Order-1003 looks it up and records it. Fulfil the order once it shows succeeded.',
          checked_at: '2026-01-16T02:00:00.000Z',
        },
      ],
      unchecked: [{ order_id: 'Order-1004', status: 'created', reason: 'not_checked', checked_at: null }],
    },
  ],
};
/** PayHere's list as listSubscriptions answers it: one page, the last. */
function subscriptionPage(found: { status: number; msg: string; data: unknown }) {
  return { ...found, data: { subscriptions: found.data, next_cursor: null } };
}

export const EXAMPLES = {
  charge: {
    requests: { payment, authorize },
    paid: outcome(state.charge(payment), [2]),
    held: outcome({ msg: held.msg, data: heldData }, [2, 3]),
    pending: outcome(state.charge(pending), [2]),
    declined: outcome(state.charge(declined), [2]),
  },
  capture: {
    request: capture,
    captured: outcome(state.capture(capture), [2]),
  },
  refund: {
    requests: { refundPayment, refundPart, releaseHold },
    refunded: refunded(state.refund(refundPayment)),
    released: refunded(state.refund(releaseHold)),
  },
  retrievePayments: {
    orderId: SEED.orders.sample,
    found: state.searchPayments(SEED.orders.sample),
    pending: {
      status: 0,
      msg: `The payment of order Order-1003 is pending at the gateway; check again later.`,
      data: [],
    },
  },
  listSubscriptions: { found: state.listSubscriptions(), page: subscriptionPage(state.listSubscriptions()) },
  getSubscription: { id: SEED.subscriptions.active, found: state.getSubscription(SEED.subscriptions.active) },
  subscriptionPayments: {
    id: SEED.subscriptions.active,
    found: state.subscriptionPayments(SEED.subscriptions.active),
  },
  retrySubscription: { id: SEED.subscriptions.failed, retried: state.retry(SEED.subscriptions.failed) },
  cancelSubscription: { id: SEED.subscriptions.active, cancelled: state.cancel(SEED.subscriptions.active) },
  createCheckout: {
    requests: { payment: checkoutRequest, preapproval: preapprovalRequest, recurring: recurringRequest },
    created: ok('Checkout created', checkoutParameters),
    again: ok('Checkout already exists', checkoutParameters),
    recurring: ok('Checkout created', {
      ...checkoutParameters,
      order_id: recurringRequest.order_id,
      kind: 'recurring',
      items: recurringRequest.items,
      amount: recurringRequest.amount,
      hash: checkoutHash({
        merchantId: SANDBOX_CREDENTIALS.merchantId,
        merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
        orderId: recurringRequest.order_id,
        amountCents: recurringRequest.amount * 100,
        currency: 'LKR',
      }),
      recurrence: recurringRequest.recurrence,
      duration: recurringRequest.duration,
      startup_fee: recurringRequest.startup_fee,
    }),
    preapproval: ok('Checkout created', {
      ...checkoutParameters,
      order_id: preapprovalOrder,
      kind: 'preapproval',
      items: preapprovalRequest.items,
      amount: null,
      hash: checkoutHash({
        merchantId: SANDBOX_CREDENTIALS.merchantId,
        merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
        orderId: preapprovalOrder,
        amountCents: null,
        currency: 'LKR',
      }),
    }),
  },
  getCheckout: {
    orderId: checkoutRequest.order_id,
    created: ok(`Order ${checkoutRequest.order_id}`, {
      order_id: checkoutRequest.order_id,
      kind: 'payment',
      status: 'created',
      items: checkoutRequest.items,
      currency: 'LKR',
      amount: 1000,
      payment_id: null,
      customer_token: null,
      authorization_token: null,
      subscription_id: null,
      card: null,
      verified: null,
      duplicate_payment_ids: [],
      item_list: [{ name: 'Door bell', number: 'DB-1', quantity: 1, unit_amount: 1000 }],
      custom_1: null,
      custom_2: null,
      customer_details: { first_name: 'Saman', last_name: 'Perera', email: 'saman@example.com' },
      metadata: { crm_id: 'C-1042' },
      startup_fee: null,
      next_installment: null,
      updated_at: '2026-01-15T04:30:00.000Z',
    }),
    savedCard: ok(`Order ${preapprovalOrder}`, {
      order_id: preapprovalOrder,
      kind: 'preapproval',
      status: 'succeeded',
      items: preapprovalRequest.items,
      currency: 'LKR',
      amount: null,
      payment_id: 320040000009,
      customer_token: SEED.customerTokens.success,
      authorization_token: null,
      subscription_id: null,
      card: { method: 'VISA', card_no: '************1234', card_expiry: '12/29' },
      verified: null,
      duplicate_payment_ids: [],
      item_list: null,
      custom_1: null,
      custom_2: null,
      customer_details: null,
      metadata: null,
      startup_fee: null,
      next_installment: null,
      updated_at: '2026-01-15T04:31:12.000Z',
    }),
    unverifiedHold: ok('Order Hold-3001', {
      order_id: 'Hold-3001',
      kind: 'authorize',
      status: 'succeeded',
      items: 'Toy Car',
      currency: 'LKR',
      amount: 100,
      payment_id: 320040000011,
      customer_token: null,
      authorization_token: 'e34f3059-7b7d-4b62-a57c-784beaa169f4',
      subscription_id: null,
      card: { method: 'VISA', card_no: '************1234', card_expiry: '12/27' },
      verified: false,
      duplicate_payment_ids: [],
      item_list: null,
      custom_1: null,
      custom_2: null,
      customer_details: null,
      metadata: null,
      startup_fee: null,
      next_installment: null,
      updated_at: '2026-01-15T04:32:40.000Z',
    }),
  },
  listOrders: {
    page: ok('Found 2 orders', {
      orders: [
        {
          order_id: 'Order-1002',
          kind: 'charge',
          status: 'succeeded',
          charge_in_flight: false,
          customer: 'alice',
          items: 'Taxi Hire 124',
          currency: 'LKR',
          amount: 250,
          payment_id: 320040000012,
          subscription_id: null,
          custom_1: 'ride-88',
          custom_2: null,
          customer_details: { first_name: 'Alice', email: 'alice@example.com' },
          metadata: { crm_id: 'C-2001' },
          startup_fee: null,
          next_installment: null,
          created_at: '2026-01-15T04:31:02.000Z',
          updated_at: '2026-01-15T04:31:03.000Z',
        },
        {
          order_id: 'Order-1001',
          kind: 'payment',
          status: 'succeeded',
          charge_in_flight: false,
          customer: 'bob',
          items: 'Taxi Hire 123',
          currency: 'LKR',
          amount: 1000,
          payment_id: 320040000011,
          subscription_id: null,
          custom_1: null,
          custom_2: null,
          customer_details: null,
          metadata: null,
          startup_fee: null,
          next_installment: null,
          created_at: '2026-01-15T04:30:00.000Z',
          updated_at: '2026-01-15T04:31:12.000Z',
        },
      ],
      next_cursor: 'eyJwIjoiMDAxNzY4NDUxNDAwMDAwI09yZGVyLTEwMDEiLCJiIjoiZXhhbXBsZSJ9',
    }),
  },
  paymentRefunds: {
    id: 320040000011,
    found: ok('Found 2 refunds', {
      payment_id: 320040000011,
      order_id: 'Order-1001',
      currency: 'LKR',
      amount: 1000,
      refunded: 1000,
      left: 0,
      undetermined: 0,
      payhere_status: 'REFUND PROCESSING',
      payhere_status_at: '2026-01-15T05:10:00.000Z',
      refunds: [
        {
          id: 'k3VJ0m3b9H2s4tq6Q1x8Zw',
          payment_id: 320040000011,
          amount: 250,
          full: false,
          at: '2026-01-15T04:40:00.000Z',
          by: 'backoffice',
          refund_id: 560034010257,
          status: 'accepted',
        },
        {
          id: 'Tn7cR0u2pLq5w8Ez1yVb4A',
          payment_id: 320040000011,
          amount: 750,
          full: true,
          at: '2026-01-15T04:45:00.000Z',
          by: 'backoffice',
          refund_id: 560034010258,
          status: 'accepted',
        },
      ],
    }),
  },
  reconciliationReport: {
    query: { from: '2026-01-15', to: '2026-01-15' },
    report: ok(
      'Reconciliation of 2026-01-15 to 2026-01-15 (UTC): 2 differences, 1 orders not checked yet',
      report,
    ),
    csv: reconciliationCsv(report),
  },
  notify: {
    paid: paidNotification,
    recorded: ok('Notification recorded', null),
  },
  listEvents: {
    page: ok('Found 2 events', {
      events: [
        {
          id: 'evt_3f1c0a9e5b7d4c2a8e6f1b3d5a7c9e0f',
          type: 'order.succeeded',
          created_at: '2026-01-15T04:31:03.000Z',
          object: { type: 'order', id: 'Order-1002' },
          sequence: 1,
          data: {
            order_id: 'Order-1002',
            kind: 'charge',
            status: 'succeeded',
            amount: 250,
            currency: 'LKR',
            payment_id: '320040000012',
            subscription_id: null,
            evidence: 'charge_succeeded',
          },
        },
        {
          id: 'evt_8a2e4c6b0d1f3a5c7e9b2d4f6a8c0e1b',
          type: 'refund.settled',
          created_at: '2026-01-15T05:02:11.000Z',
          object: { type: 'payment', id: '320040000012' },
          sequence: 2,
          data: {
            payment_id: '320040000012',
            amount: 50,
            refund_id: 560034010258,
            evidence: 'refund_accepted',
          },
        },
      ],
      next_cursor: 'MDE3Njg0NTMzMzAwMCNldnRfOGEyZTRjNmIwZDFmM2E1YzdlOWIyZDRmNmE4YzBlMWI',
      has_more: false,
    }),
  },
  webhookDeliveries: {
    page: ok('Found 2 deliveries', {
      deliveries: [
        {
          event_id: 'evt_01kf0e5d2r8q4w6y9z3b7c1m5n',
          type: 'order.succeeded',
          object: { type: 'order', id: 'Order-1002' },
          endpoint: 'default',
          status: 'delivered',
          attempts: 1,
          last_status: 204,
          last_error: null,
          last_attempt_at: '2026-01-15T04:31:04.120Z',
          next_attempt_at: null,
          delivered_at: '2026-01-15T04:31:04.180Z',
        },
        {
          event_id: 'evt_01kf0e4w7t2p9x5v3r8n6k4j2h',
          type: 'order.created',
          object: { type: 'order', id: 'Order-1002' },
          endpoint: 'default',
          status: 'pending',
          attempts: 2,
          last_status: 503,
          last_error: 'HTTP 503',
          last_attempt_at: '2026-01-15T04:31:08.000Z',
          next_attempt_at: '2026-01-15T04:36:08.000Z',
          delivered_at: null,
        },
      ],
      next_cursor: null,
    }),
  },
  redeliverEvent: {
    id: 'evt_01kf0e5d2r8q4w6y9z3b7c1m5n',
    due: ok('Event evt_01kf0e5d2r8q4w6y9z3b7c1m5n is due for delivery to 1 endpoints', {
      event_id: 'evt_01kf0e5d2r8q4w6y9z3b7c1m5n',
      endpoints: ['default'],
      due_at: '2026-01-15T04:40:00.000Z',
    }),
  },
};
