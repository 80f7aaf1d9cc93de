import middy, { type MiddlewareObj } from '@middy/core';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type * as z from 'zod/mini';
import { callers } from '../budget/caller-shares.ts';
import { WRITES_AFTER_ANSWER_MS } from '../config/dynamodb.ts';
import { type FieldError, InvalidRequestError, UnsupportedMediaTypeError } from '../envelope/errors.ts';
import { type IdempotencyOptions, runIdempotent } from '../idempotency/idempotent.ts';
import { counted } from '../net/background.ts';
import { authenticate } from './auth/middleware.ts';
import type { Scope } from './auth/scopes.ts';
import { type Caller, callerOf } from './caller.ts';
import { cors, corsFromEnvironment } from './cors.ts';
import { requestDeadline } from './deadline.ts';
import { declaresMediaType, headerValues } from './headers.ts';
import { IDEMPOTENCY_HEADER, readIdempotencyKey } from './idempotency-key.ts';
import { envelopeErrors } from './middleware.ts';
import { type ObservedContext, type ObserveOptions, observe } from './observe.ts';
import { readOnBehalfOf } from './on-behalf-of.ts';
import { guardRequest } from './request-guard.ts';
import { type Parsed, parse } from './validation.ts';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

export interface RouteOptions<Body, Path, Query = undefined>
  extends ObserveOptions<ValidRequest<Body, Path, Query>> {
  /** The scope the caller's token must hold (docs/contract.md "Callers, roles and ownership"). */
  scope: Scope;
  /** The route creates orders: a merchant may name their owner with On-Behalf-Of. */
  createsOrders?: boolean;
  /** The body schema; only body-carrying routes parse JSON (middy's parser breaks bodiless GETs). */
  body?: z.ZodMiniType<Body>;
  path?: z.ZodMiniType<Path>;
  /** The query string's schema; routes without one ignore a query string, as they always have. */
  query?: z.ZodMiniType<Query>;
  /**
   * Money routes: the Idempotency-Key header is required, and a repeat is answered from the store
   * instead of reaching the gateway again (lib/idempotency/). Runs after validation.
   */
  idempotency?: IdempotencyOptions<ValidRequest<Body, Path, Query>>;
}

export interface ValidRequest<Body, Path, Query = undefined> {
  body: Body;
  path: Path;
  query: Query;
  caller: Caller;
  /** Who owns what this request creates: the customer named by On-Behalf-Of, else the caller. */
  owner: string;
  /** Set when On-Behalf-Of named the owner: part of the request, so part of its fingerprint. */
  onBehalfOf?: string;
  /** The request's Idempotency-Key (money routes). */
  idempotencyKey?: string;
  /** The API's base URL as this request reached it, e.g. `https://api.example.com/prod` (worked out when asked). */
  apiBaseUrl: () => string;
  /** Epoch ms by which all upstream work must be done. */
  deadline: number;
  /** Every value the request carries for header `name` (any letter case). */
  header: (name: string) => string[];
  context: Context;
}

const LOOPBACK = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/;

/**
 * API Gateway names the domain the client called in requestContext.domainName (a custom domain
 * included), and requestContext.path carries the stage or base path before the route's path.
 * serverless-offline fills domainName with a placeholder, so its Host header stands in there.
 */
export function apiBaseUrl(event: Event): string {
  const context = event.requestContext;
  const domain = /^[A-Za-z0-9.-]+(:\d+)?$/.test(context?.domainName ?? '')
    ? context.domainName!
    : (headerValues(event, 'host')[0] ?? 'localhost');
  const fullPath = context?.path ?? '';
  const prefix = fullPath.endsWith(event.path) ? fullPath.slice(0, fullPath.length - event.path.length) : '';
  return `${LOOPBACK.test(domain) ? 'http' : 'https'}://${domain}${prefix}`;
}

/**
 * Header names are case-insensitive and API Gateway passes them as the client sent them, but the
 * body parser looks for `content-type` or `Content-Type` only: it gets lower-case names.
 */
const normalizeHeaders = (): MiddlewareObj<Event, Result> => ({
  name: 'normalizeHeaders',
  before: ({ event }) => {
    // No prototype: a header named __proto__ stays a header.
    const headers: Event['headers'] = Object.create(null);
    for (const name of Object.keys(event.headers ?? {})) headers[name.toLowerCase()] = event.headers[name];
    event.headers = headers;
  },
});

/**
 * A body route takes `application/json` only, declared once: middy's parser also takes any
 * `application/<anything>+json`, which docs/contract.md "Failures" answers with 415.
 */
const jsonOnly = (): MiddlewareObj<Event, Result> => ({
  name: 'jsonOnly',
  before: ({ event }) => {
    if (!declaresMediaType(event, 'application/json')) throw new UnsupportedMediaTypeError();
  },
});

/**
 * Builds an endpoint's Lambda handler: the middleware stack, in the order it runs, then the
 * validated request handed to `handler`. The stack is assembled once per container. The handler
 * carries its `options` as `route`, so that tests can hold the API description (openapi/routes.ts)
 * to what each function really requires.
 */
export function route<Body = undefined, Path = undefined, Query = undefined>(
  options: RouteOptions<Body, Path, Query>,
  handler: (request: ValidRequest<Body, Path, Query>) => Promise<Result>,
) {
  // Counted while it answers: work left for after the answer waits for it (lib/net/background.ts).
  return Object.assign(counted(stackFor(options, handler)), { route: options });
}

function stackFor<Body, Path, Query>(
  options: RouteOptions<Body, Path, Query>,
  handler: (request: ValidRequest<Body, Path, Query>) => Promise<Result>,
) {
  // No early-timeout race: lib/http/deadline.ts already ends upstream work well before Lambda's timeout,
  // and the race costs a timer per request and would answer the last moments with a 500.
  const stack = middy<Event, Result>({ timeoutEarlyInMillis: 0 });
  // Only when CORS_ORIGINS lists origins; outermost, so it sees every answer the rest produces.
  const corsConfig = corsFromEnvironment();
  if (corsConfig) stack.use(cors(corsConfig));
  stack
    // Before envelopeErrors: its onError runs after theirs, and so sees the envelope of any error.
    .use(observe(options))
    .use(envelopeErrors())
    .use(authenticate(options.scope))
    .use(guardRequest({ takesBody: options.body !== undefined, takesPath: options.path !== undefined }));
  if (options.body) {
    stack
      .use(normalizeHeaders())
      .use(jsonOnly())
      .use(httpJsonBodyParser({ disableContentTypeError: false }));
  }
  return stack.handler(async (event, context) => {
    const caller = callerOf(context);
    const onBehalfOf = readOnBehalfOf(event, caller, options.createsOrders === true);
    const errors: FieldError[] = [];
    const path = options.path ? parse(options.path, event.pathParameters ?? {}, 'path') : undefined;
    if (path && !path.ok) errors.push(...path.errors);
    const body = options.body ? parse(options.body, event.body, '') : undefined;
    if (body && !body.ok) errors.push(...body.errors);
    const query = options.query ? parseQuery(options.query, event) : undefined;
    if (query && !query.ok) errors.push(...query.errors);
    const keyOptional =
      options.idempotency?.optional === true && headerValues(event, IDEMPOTENCY_HEADER).length === 0;
    const key = options.idempotency && !keyOptional ? readIdempotencyKey(event) : undefined;
    if (key && !key.ok) errors.push(...key.errors);
    if (errors.length > 0) throw new InvalidRequestError(errors);
    const request: ValidRequest<Body, Path, Query> = {
      body: (body?.ok ? body.value : undefined) as Body,
      path: (path?.ok ? path.value : undefined) as Path,
      query: (query?.ok ? query.value : undefined) as Query,
      caller,
      owner: onBehalfOf ?? caller.sub,
      ...(onBehalfOf === undefined ? {} : { onBehalfOf }),
      ...(key?.ok ? { idempotencyKey: key.key } : {}),
      apiBaseUrl: () => apiBaseUrl(event),
      header: (name) => headerValues(event, name),
      // A money request keeps time for its bookkeeping after PayHere answers (lib/config/dynamodb.ts).
      deadline: requestDeadline(
        context.getRemainingTimeInMillis?.(),
        Date.now(),
        options.idempotency ? WRITES_AFTER_ANSWER_MS : 0,
      ),
      context,
    };
    (context as ObservedContext<ValidRequest<Body, Path, Query>>).validRequest = request;
    // The caller's PayHere calls count against its own share (lib/budget/caller-shares.ts).
    return callers.run({ id: caller.sub, kind: caller.role }, () => {
      if (options.idempotency && key?.ok) {
        return runIdempotent(options.idempotency, key.key, request, () => handler(request));
      }
      return handler(request);
    });
  });
}

/**
 * The query string against its schema, each parameter named `query.<name>`. A parameter given twice
 * with different values is refused (API Gateway would pass on only the last one).
 */
function parseQuery<Query>(schema: z.ZodMiniType<Query>, event: Event): Parsed<Query> {
  const repeated: FieldError[] = Object.entries(event.multiValueQueryStringParameters ?? {})
    .filter(([, values]) => new Set(values ?? []).size > 1)
    .map(([name]) => ({ path: `query.${name.slice(0, 64)}`, message: 'must be given once' }));
  const parsed = parse(schema, { ...event.queryStringParameters }, 'query');
  if (repeated.length === 0) return parsed;
  return { ok: false, errors: [...repeated, ...(parsed.ok ? [] : parsed.errors)] };
}
