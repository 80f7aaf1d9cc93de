// One Merchant API request from bytes to answer: rate limit, authentication, body and parameter
// checks, then the state transition. Faults (server.ts) decide whether and how the answer is sent.
import { type AppCredentials, issueToken, mediaType, rejectBearer } from './oauth.ts';
import type { SlidingWindowLimiter } from './rate-limit.ts';
import type { Envelope } from './records.ts';
import {
  envelopeReply,
  failureReply,
  invalidParameter,
  notFound,
  type Reply,
  tooManyRequests,
} from './replies.ts';
import type { Route } from './routes.ts';
import type { GatewayState } from './state.ts';
import type { AccessTokens } from './tokens.ts';
import {
  type Checked,
  checkCapture,
  checkCharge,
  checkQuery,
  checkRefund,
  checkSubscriptionAction,
} from './validate.ts';

export interface ApiRequest {
  route: Route;
  /** Whether the path is under /merchant/v1/ (the rate limit covers unknown paths there too). */
  underApi: boolean;
  query: URLSearchParams;
  authorization: string | undefined;
  contentType: string | undefined;
  body: Buffer;
  /** A charge PayHere finishes this much later (the processLate fault): checked now, made then. */
  processLateMs?: number;
}

export interface ApiContext {
  state: GatewayState;
  tokens: AccessTokens;
  limiter: SlidingWindowLimiter | undefined;
  credentials: AppCredentials;
}

const SUBSCRIPTION_ID = /^\d{1,15}$/;

function parseJsonBody(request: ApiRequest): { ok: true; body: unknown } | { ok: false; reply: Reply } {
  if (mediaType(request.contentType) !== 'application/json') {
    return { ok: false, reply: failureReply(400, 'Unsupported content type') };
  }
  try {
    const body: unknown = JSON.parse(request.body.toString('utf8'));
    // Every Merchant API body is an object; anything else is as unreadable as broken JSON.
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new TypeError('not an object');
    return { ok: true, body };
  } catch {
    return { ok: false, reply: failureReply(400, 'Malformed request body') };
  }
}

function withBody<T>(
  request: ApiRequest,
  check: (body: unknown) => Checked<T>,
  act: (value: T) => Envelope,
): Reply {
  const parsed = parseJsonBody(request);
  if (!parsed.ok) return parsed.reply;
  const checked = check(parsed.body);
  return checked.ok ? envelopeReply(act(checked.value)) : invalidParameter(checked.field);
}

function withSubscriptionId(request: ApiRequest, act: (id: number) => Envelope): Reply {
  const query = checkQuery(request.query, []);
  if (!query.ok) return invalidParameter(query.field);
  const raw = request.route.subscriptionId ?? '';
  return SUBSCRIPTION_ID.test(raw) ? envelopeReply(act(Number(raw))) : invalidParameter('subscription_id');
}

export function handleApiRequest(request: ApiRequest, context: ApiContext): Reply {
  if (!request.underApi) return notFound();
  const admission = context.limiter?.admit();
  if (admission && !admission.admitted) return tooManyRequests(admission.retryAfterSeconds);

  const { endpoint } = request.route;
  if (endpoint === 'unknown') return notFound();
  if (endpoint === 'token') {
    return issueToken(
      {
        authorization: request.authorization,
        contentType: request.contentType,
        body: request.body.toString('utf8'),
      },
      context.credentials,
      context.tokens,
    );
  }
  const rejected = rejectBearer(request.authorization, context.tokens);
  if (rejected) return rejected;

  const { state } = context;
  switch (endpoint) {
    case 'search': {
      const query = checkQuery(request.query, ['order_id']);
      if (!query.ok) return invalidParameter(query.field);
      return envelopeReply(state.searchPayments(query.value.order_id ?? ''));
    }
    case 'charge': {
      const lateMs = request.processLateMs;
      return withBody(request, checkCharge, (body) =>
        lateMs === undefined ? state.charge(body) : state.chargeLate(body, lateMs),
      );
    }
    case 'capture':
      return withBody(request, checkCapture, (body) => state.capture(body));
    case 'refund':
      return withBody(request, checkRefund, (body) => state.refund(body));
    case 'listSubscriptions': {
      const query = checkQuery(request.query, []);
      return query.ok ? envelopeReply(state.listSubscriptions()) : invalidParameter(query.field);
    }
    case 'getSubscription':
      return withSubscriptionId(request, (id) => state.getSubscription(id));
    case 'subscriptionPayments':
      return withSubscriptionId(request, (id) => state.subscriptionPayments(id));
    case 'retry':
      return withBody(request, checkSubscriptionAction, (body) => state.retry(body.subscription_id));
    case 'cancel':
      return withBody(request, checkSubscriptionAction, (body) => state.cancel(body.subscription_id));
  }
}
