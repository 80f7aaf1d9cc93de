import type { RouteDoc } from './routes.ts';

/**
 * events/<function>.json: a sample API Gateway (REST, proxy) event per function for
 * `sls invoke local`, made from the route's first examples, which use the sandbox's seeded data.
 * The token is a placeholder: `npm run -s event -- <function>` prints the event with a fresh one.
 * PayHere's notification carries none: its sample is signed with the sandbox merchant's secret.
 */

export const TOKEN_PLACEHOLDER = 'Bearer <token: npm run -s event -- <function> puts one here>';

const LOCAL_HOST = '127.0.0.1:3000';

export function sampleEvent(route: RouteDoc & { operationId: string }, pathParameter: string | undefined) {
  const pathParameters =
    pathParameter && route.pathExample !== undefined ? { [pathParameter]: String(route.pathExample) } : null;
  const path = route.path.replace(/\{\w+\}/g, () => encodeURIComponent(String(route.pathExample)));
  const example = route.body ? route.bodyExamples?.[0]?.value : undefined;
  const form = route.mediaType !== undefined;
  const body =
    example === undefined
      ? null
      : form
        ? new URLSearchParams(example as Record<string, string>).toString()
        : JSON.stringify(example);
  const headers: Record<string, string> = {
    Accept: 'application/json',
    Host: LOCAL_HOST,
    'User-Agent': 'sls invoke local',
  };
  if (route.scope) headers.Authorization = TOKEN_PLACEHOLDER;
  if (body !== null) headers['Content-Type'] = route.mediaType ?? 'application/json';
  // A fixed key: invoking the event again is answered from the idempotency store.
  if (route.idempotent) headers['Idempotency-Key'] = `sample-${route.operationId}-1`;
  const method = route.method.toUpperCase();
  return {
    resource: route.path,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders: {},
    queryStringParameters: route.queryExample ?? null,
    multiValueQueryStringParameters: route.queryExample
      ? Object.fromEntries(Object.entries(route.queryExample).map(([name, value]) => [name, [value]]))
      : null,
    pathParameters,
    stageVariables: null,
    requestContext: {
      resourcePath: route.path,
      httpMethod: method,
      path,
      stage: 'local',
      domainName: LOCAL_HOST,
      requestId: `sample-${route.operationId}`,
      accountId: '123456789012',
      apiId: 'local',
      protocol: 'HTTP/1.1',
      identity: { sourceIp: '127.0.0.1', userAgent: 'sls invoke local' },
    },
    body,
    isBase64Encoded: false,
  };
}
