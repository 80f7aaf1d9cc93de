// The sandbox's HTTP side: listens on loopback, routes a request to the control interface or the
// Merchant API, and applies injected faults to how (and whether) the answer is delivered.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Arrival, type Clock, CONTROL_PREFIX, type Controls, handleControl } from './control.ts';
import {
  type CheckoutInput,
  type InstallmentInput,
  type PendingDecisionInput,
  type RefundAdvanceInput,
  type SubscriptionEndInput,
  verifyRefundAdvance,
} from './control-requests.ts';
import { Deliveries, type Delivery } from './deliveries.ts';
import { type Fault, FaultController } from './faults.ts';
import { handleApiRequest } from './merchant-api.ts';
import {
  accepted,
  type CheckoutAnswer,
  type DueWork,
  deliverQueued,
  type NotifyingContext,
  notifyingControls,
  type PendingDecisionAnswer,
  processDueFirst,
  type SubscriptionEventAnswer,
} from './notifying.ts';
import { bearerToken } from './oauth.ts';
import { payhereDate } from './payment-book.ts';
import { type RateLimitOptions, SlidingWindowLimiter } from './rate-limit.ts';
import type { PaymentRefunds } from './refunds.ts';
import {
  envelopeReply,
  expiredToken,
  failureReply,
  htmlPage,
  maintenancePage,
  type Reply,
  send,
  tooManyRequests,
} from './replies.ts';
import { API_PREFIX, type CountedName, ENDPOINT_NAMES, matchRoute } from './routes.ts';
import { SANDBOX_CREDENTIALS } from './seed.ts';
import { GatewayState, type PendingChargeView, type PendingOutcome } from './state.ts';
import { AccessTokens } from './tokens.ts';

export type { Arrival, Clock } from './control.ts';
export type {
  CheckoutInput,
  DeliveryOptions,
  InstallmentInput,
  PendingDecisionInput,
  RefundAdvanceInput,
  SubscriptionEndInput,
} from './control-requests.ts';
export type { Delivery } from './deliveries.ts';
export type { Fault, FaultTarget } from './faults.ts';
export { FaultController } from './faults.ts';
export { amountDetail, formatAmount } from './money.ts';
export type { MessageType, NotificationForm } from './notifications.ts';
export {
  type CheckoutAnswer,
  type DueWork,
  type PendingDecisionAnswer,
  SandboxRefusal,
  type SubscriptionEventAnswer,
} from './notifying.ts';
export type { RefundStatus, StoredRefund } from './records.ts';
export type { PaymentRefunds } from './refunds.ts';
export type { EndpointName } from './routes.ts';
export { CHECKOUT_PAYER, SANDBOX_CREDENTIALS, SEED } from './seed.ts';
export type { PendingChargeView, PendingOutcome } from './state.ts';

/** What a function reads at start-up to call the sandbox at `url` as its seeded merchant. */
export function sandboxGatewayEnv(url: string): Record<string, string> {
  return {
    GATEWAY_BASE_URL: url,
    GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
    GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
    GATEWAY_MERCHANT_ID: SANDBOX_CREDENTIALS.merchantId,
    GATEWAY_MERCHANT_SECRET: SANDBOX_CREDENTIALS.merchantSecret,
  };
}
export { checkoutHash, md5sig, type SignedFields } from './signature.ts';

export interface SandboxOptions {
  host?: string;
  port?: number;
  tokenLifetimeSeconds?: number;
  /** A token request while the last token is valid gets that token back (see tokens.ts). */
  reuseLiveTokens?: boolean;
  rateLimit?: RateLimitOptions | false;
  /** Clock (ms) for token expiry, the rate-limit window and what PayHere does when. */
  now?: () => number;
  /**
   * How far PayHere's clock is off `now` (ms; -3000: 3 s behind): it shifts the dates PayHere writes,
   * not token expiry or the rate-limit window, which follow elapsed time. Default 0.
   */
  clockOffsetMs?: number;
  credentials?: { appId: string; appSecret: string };
  /** How long a notify_url has to answer before the attempt is logged as a timeout. */
  notificationTimeoutMs?: number;
}

export interface Sandbox {
  /** Base URL without a trailing slash; API paths are url + '/merchant/v1/...'. */
  url: string;
  port: number;
  faults: FaultController;
  counters(): Record<string, number>;
  /** Every Merchant API request as it arrived (time on the sandbox's clock), oldest first; reset with the counters. */
  arrivals(): Arrival[];
  resetCounters(): void;
  /** Seeded data back; tokens, faults, counters and the rate-limit window untouched. */
  resetState(): void;
  reset(): void;
  expireTokens(): void;
  /** A payment's refunds (each request one, oldest first), its status and the amount refunded. */
  refunds(paymentId: number): PaymentRefunds;
  /**
   * PayHere moves the payment's refunds (or the one `refund_id`) on to `status` (default REFUNDED);
   * the payment's status follows. Answers as refunds().
   */
  advanceRefunds(paymentId: number, options?: RefundAdvanceInput): PaymentRefunds;
  /** The sandbox's time, how far PayHere's clock is off it, and the date PayHere would write now. */
  clock(): Clock;
  /** Sets how far PayHere's clock is off the sandbox's (ms), from now on; reset() restores the option's. */
  setClockOffset(ms: number): void;
  /** The customer ends a checkout in PayHere's SDK; PayHere then notifies its notify_url. */
  completeCheckout(checkout: CheckoutInput): Promise<CheckoutAnswer>;
  /** PayHere charges a subscription's next installment and notifies. */
  chargeInstallment(subscriptionId: number, request: InstallmentInput): Promise<SubscriptionEventAnswer>;
  /** RECURRING_COMPLETE: the subscription is COMPLETED. */
  completeSubscription(
    subscriptionId: number,
    request?: SubscriptionEndInput,
  ): Promise<SubscriptionEventAnswer>;
  /** RECURRING_STOPPED: the subscription is CANCELLED. */
  stopSubscription(subscriptionId: number, request?: SubscriptionEndInput): Promise<SubscriptionEventAnswer>;
  /**
   * PayHere finishes the late charges (processLate) due by now() and posts their notifications;
   * also done lazily before every request and by a timer, so calling it is needed only to wait for
   * those notifications or to see a due charge without making a request.
   */
  processDue(): Promise<DueWork>;
  /**
   * PayHere decides a charge answered pending (status_code 0) on `orderId`: a success is recorded
   * (a RECEIVED payment, or for AUTHORIZE a hold), a failure is not; either is notified.
   */
  decidePending(
    orderId: string,
    outcome: PendingOutcome,
    options?: Omit<PendingDecisionInput, 'outcome'>,
  ): Promise<PendingDecisionAnswer>;
  /** The charges still pending, oldest first. */
  pendingCharges(): PendingChargeView[];
  /** Posts an earlier delivery's form again, unchanged. */
  replayNotification(deliveryId: number): Promise<Delivery[]>;
  /** Every notification attempt since the last reset, oldest first. */
  deliveries(): Delivery[];
  /** Sends still waiting for their delay or an answer. */
  pendingDeliveries(): number;
  /** Resolves when no send is waiting or in flight. */
  deliveriesSettled(): Promise<void>;
  /** Forgets the log and abandons waiting sends. */
  clearDeliveries(): void;
  closeIdleConnections(): void;
  close(): Promise<void>;
}

const DEFAULT_RATE_LIMIT: RateLimitOptions = { limit: 20, windowMs: 10_000 };
const DEFAULT_TOKEN_LIFETIME_SECONDS = 599;
const DEFAULT_NOTIFICATION_TIMEOUT_MS = 5_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
const MAX_BODY_BYTES = 1024 * 1024;
// setTimeout's longest delay; a later charge is looked at then, and again until it is due.
const MAX_TIMER_MS = 2_147_483_647;
const COUNTED_NAMES: readonly CountedName[] = [...ENDPOINT_NAMES, 'unknown'];

/** The whole body, or undefined when it is larger than any Merchant API request can be. */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}

/** RST rather than FIN: the client sees ECONNRESET, as when a middlebox drops the connection. */
function resetConnection(req: IncomingMessage): void {
  req.socket.resetAndDestroy();
}

function checkedClockOffset(ms: number): number {
  if (!Number.isSafeInteger(ms))
    throw new RangeError(`clockOffsetMs must be a whole number of ms, got ${ms}`);
  return ms;
}

/** The envelope of a search fault: "pending" (status 0) or an error that is not "No payments found". */
function searchAnswer(fault: Extract<Fault, { kind: 'searchPending' | 'searchFailed' }>): Reply {
  return fault.kind === 'searchPending'
    ? envelopeReply({ status: 0, msg: fault.msg ?? 'Payment pending', data: null })
    : envelopeReply({ status: -1, msg: fault.msg ?? 'Error occurred', data: null });
}

function faultReply(fault: Fault, req: IncomingMessage): Reply | undefined {
  switch (fault.kind) {
    case 'status':
      return fault.body === undefined
        ? htmlPage(fault.status)
        : { status: fault.status, contentType: fault.contentType ?? 'text/html', body: fault.body };
    case 'nonJson':
      return maintenancePage();
    case 'rateLimited':
      return tooManyRequests(fault.retryAfterSeconds ?? 1);
    case 'invalidToken':
      return expiredToken(bearerToken(req.headers.authorization));
    default:
      return undefined;
  }
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.host ?? '127.0.0.1';
  const now = options.now ?? Date.now;
  const tokenLifetimeSeconds = options.tokenLifetimeSeconds ?? DEFAULT_TOKEN_LIFETIME_SECONDS;
  const credentials = options.credentials ?? SANDBOX_CREDENTIALS;
  const rateLimit = options.rateLimit ?? DEFAULT_RATE_LIMIT;
  const initialClockOffsetMs = checkedClockOffset(options.clockOffsetMs ?? 0);
  let clockOffsetMs = initialClockOffsetMs;

  const signer = {
    merchantId: SANDBOX_CREDENTIALS.merchantId,
    merchantSecret: SANDBOX_CREDENTIALS.merchantSecret,
  };
  const newState = () => new GatewayState({ now, clockOffsetMs: () => clockOffsetMs, ...signer });
  let state = newState();
  const deliveries = new Deliveries({
    timeoutMs: options.notificationTimeoutMs ?? DEFAULT_NOTIFICATION_TIMEOUT_MS,
  });
  const notifying: NotifyingContext = { state: () => state, deliveries, signer };
  const tokens = new AccessTokens(now, tokenLifetimeSeconds, options.reuseLiveTokens ?? false);
  const limiter = rateLimit === false ? undefined : new SlidingWindowLimiter(rateLimit, now);
  const faults = new FaultController();
  const counts = new Map<CountedName, number>();
  let arrivals: Arrival[] = [];
  // Aborted by close() so that a latency fault does not process a request after the sandbox stopped.
  const closing = new AbortController();

  // Late charges happen when the sandbox's clock reaches them: looked at before every request (the
  // only way with an injected clock that does not move by itself) and by this timer (so that with
  // real time a late charge is recorded and notified on time, whether anyone asks or not).
  let lateTimer: NodeJS.Timeout | undefined;
  function armLateTimer(): void {
    clearTimeout(lateTimer);
    const dueAt = state.nextDueAt();
    if (dueAt === undefined) return;
    // +1: a timer can fire a hair before the clock reads dueAt.
    const delay = Math.min(Math.max(0, dueAt - now()) + 1, MAX_TIMER_MS);
    lateTimer = setTimeout(() => {
      processDueFirst(notifying);
      armLateTimer();
    }, delay);
    lateTimer.unref();
  }

  const controls: Controls = {
    faults,
    counters: () => Object.fromEntries(COUNTED_NAMES.map((name) => [name, counts.get(name) ?? 0])),
    arrivals: () => [...arrivals],
    resetCounters: () => {
      counts.clear();
      arrivals = [];
    },
    resetState: () => {
      state = newState();
      clearTimeout(lateTimer);
    },
    reset: () => {
      state = newState();
      clearTimeout(lateTimer);
      faults.clear();
      counts.clear();
      arrivals = [];
      tokens.clear();
      limiter?.clear();
      deliveries.clear();
      clockOffsetMs = initialClockOffsetMs;
    },
    expireTokens: () => tokens.expireAll(),
    clock: () => {
      const at = now();
      return { now: at, clockOffsetMs, payhereDate: payhereDate(at + clockOffsetMs) };
    },
    refunds: (paymentId: number) => {
      processDueFirst(notifying);
      return accepted(state.refundsOf(paymentId));
    },
    advanceRefunds: (paymentId: number, input: unknown = {}) => {
      const request = accepted(verifyRefundAdvance(input));
      processDueFirst(notifying);
      return accepted(state.advanceRefunds(paymentId, request.status ?? 'REFUNDED', request.refund_id));
    },
    setClockOffset: (ms: number) => {
      const offset = checkedClockOffset(ms);
      // What fell due before the change is dated by the clock as it was then.
      processDueFirst(notifying);
      clockOffsetMs = offset;
    },
    ...notifyingControls(notifying),
    deliveries: () => deliveries.log(),
    pendingDeliveries: () => deliveries.pending(),
    clearDeliveries: () => deliveries.clear(),
  };

  /** PayHere notifies a charge's notify_url after answering the charge. */
  function notifyAfterAnswer(): void {
    deliverQueued(notifying).catch((error: unknown) => console.error('sandbox: notification failed', error));
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedAt = now();
    const body = await readBody(req);
    if (body === undefined) {
      send(res, { ...failureReply(413, 'Request entity too large'), headers: { connection: 'close' } });
      return;
    }
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
    if (url.pathname.startsWith(CONTROL_PREFIX)) {
      // The controls that touch the state finish what is due themselves (POST process-due must
      // find it still to do, to answer its deliveries).
      send(res, await handleControl(method, url.pathname, body, controls));
      return;
    }
    processDueFirst(notifying);

    const route = matchRoute(method, url.pathname);
    counts.set(route.endpoint, (counts.get(route.endpoint) ?? 0) + 1);
    arrivals.push({ at: arrivedAt, endpoint: route.endpoint });
    const process = (processLateMs?: number): Reply =>
      handleApiRequest(
        {
          route,
          underApi: url.pathname.startsWith(API_PREFIX),
          query: url.searchParams,
          authorization: req.headers.authorization,
          contentType: req.headers['content-type'],
          body,
          ...(processLateMs === undefined ? {} : { processLateMs }),
        },
        { state, tokens, limiter, credentials },
      );

    const fault = faults.take(route.endpoint);
    if (!fault) {
      send(res, process());
      notifyAfterAnswer();
      return;
    }
    switch (fault.kind) {
      case 'latency': {
        // A slow network back: processed at once, the answer on its way for `ms`.
        const answered = fault.afterProcessing ? process() : undefined;
        await sleep(fault.ms, undefined, { signal: closing.signal });
        send(res, answered ?? process());
        notifyAfterAnswer();
        return;
      }
      case 'reset':
        process();
        resetConnection(req);
        notifyAfterAnswer();
        return;
      case 'resetBeforeProcessing':
        resetConnection(req);
        return;
      case 'processLate':
        // Checked (rate limit, token, fields) now, as PayHere takes it; made fault.ms later.
        process(fault.ms);
        resetConnection(req);
        armLateTimer();
        return;
      case 'hang':
        // Never answered: the socket ends when the client gives up or close() destroys it.
        return;
      case 'searchPending':
      case 'searchFailed': {
        // PayHere's own answer, so its rate limit and token check come first and can answer instead.
        const checked = process();
        send(res, checked.status === 200 ? searchAnswer(fault) : checked);
        return;
      }
      case 'status':
      case 'nonJson':
        if (fault.process) process();
        break;
    }
    const reply = faultReply(fault, req);
    if (reply) send(res, reply);
    notifyAfterAnswer();
  }

  const server = createServer((req, res) => {
    onRequest(req, res).catch((error: unknown) => {
      // A client that went away mid-request, or a stopping sandbox, is not a sandbox failure.
      if (closing.signal.aborted || res.destroyed) return;
      console.error('sandbox: request failed', error);
      send(res, failureReply(500, 'Internal server error'));
    });
  });
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    port,
    ...controls,
    decidePending: (orderId, outcome, options = {}) =>
      controls.decidePending(orderId, { ...options, outcome }),
    deliveriesSettled: () => deliveries.settled(),
    closeIdleConnections: () => server.closeIdleConnections(),
    close: async () => {
      closing.abort();
      clearTimeout(lateTimer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await Promise.all([closed, deliveries.close()]);
    },
  };
}
