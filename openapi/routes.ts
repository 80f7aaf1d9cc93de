import type * as z from 'zod/mini';
import type { EnvelopeStatus } from '../lib/envelope/envelope.ts';
import {
  type ApiError,
  CallerRateLimitedError,
  ConflictError,
  ForbiddenError,
  GatewayRejectedError,
  InvalidRequestError,
  InvalidSignatureError,
  NotFoundError,
  OrderConflictError,
  OutcomeUndeterminableError,
  OutcomeUnknownError,
} from '../lib/envelope/errors.ts';
import { CaptureResult, ChargeResult, PaymentRecord, SubscriptionRecord } from '../lib/gateway/schemas.ts';
import type { Scope } from '../lib/http/auth/scopes.ts';
import { FORM_MEDIA_TYPE } from '../lib/http/form-route.ts';
import { parse } from '../lib/http/validation.ts';
import { CaptureRequest } from '../lib/schemas/capture.ts';
import { ChargeRequest } from '../lib/schemas/charge.ts';
import { CheckoutRequest } from '../lib/schemas/checkout.ts';
import { EventsQuery } from '../lib/schemas/events.ts';
import { Notification } from '../lib/schemas/notification.ts';
import { OrdersQuery, SubscriptionsQuery } from '../lib/schemas/orders.ts';
import { CheckoutPath, OrderPath, PaymentPath, SubscriptionPath } from '../lib/schemas/paths.ts';
import { RefundRequest } from '../lib/schemas/refund.ts';
import { ReconciliationQuery } from '../lib/schemas/reports.ts';
import { DeliveriesQuery, EventPath, RedeliverQuery } from '../lib/schemas/webhooks.ts';
import {
  CheckoutParametersSchema,
  CheckoutViewSchema,
  DeliveryListSchema,
  EventPageSchema,
  OrderListSchema,
  PaymentRefundsSchema,
  ReconciliationReportSchema,
  RedeliverySchema,
  RefundAnswer,
  SubscriptionListSchema,
} from './data.ts';
import { EXAMPLES } from './examples.ts';

/**
 * The route table: everything the API description says about a route, one entry per function of
 * serverless.yml, keyed by the function's name (the operationId). Schemas are the very objects the
 * functions validate with; tests hold each entry to its function's route() options and to
 * serverless.yml. A new route is described by adding its entry here and running `npm run openapi`.
 *
 * Only the generator (openapi/generate.ts) and tests read this folder: no function imports it, so
 * no cold start pays for it (tests/e2e/package.test.ts checks the bundles).
 */

type Schema = z.ZodMiniType;

export interface Example<T = unknown> {
  summary: string;
  value: T;
}

/** An answer that is not a failure: its `data` is one record, a list of them, or null. */
export interface Answer {
  httpStatus: number;
  status: EnvelopeStatus;
  data: Schema | { listOf: Schema } | null;
  description: string;
  examples?: Example[];
  /** The same answer in another media type than JSON, chosen by the request (the reconciliation report's CSV). */
  text?: { mediaType: 'text/csv'; example: string };
}

/** A failure the route can answer besides the common ones (openapi/failures.ts), as the function throws it. */
export interface Failure {
  error: ApiError;
  /** When, on this route; otherwise the code's general "when" (FAILURE_WHEN). */
  when?: string;
}

export interface RouteDoc {
  method: 'get' | 'post' | 'delete';
  /** As in serverless.yml, with a leading slash. */
  path: string;
  tag: 'Payments' | 'Subscriptions' | 'Checkouts' | 'Orders' | 'Notifications' | 'Webhooks';
  summary: string;
  /** Markdown. */
  description: string;
  /** The token scope the route requires; none for PayHere's notifications, which are signed instead. */
  scope?: Scope;
  /** The path parameters' schema (route()'s `path`), and what the parameter is. */
  pathParameters?: Schema;
  pathDescription?: string;
  pathExample?: string | number;
  /** The query string's schema (route()'s `query`), what each parameter is, and the sample event's query. */
  queryParameters?: Schema;
  queryDescriptions?: Record<string, string>;
  queryExample?: Record<string, string>;
  body?: Schema;
  /** The body's media type when it is not JSON: PayHere posts notifications as a form. */
  mediaType?: typeof FORM_MEDIA_TYPE;
  /** The body's rules its JSON Schema cannot carry (checks across fields). */
  bodyRules?: string;
  bodyExamples?: Example[];
  /** Money routes: an Idempotency-Key is required and answers are replayed. */
  idempotent?: true | 'optional';
  /** The route creates orders: a merchant may name their owner with On-Behalf-Of. */
  createsOrders?: true;
  /** `payhere`: the route calls PayHere; `ledger`: it answers from the service's own records. */
  upstream: 'payhere' | 'ledger';
  /**
   * Reads that may be answered from data shared for a few seconds, with `Age`
   * (docs/contract.md "PayHere's budget").
   */
  shared?: true;
  answers: Answer[];
  /** An invalid request to this route and the 400 it gets (made by the functions' own validation). */
  invalid: InvalidRequestError;
  failures: Failure[];
}

/** The 400 answer to `input`, as route() validates it. */
function invalid(schema: Schema, input: unknown, prefix = ''): InvalidRequestError {
  const parsed = parse(schema, input, prefix);
  if (parsed.ok) throw new Error(`the invalid example is valid: ${JSON.stringify(input)}`);
  return new InvalidRequestError(parsed.errors);
}

const ok = (description: string, data: Answer['data'], examples?: Example[]): Answer => ({
  httpStatus: 200,
  status: 1,
  data,
  description,
  ...(examples ? { examples } : {}),
});

const paymentOutcomes = (result: Schema, examples: { pending?: unknown; declined?: unknown }): Answer[] => [
  {
    httpStatus: 202,
    status: 0,
    data: result,
    description: 'Pending at the gateway (`status_code` 0): not final; check the order later.',
    ...(examples.pending ? { examples: [{ summary: 'Pending', value: examples.pending }] } : {}),
  },
  {
    httpStatus: 402,
    status: -1,
    data: result,
    description: "Declined or cancelled (`status_code` -2 or -1): `msg` is the gateway's reason.",
    ...(examples.declined ? { examples: [{ summary: 'Declined', value: examples.declined }] } : {}),
  },
];

const notFound = (message: string, when?: string): Failure => ({
  error: new NotFoundError(message),
  ...(when ? { when } : {}),
});

/** PayHere refused the request with a refusal envelope (top-level `status` -1 or -2, no result): nothing was processed. */
const paymentRefused = (operation: string): Failure => ({
  error: new GatewayRejectedError(`The gateway refused the ${operation}: Customer authentication failed`),
  when: `PayHere refused the ${operation} before processing it (its top-level status -2 without a result): nothing was processed.`,
});

const SUBSCRIPTION_ID = 'A PayHere subscription id: digits only (leading zeros are ignored).';
const unknownSubscription = notFound('Subscription 420075039999 was not found.');
const badSubscriptionId = invalid(SubscriptionPath, { id: 'S-42' }, 'path');

const ON_BEHALF_OF_BY_CUSTOMER: Failure = {
  error: new ForbiddenError('Only a merchant token may act on behalf of a customer (On-Behalf-Of).'),
  when: 'A customer token sent On-Behalf-Of.',
};

export const ROUTE_TABLE = {
  charge: {
    method: 'post',
    path: '/gateway/api/payments/charge',
    tag: 'Payments',
    summary: 'Charge or hold a pre-approved card',
    description:
      'Charges (`PAYMENT`) or holds (`AUTHORIZE`) a customer whose card was pre-approved (its `customer_token`). ' +
      "The answer follows the result's `status_code`: 200 paid (2) or held (3, with an `authorization_token`), " +
      '202 pending (0), 402 declined (-1, -2).\n\n' +
      'A customer charges only its own saved card, and, unless the service runs with `CHARGE_PRICING=client`, only an ' +
      'order the merchant priced for it (a `charge` checkout) at exactly that price. An order has at most one ' +
      'successful, pending or unknown payment.\n\n' +
      'PayHere does not deduplicate: a repeat with the same Idempotency-Key never charges again, and a charge whose ' +
      "answer was lost is settled from the order's payments.\n\n" +
      '`itemList`, `custom_1/2`, `customer_details` and `metadata` are kept on the order (getCheckout shows them); ' +
      "`customer_details` and `metadata` (the merchant's own, refused from a customer) are never sent to PayHere.",
    scope: 'payments:charge',
    body: ChargeRequest,
    bodyExamples: [
      { summary: 'Charge a saved card', value: EXAMPLES.charge.requests.payment },
      { summary: 'Hold an amount on a saved card', value: EXAMPLES.charge.requests.authorize },
    ],
    idempotent: true,
    createsOrders: true,
    upstream: 'payhere',
    answers: [
      ok('Paid (`status_code` 2) or held (`AUTHORIZE`, `status_code` 3).', ChargeResult, [
        { summary: 'Paid', value: EXAMPLES.charge.paid },
        { summary: 'Held', value: EXAMPLES.charge.held },
      ]),
      ...paymentOutcomes(ChargeResult, EXAMPLES.charge),
    ],
    invalid: invalid(ChargeRequest, { ...EXAMPLES.charge.requests.payment, amount: 345.678, tip: 10 }),
    failures: [
      ON_BEHALF_OF_BY_CUSTOMER,
      notFound(
        'The customer token was not found.',
        "A customer's charge names a customer token or order it does not own.",
      ),
      {
        error: new OrderConflictError(
          'The charge disagrees with the price of order Order-1001: check amount.',
          [{ path: 'amount', message: "must equal the order's amount" }],
        ),
      },
      { error: new GatewayRejectedError('The gateway refused the charge: Invalid token') },
    ],
  },
  capture: {
    method: 'post',
    path: '/gateway/api/payments/capture',
    tag: 'Payments',
    summary: 'Capture an authorized hold',
    description:
      'Captures all or part of an amount held by an `AUTHORIZE` charge. The reason may be sent as `deduction_details` ' +
      "or, equally, `description`. The answer follows `status_code` as a charge's does.",
    scope: 'payments:capture',
    body: CaptureRequest,
    bodyRules:
      'Give the reason as `deduction_details` or `description` (the same field; when both are given they must be equal).',
    bodyExamples: [{ summary: 'Capture part of a hold', value: EXAMPLES.capture.request }],
    idempotent: true,
    upstream: 'payhere',
    answers: [
      ok('Captured (`status_code` 2).', CaptureResult, [
        { summary: 'Captured', value: EXAMPLES.capture.captured },
      ]),
      ...paymentOutcomes(CaptureResult, {}),
    ],
    invalid: invalid(CaptureRequest, { authorization_token: 'e34f3059', amount: 0 }),
    failures: [
      notFound('The authorization was not found.', 'A customer names a hold it does not own.'),
      { error: new ConflictError('Authorization is already CAPTURED') },
      {
        error: new GatewayRejectedError(
          'The gateway refused the capture: Capture amount must be less than or equal to the authorized amount',
        ),
      },
    ],
  },
  refund: {
    method: 'post',
    path: '/gateway/api/payments/refund',
    tag: 'Payments',
    summary: 'Refund a payment or release a hold',
    description:
      'Refunds a payment, fully or (with `amount`) partly, or releases an authorized hold in full. ' +
      '`data.refund_id` is the refund number, or null when a hold was released.',
    scope: 'payments:refund',
    body: RefundRequest,
    bodyRules:
      'Exactly one of `payment_id` (refund a payment) or `authorization_token` (release a hold). `amount` only with `payment_id`.',
    bodyExamples: [
      { summary: 'Refund a payment in full', value: EXAMPLES.refund.requests.refundPayment },
      { summary: 'Refund part of a payment', value: EXAMPLES.refund.requests.refundPart },
      { summary: 'Release a hold', value: EXAMPLES.refund.requests.releaseHold },
    ],
    idempotent: true,
    upstream: 'payhere',
    answers: [
      ok('Refunded, or the hold released (`refund_id` null).', RefundAnswer, [
        { summary: 'Refunded', value: EXAMPLES.refund.refunded },
        { summary: 'Hold released', value: EXAMPLES.refund.released },
      ]),
    ],
    invalid: invalid(RefundRequest, { payment_id: 320027150501, authorization_token: 'x', description: '' }),
    failures: [
      notFound('Payment 320027150501 was not found.', 'A customer names a payment or hold it does not own.'),
      {
        error: new ConflictError(
          'Your refund of payment 320027150501 with Idempotency-Key refund-320027150501 has no known outcome yet: PayHere may have made it, and nothing was sent now. Repeat that request with the same Idempotency-Key to settle it before refunding again.',
          'refund-320027150501',
        ),
        when: 'Another refund of the payment is still in flight (being processed, or its outcome unknown): nothing was sent. Its own caller is told its Idempotency-Key (`data.idempotency_key`), to repeat it; another caller only that it is in flight. Refund again once it is settled. Also when the refund is above what is left of the payment, as the ledger knows it (the amount of its order less the refunds PayHere accepted through the service; `GET /gateway/api/payments/{id}/refunds` shows it): nothing was sent.',
      },
      { error: new GatewayRejectedError('The gateway refused the refund: Error processing refund') },
      {
        error: new OutcomeUndeterminableError(
          "Payment 320027150501 was refunded before, and PayHere's records show its status, not its refunds, so they cannot tell this refund from an earlier one: whether this refund was made cannot be determined. Check the payment's refunds in PayHere's portal before refunding it again.",
        ),
        when: "A refund whose answer was lost is settled for good (after the settle delay) where PayHere's records cannot show whether it was made: a payment refunded before through the service, or one the ledger does not know. Never a success: check the payment in PayHere's portal.",
      },
    ],
  },
  retrievePayments: {
    method: 'get',
    path: '/gateway/api/payments/{id}',
    tag: 'Payments',
    summary: 'The payments of an order',
    description: "The payments PayHere recorded for an order (PayHere's payment search by order id).",
    scope: 'payments:read',
    pathParameters: OrderPath,
    pathDescription: 'The order id: 1 to 64 printable characters.',
    pathExample: EXAMPLES.retrievePayments.orderId,
    upstream: 'payhere',
    shared: true,
    answers: [
      ok('The payment records; `msg` is `Payments with order_id:<id>`.', { listOf: PaymentRecord }, [
        { summary: 'Found', value: EXAMPLES.retrievePayments.found },
      ]),
      {
        httpStatus: 202,
        status: 0,
        data: { listOf: PaymentRecord },
        description: 'A payment of the order is pending at the gateway: check again later.',
        examples: [{ summary: 'Pending', value: EXAMPLES.retrievePayments.pending }],
      },
    ],
    invalid: invalid(OrderPath, { id: 'Ordér-1' }, 'path'),
    failures: [
      notFound('No payments were found for order Order00000.'),
      {
        error: new GatewayRejectedError('The gateway refused the payment search: Invalid order id'),
        when: 'PayHere refused the search with another message than "No payments found": no statement about the order\'s payments, so neither not found nor a copy of its answer.',
      },
    ],
  },
  listSubscriptions: {
    method: 'get',
    path: '/gateway/api/subscriptions',
    tag: 'Subscriptions',
    summary: 'List subscriptions',
    description:
      "The merchant's subscriptions, or a customer's own, newest first (by subscription id): with `limit` or " +
      '`cursor`, a page at a time (`data` = `{subscriptions, next_cursor}`); with neither, every one as an array, ' +
      'as the route answered before it paged. `msg` is `Found <n> subscriptions` (of this answer).\n\n' +
      '`next_cursor` is null on the last page; otherwise pass it as `cursor` for the next page. A cursor is opaque ' +
      'with a digest of its caller: malformed, or used by another caller, it is refused (400). PayHere answers its list ' +
      'only whole: one fetch of it is kept as a snapshot that every page of a listing is cut from (for 10 minutes), ' +
      'so its pages cost PayHere one call, and `Age` says how old the snapshot is. Each subscription is listed once ' +
      'across the pages of a listing.',
    scope: 'subscriptions:read',
    queryParameters: SubscriptionsQuery,
    queryDescriptions: {
      limit:
        'Subscriptions per page, 1 to 100; 100 when only `cursor` is given. Without `limit` and `cursor`, every subscription, as an array.',
      cursor: "The last page's `next_cursor`.",
    },
    queryExample: { limit: '20' },
    upstream: 'payhere',
    shared: true,
    answers: [
      ok('Every subscription record (no `limit`, no `cursor`).', { listOf: SubscriptionRecord }, [
        { summary: 'Found', value: EXAMPLES.listSubscriptions.found },
      ]),
      ok('A page of subscription records (`limit` or `cursor` given).', SubscriptionListSchema, [
        { summary: 'A page', value: EXAMPLES.listSubscriptions.page },
      ]),
    ],
    invalid: invalid(SubscriptionsQuery, { limit: '101' }, 'query'),
    failures: [],
  },
  getSubscription: {
    method: 'get',
    path: '/gateway/api/subscriptions/{id}',
    tag: 'Subscriptions',
    summary: 'One subscription',
    description: 'One subscription record.',
    scope: 'subscriptions:read',
    pathParameters: SubscriptionPath,
    pathDescription: SUBSCRIPTION_ID,
    pathExample: EXAMPLES.getSubscription.id,
    upstream: 'payhere',
    shared: true,
    answers: [
      ok('The subscription.', SubscriptionRecord, [
        { summary: 'Found', value: EXAMPLES.getSubscription.found },
      ]),
    ],
    invalid: badSubscriptionId,
    failures: [unknownSubscription],
  },
  subscriptionPayments: {
    method: 'get',
    path: '/gateway/api/subscriptions/{id}/payments',
    tag: 'Subscriptions',
    summary: "A subscription's payments",
    description: 'The payments of one subscription; `msg` is `Found <n> payments`.',
    scope: 'subscriptions:read',
    pathParameters: SubscriptionPath,
    pathDescription: SUBSCRIPTION_ID,
    pathExample: EXAMPLES.subscriptionPayments.id,
    upstream: 'payhere',
    shared: true,
    answers: [
      ok('The payment records.', { listOf: PaymentRecord }, [
        { summary: 'Found', value: EXAMPLES.subscriptionPayments.found },
      ]),
    ],
    invalid: badSubscriptionId,
    failures: [notFound('Subscription 420075039999 was not found or has no payments.')],
  },
  retrySubscription: {
    method: 'post',
    path: '/gateway/api/subscriptions/{id}/retry',
    tag: 'Subscriptions',
    summary: "Retry a failed subscription's installment",
    description: "Charges a failed subscription's installment again, now. Takes no body.",
    scope: 'subscriptions:write',
    pathParameters: SubscriptionPath,
    pathDescription: SUBSCRIPTION_ID,
    pathExample: EXAMPLES.retrySubscription.id,
    idempotent: true,
    upstream: 'payhere',
    answers: [
      ok("Charged; `msg` is the gateway's.", null, [
        { summary: 'Retried', value: EXAMPLES.retrySubscription.retried },
      ]),
    ],
    invalid: badSubscriptionId,
    failures: [
      unknownSubscription,
      { error: new ConflictError('Subscription is not eligible for retrying') },
      paymentRefused('retry'),
    ],
  },
  cancelSubscription: {
    method: 'delete',
    path: '/gateway/api/subscriptions/{id}',
    tag: 'Subscriptions',
    summary: 'Cancel a subscription',
    description:
      'Stops a subscription. Takes no body. A subscription the service knows is cancelled or completed is ' +
      'answered 409 without asking PayHere. The Idempotency-Key is optional: without one, a cancel may simply ' +
      'be sent again ("already cancelled" then means it was done); with one, a repeat is answered from the store.',
    scope: 'subscriptions:write',
    pathParameters: SubscriptionPath,
    pathDescription: SUBSCRIPTION_ID,
    pathExample: EXAMPLES.cancelSubscription.id,
    idempotent: 'optional',
    upstream: 'payhere',
    answers: [
      ok("Cancelled; `msg` is the gateway's.", null, [
        { summary: 'Cancelled', value: EXAMPLES.cancelSubscription.cancelled },
      ]),
    ],
    invalid: badSubscriptionId,
    failures: [
      unknownSubscription,
      { error: new ConflictError('Subscription is already cancelled.') },
      paymentRefused('cancellation'),
      {
        error: new OutcomeUnknownError(
          'The gateway did not confirm the cancellation; it may have been processed. Send the DELETE again: ' +
            '"already cancelled" then means it was done.',
        ),
        when: 'The gateway did not confirm the cancellation and its state could not be read: send the DELETE again.',
      },
    ],
  },
  createCheckout: {
    method: 'post',
    path: '/gateway/api/checkouts',
    tag: 'Checkouts',
    summary: 'Create a checkout',
    description:
      "Records an order and answers the parameters the app hands to PayHere's SDK or checkout, with `hash` " +
      'signed by the merchant secret (which the app never holds). 201 for a new order; 200 with the same data when ' +
      'the same order is created again by the same owner with the same fields.\n\n' +
      'While the merchant sets prices (`CHARGE_PRICING=merchant`), only the merchant creates `payment`, `authorize`, ' +
      '`recurring` and `charge` checkouts (with On-Behalf-Of naming the customer who will pay); a customer may ' +
      'create a `preapproval` for itself, and its order id is assigned by the service.',
    scope: 'payments:charge',
    body: CheckoutRequest,
    bodyRules:
      '`amount` is required except for `preapproval`; `recurrence` and `duration` are required for `recurring` and ' +
      'allowed only there, as is `startup_fee` (charged once, with the first payment: PayHere notifies that payment ' +
      'as `amount` + `startup_fee`). `itemList` (at most 100 lines), `customer_details` and `custom_1/2` are kept ' +
      "on the order and shown to the merchant and the order's own customer. `metadata` is the merchant's own: at " +
      'most 20 keys of 1 to 40 characters of `A-Za-z0-9_.:-`, each value a string of at most 255 characters; ' +
      'never sent to PayHere, never shown to a customer, refused (400) from a customer.',
    bodyExamples: [
      { summary: 'A payment checkout (the merchant)', value: EXAMPLES.createCheckout.requests.payment },
      {
        summary: "Save a card (a customer's pre-approval)",
        value: EXAMPLES.createCheckout.requests.preapproval,
      },
      { summary: 'A subscription with a startup fee', value: EXAMPLES.createCheckout.requests.recurring },
    ],
    createsOrders: true,
    upstream: 'ledger',
    answers: [
      {
        httpStatus: 201,
        status: 1,
        data: CheckoutParametersSchema,
        description: 'A new order: the parameters for PayHere.',
        examples: [
          { summary: 'Payment checkout', value: EXAMPLES.createCheckout.created },
          { summary: 'Pre-approval', value: EXAMPLES.createCheckout.preapproval },
          { summary: 'Subscription with a startup fee', value: EXAMPLES.createCheckout.recurring },
        ],
      },
      ok('The same order was created before: the same parameters.', CheckoutParametersSchema, [
        { summary: 'Created again', value: EXAMPLES.createCheckout.again },
      ]),
    ],
    invalid: invalid(CheckoutRequest, { kind: 'recurring', items: 'Gym', currency: 'LKR', amount: 2500 }),
    failures: [
      ON_BEHALF_OF_BY_CUSTOMER,
      {
        error: new ForbiddenError(
          'Only the merchant creates payment checkouts; a customer may create a preapproval checkout.',
        ),
        when: 'A customer asks for another kind than `preapproval` while the merchant sets prices.',
      },
      {
        error: new OrderConflictError('Order Order-2001 already exists with other amount.', [
          { path: 'amount', message: 'differs from the existing order' },
        ]),
        when: 'The order id is taken by another owner, or was created with other fields.',
      },
      {
        error: new CallerRateLimitedError(
          'Too many cards were declined for this customer: try again later.',
          1800,
        ),
        when:
          'A `preapproval` for a customer whose pre-approvals PayHere declined `ORDER_FAILED_ATTEMPTS` times in the window ' +
          '(3 an hour by default; card testing): none until the window ends, whoever asks. `Retry-After` says when.',
      },
    ],
  },
  getCheckout: {
    method: 'get',
    path: '/gateway/api/checkouts/{order_id}',
    tag: 'Checkouts',
    summary: 'A checkout and its state',
    description:
      "The order as the ledger knows it, to its owner or the merchant, checked with PayHere's records while it " +
      'is not final. `status`: `created` (nothing yet), `pending` (PayHere reported it, not yet confirmed: a ' +
      "pending payment, or a success PayHere's records do not show yet), `succeeded` (PayHere's records show the " +
      "payment or the subscription on the order's terms; for a pre-approval or a hold, PayHere notified it), " +
      '`failed` or `cancelled` (not paid: a new attempt may pay it), `chargedback`, `unknown` (a charge reached ' +
      "PayHere without an answer: settled from PayHere's records within minutes; do not charge again).\n\n" +
      '`customer_token` is set only for a succeeded pre-approval, `authorization_token` only for a succeeded hold, ' +
      '`subscription_id` only for a subscription; `card` is masked as PayHere sends it. `verified` (holds only): ' +
      "whether the hold's token is proven (placed through the charge route, or used by a capture or release " +
      'through the service) or known only from a notification, which anyone holding one genuine notification ' +
      'could have altered: check an unverified hold before shipping goods (a capture proves it).\n\n' +
      'What the order keeps for a back office: `item_list`, `customer_details` and `custom_1/2` given at checkout ' +
      "or charge; `metadata`, the merchant's own (null to a customer); a subscription's `startup_fee` and " +
      "`next_installment` (`YYYY-MM-DD`, from PayHere's notification of the last installment its records confirmed).",
    scope: 'payments:read',
    pathParameters: CheckoutPath,
    pathDescription: 'The order id: 1 to 64 printable characters.',
    pathExample: EXAMPLES.getCheckout.orderId,
    upstream: 'ledger',
    answers: [
      ok('The order.', CheckoutViewSchema, [
        { summary: 'Created, not paid yet', value: EXAMPLES.getCheckout.created },
        { summary: 'A saved card', value: EXAMPLES.getCheckout.savedCard },
        { summary: 'A hold known only from its notification', value: EXAMPLES.getCheckout.unverifiedHold },
      ]),
    ],
    invalid: invalid(CheckoutPath, { order_id: '' }, 'path'),
    failures: [notFound('Order Order-2001 was not found.')],
  },
  listOrders: {
    method: 'get',
    path: '/gateway/api/orders',
    tag: 'Orders',
    summary: 'List orders',
    description:
      "Orders newest first, a page at a time, from the service's ledger (never PayHere): every order to the " +
      "merchant, a customer's own to a customer. A customer naming another customer in `customer` gets an empty " +
      'list, as for a customer without orders. `msg` is `Found <n> orders` (this page).\n\n' +
      '`next_cursor` is null on the last page; otherwise pass it as `cursor`, with the same filters, for the next ' +
      'page. A cursor is opaque, with a digest of its filters and caller: malformed, or used with other filters or ' +
      "by another caller, it is refused (400); one made by hand names a position in the caller's own list only. " +
      'A page may hold fewer than `limit` orders and still have a next one ' +
      "when filters drop many. `status` is the ledger's state, as `status` filters it; `charge_in_flight` says a " +
      'charge of the order is in flight (getCheckout shows such an order `pending`). Each order carries what ' +
      'getCheckout shows a back office but its `item_list` (`metadata` null to a customer).',
    scope: 'payments:read',
    queryParameters: OrdersQuery,
    queryDescriptions: {
      status: 'Only orders in this state (docs/contract.md "Order states").',
      customer: "Only this customer's orders (a token's `sub`).",
      kind: 'Only orders of this kind.',
      created_from: 'Only orders created at or after this time (ISO 8601, with a zone).',
      created_to: 'Only orders created before this time (ISO 8601, with a zone).',
      limit: 'Orders per page, 1 to 100; 20 when not given.',
      cursor: "The last page's `next_cursor`.",
    },
    queryExample: { status: 'succeeded', limit: '2' },
    upstream: 'ledger',
    answers: [
      ok('A page of orders.', OrderListSchema, [{ summary: 'A page', value: EXAMPLES.listOrders.page }]),
    ],
    invalid: invalid(OrdersQuery, { limit: '101' }, 'query'),
    failures: [],
  },
  paymentRefunds: {
    method: 'get',
    path: '/gateway/api/payments/{id}/refunds',
    tag: 'Payments',
    summary: "A payment's refunds",
    description:
      'Each refund of the payment the service sent, as a record, and what is refunded and left, from the ' +
      "service's ledger (never PayHere): to the merchant, or to the customer who owns the payment (anyone else: " +
      '404, as for a payment that does not exist; the merchant asking of a payment the service never refunded or ' +
      'linked gets no records). `msg` is `Found <n> refunds`.\n\n' +
      "`amount`, `refunded` and `left` are in the payment's currency, null when the ledger does not know the " +
      "payment's amount (a payment it never linked to an order). A record's `status` is `accepted` (PayHere " +
      'accepted it; `refund_id` is its refund number, null when only its records showed it) or `in_flight` (sent ' +
      'or being sent, its outcome not known yet); `by` is who sent it (to a customer, `merchant` for anyone but ' +
      "itself). `undetermined` counts refunds whose answer was lost and that PayHere's records could not show " +
      "either way: they may have been made. Refunds made outside the service (PayHere's portal) are not known " +
      'here. A refund above `left` is refused before PayHere (refund: 409 `conflict`).\n\n' +
      "`payhere_status` is the payment's status in PayHere's records (`REFUND REQUESTED`, `REFUND PROCESSING`, " +
      '`REFUNDED`, `CHARGEBACK`, ...), the only refund state PayHere shows (it has no refund lookup), as the ' +
      'service last read it after a refund PayHere accepted: kept from the reads the service makes anyway ' +
      '(retrievePayments, the reconciliation report), never by a call of its own. `payhere_status_at` is when ' +
      "that read was sent; a later read showing the same status leaves it. Both are null until PayHere's " +
      'records were read after a refund; the status may be older than the latest refund (compare the times).',
    scope: 'payments:read',
    pathParameters: PaymentPath,
    pathDescription: 'A PayHere payment id: digits only (leading zeros are ignored).',
    pathExample: EXAMPLES.paymentRefunds.id,
    upstream: 'ledger',
    answers: [
      ok("The payment's refunds.", PaymentRefundsSchema, [
        { summary: 'A partial refund, then the rest', value: EXAMPLES.paymentRefunds.found },
      ]),
    ],
    invalid: invalid(PaymentPath, { id: 'P-42' }, 'path'),
    failures: [
      notFound('Payment 320027150599 was not found.', 'A customer names a payment it does not own.'),
    ],
  },
  reconciliationReport: {
    method: 'get',
    path: '/gateway/api/reports/reconciliation',
    tag: 'Orders',
    summary: 'Reconcile the ledger with PayHere',
    description:
      "The merchant's reconciliation of the service's ledger with PayHere's records, per UTC day of the orders' " +
      'creation, `from` to `to` (both included, at most 31 days, at most 2,000 orders): the orders the ledger ' +
      "shows paid; PayHere's payments of the day's orders with `gross`, `fee` and `net` from PayHere's " +
      '`amount_detail`; the refunds sent through the service; and the differences, each with its `action`: ' +
      '`payment_not_in_ledger` (PayHere holds a payment of the order the ledger does not: a second payment, or an ' +
      'order the ledger has unpaid), `payment_not_at_payhere` (the ledger shows the order paid, PayHere does not ' +
      "show its payment), `amount_differs` (PayHere's amount is not the order's). Merchant tokens only; a " +
      'customer gets 403.\n\n' +
      'PayHere can be searched only by order id, so each request reads at most a few orders from PayHere ' +
      "(`RECONCILIATION_CHECKS`, 5), within the merchant's share of PayHere's budget, and keeps what it read. " +
      'Orders not compared yet are listed in `unchecked` and `complete` is false: ask again (every 10 s or so) ' +
      "until it is true. Each payment and difference says in `checked_at` when PayHere's records were read for " +
      'it; a comparison older than a day is read again when a request has calls to spare.\n\n' +
      'JSON by default; CSV (`text/csv`, one line per line of the JSON, its kind in column `line`) with ' +
      '`format=csv`, or with `Accept: text/csv` when `format` is not given.',
    scope: 'payments:read',
    queryParameters: ReconciliationQuery,
    queryDescriptions: {
      from: 'The first day, `YYYY-MM-DD` (UTC).',
      to: 'The last day, `YYYY-MM-DD` (UTC), included: at most 30 days after `from`.',
      format: '`json` or `csv`; when not given, `Accept: text/csv` asks for CSV, anything else JSON.',
    },
    queryExample: EXAMPLES.reconciliationReport.query,
    upstream: 'payhere',
    answers: [
      {
        ...ok('The report, as far as PayHere has been read.', ReconciliationReportSchema, [
          { summary: 'A day with two differences', value: EXAMPLES.reconciliationReport.report },
        ]),
        text: { mediaType: 'text/csv', example: EXAMPLES.reconciliationReport.csv },
      },
    ],
    invalid: invalid(ReconciliationQuery, { from: '2026-01-15', to: '15/01/2026' }, 'query'),
    failures: [
      {
        error: new ForbiddenError('Only the merchant reads reconciliation reports.'),
        when: 'A customer token (without `merchant`).',
      },
    ],
  },
  listEvents: {
    method: 'get',
    path: '/gateway/api/events',
    tag: 'Orders',
    summary: 'List events',
    description:
      "Every change of money state the service's ledger recorded, as an event, oldest first in the order the " +
      'events were published (docs/contract.md "Events" lists the types): for a merchant backend to catch up ' +
      'after downtime, or to poll instead of receiving webhooks. Merchant tokens only; a customer gets 403. ' +
      '`msg` is `Found <n> events` (this page).\n\n' +
      'An event is `{ id, type, created_at, object: { type, id }, sequence, data }`: its `id` is stable (the ' +
      "webhook delivery's `webhook-id`), `sequence` counts its object's events from 1, `data` is the object as " +
      'the change left it. Pass `next_cursor` as `cursor` for the next page; it is given whenever an event was ' +
      'read, also on the last page, where the next poll starts (null only when nothing was listed yet). ' +
      '`has_more` says more events were there to read. Filters apply after reading: a page may hold fewer ' +
      'than `limit` events and still have more. An event is listed once it was published 6 s ago, so a cursor ' +
      'never passes an event still being written. Events are kept 35 days.',
    scope: 'payments:read',
    queryParameters: EventsQuery,
    queryDescriptions: {
      type: 'Only events of this type.',
      object_id: 'Only events of this object: an order id, or a payment id for refunds.',
      object_type:
        'Only events of this kind of object, `order` or `payment`: an order and a payment may share an id.',
      limit: 'Events per page, 1 to 100; 20 when not given.',
      cursor: "A page's `next_cursor`.",
    },
    queryExample: { limit: '2' },
    upstream: 'ledger',
    answers: [
      ok('A page of events.', EventPageSchema, [{ summary: 'A page', value: EXAMPLES.listEvents.page }]),
    ],
    invalid: invalid(EventsQuery, { limit: '101' }, 'query'),
    failures: [
      {
        error: new ForbiddenError('Only the merchant reads the events.'),
        when: 'A customer token (without `merchant`).',
      },
    ],
  },
  webhookDeliveries: {
    method: 'get',
    path: '/gateway/api/webhooks/deliveries',
    tag: 'Webhooks',
    summary: "List the webhooks' deliveries",
    description:
      "Each event's delivery to each of the merchant's webhook endpoints, newest event first, a page at a time, " +
      "from the service's events (never PayHere): its `status` (`pending`, `delivered`, `failed` after its " +
      "eighth attempt, `disabled` when its endpoint was), `attempts`, the last attempt's HTTP status and error, " +
      'and when the next attempt is due. Merchant tokens only; a customer gets 403. `msg` is `Found <n> ' +
      'deliveries` (this page).\n\n`next_cursor` is null on the last page; otherwise pass it as `cursor`, with ' +
      "the same filters, for the next page. An event's deliveries are never split across pages, and a page may " +
      'hold fewer than `limit` deliveries and still have a next one when filters drop many.',
    scope: 'payments:read',
    queryParameters: DeliveriesQuery,
    queryDescriptions: {
      endpoint: "Only this endpoint's deliveries (its configured id; `default` locally).",
      status: 'Only deliveries in this state.',
      limit: 'Deliveries per page, 1 to 100; 20 when not given.',
      cursor: "The last page's `next_cursor`.",
    },
    queryExample: { status: 'failed', limit: '20' },
    upstream: 'ledger',
    answers: [
      ok('A page of deliveries.', DeliveryListSchema, [
        { summary: 'A page', value: EXAMPLES.webhookDeliveries.page },
      ]),
    ],
    invalid: invalid(DeliveriesQuery, { status: 'lost' }, 'query'),
    failures: [
      {
        error: new ForbiddenError('Only the merchant reads webhook deliveries.'),
        when: 'A customer token (without `merchant`).',
      },
    ],
  },
  redeliverEvent: {
    method: 'post',
    path: '/gateway/api/events/{id}/redeliver',
    tag: 'Webhooks',
    summary: 'Deliver an event again',
    description:
      'Makes the event due now to every webhook endpoint (those it has a delivery for, and those configured now), ' +
      'or to `endpoint` only: delivered again even if it was delivered, failed or disabled, its attempts kept; a ' +
      'disabled endpoint is enabled again. The deliverer posts it within a minute. Merchant tokens only; a ' +
      'customer gets 403. Events are kept 35 days.',
    scope: 'payments:read',
    pathParameters: EventPath,
    pathDescription: "The event's id (`evt_...`): the delivery's `webhook-id`.",
    pathExample: EXAMPLES.redeliverEvent.id,
    queryParameters: RedeliverQuery,
    queryDescriptions: {
      endpoint: 'Only to this endpoint (its configured id); every endpoint when not given.',
    },
    upstream: 'ledger',
    answers: [
      ok('Due now.', RedeliverySchema, [
        { summary: 'Due to one endpoint', value: EXAMPLES.redeliverEvent.due },
      ]),
    ],
    invalid: invalid(EventPath, { id: 'order-1' }, 'path'),
    failures: [
      notFound(
        'Event evt_01kf0e5d2r8q4w6y9z3b7c1m5n was not found.',
        'No such event, or one older than 35 days.',
      ),
      {
        error: new ForbiddenError('Only the merchant redelivers events.'),
        when: 'A customer token (without `merchant`).',
      },
      {
        error: new ConflictError(
          'The event is being delivered right now; ask again in a minute if it is still needed.',
        ),
        when: 'A deliverer is posting the event at this moment, or no webhook endpoint is configured.',
      },
    ],
  },
  notify: {
    method: 'post',
    path: '/gateway/notify',
    tag: 'Notifications',
    summary: "Receive PayHere's notification",
    description:
      "PayHere posts a payment's, pre-approval's, hold's or subscription's result to the `notify_url` the service " +
      'gave it (createCheckout, charge). Not for apps: no bearer token, the `md5sig` signature authenticates it.\n\n' +
      'Only `merchant_id`, `order_id`, `payhere_amount`, `payhere_currency` and `status_code` are signed, so a ' +
      'notification changes nothing unless its order is one the service created, with that amount and currency, ' +
      'and its state may move that way. Answered 200 whenever the signature verifies, recorded or not, so that ' +
      'PayHere does not retry what can never match.',
    body: Notification,
    mediaType: FORM_MEDIA_TYPE,
    bodyExamples: [{ summary: 'A checkout paid', value: EXAMPLES.notify.paid }],
    upstream: 'ledger',
    answers: [
      ok('Verified; recorded if it matches an order and moves it forward.', null, [
        { summary: 'Recorded', value: EXAMPLES.notify.recorded },
      ]),
    ],
    invalid: invalid(Notification, { ...EXAMPLES.notify.paid, payhere_amount: '1000' }),
    failures: [{ error: new InvalidSignatureError() }],
  },
} satisfies Record<string, RouteDoc>;

export type OperationId = keyof typeof ROUTE_TABLE;

/** The table's entries with their operationId, in the table's order. */
export function describedRoutes(): Array<RouteDoc & { operationId: OperationId }> {
  return (Object.keys(ROUTE_TABLE) as OperationId[]).map((operationId) => ({
    operationId,
    ...(ROUTE_TABLE[operationId] as RouteDoc),
  }));
}
