import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import base from '../events/rest-api-event.json' with { type: 'json' };

/** The captured event as JSON: each event starts from a fresh deep copy of it, parsed. */
const BASE = JSON.stringify(base);

export interface EventOptions {
  method: 'GET' | 'POST' | 'DELETE';
  /** The route's resource template, e.g. `/gateway/api/subscriptions/{id}`. */
  resource: string;
  pathParameters?: Record<string, string>;
  /** The query string's parameters, each once. */
  query?: Record<string, string>;
  /** An object is sent as JSON; a string is sent as it is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Replace the default headers (Content-Type included) instead of adding to them. */
  replaceHeaders?: boolean;
}

/** A REST API (v1) proxy event as API Gateway sends it, built from a captured real event. */
export function apiEvent(options: EventOptions): APIGatewayProxyEvent {
  const path = options.resource.replace(/\{(\w+)\}/g, (_, name: string) =>
    encodeURIComponent(options.pathParameters?.[name] ?? ''),
  );
  const body =
    options.body === undefined
      ? null
      : typeof options.body === 'string'
        ? options.body
        : JSON.stringify(options.body);
  const defaults = { ...base.headers } as Record<string, string>;
  if (options.method !== 'POST') delete defaults['Content-Type'];
  const headers = options.replaceHeaders ? { ...options.headers } : { ...defaults, ...options.headers };
  const copy = JSON.parse(BASE) as typeof base;
  return {
    ...copy,
    resource: options.resource,
    path,
    httpMethod: options.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    pathParameters: options.pathParameters ?? null,
    queryStringParameters: options.query ?? null,
    multiValueQueryStringParameters: options.query
      ? Object.fromEntries(Object.entries(options.query).map(([k, v]) => [k, [v]]))
      : null,
    body,
    requestContext: {
      ...copy.requestContext,
      resourcePath: options.resource,
      httpMethod: options.method,
      path: `/dev${path}`,
      requestId: randomUUID(),
    },
  } as unknown as APIGatewayProxyEvent;
}

export function lambdaContext(remainingMs = 25_000): Context {
  const endsAt = Date.now() + remainingMs;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'payhere-payments-api-dev-test',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:ap-south-1:123456789012:function:payhere-payments-api-dev-test',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/payhere-payments-api-dev-test',
    logStreamName: '2026/11/21/[$LATEST]0123456789abcdef',
    getRemainingTimeInMillis: () => Math.max(0, endsAt - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

export interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  /** The parsed envelope (undefined for an answer that is not JSON: the reconciliation report's CSV; see `raw`). */
  body: { status: number; msg: string; data: any };
  raw: string;
}

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

/** Invoke a handler in-process as Lambda would, and parse its envelope. */
export async function invoke(
  handler: Handler,
  event: APIGatewayProxyEvent,
  context = lambdaContext(),
): Promise<Answer> {
  const result = await handler(event, context);
  return {
    statusCode: result.statusCode,
    headers: result.headers ?? {},
    body: String(result.headers?.['Content-Type'] ?? 'application/json').startsWith('application/json')
      ? JSON.parse(result.body)
      : undefined,
    raw: result.body,
  };
}
