import type { MiddlewareObj, Request } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type Env, httpsOrigins } from '../config/config.ts';
import { headerValues } from './headers.ts';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

/**
 * Browser origins allowed to call the API (`CORS_ORIGINS`); undefined when none is, which is the
 * default: native apps send no Origin and need no CORS. API Gateway answers the preflight with the
 * same list (serverless.yml `custom.cors`); the functions answer the requests themselves.
 */
export interface CorsConfig {
  origins: ReadonlySet<string>;
}

export function loadCorsConfig(env: Env): CorsConfig | undefined {
  const origins = httpsOrigins('CORS_ORIGINS', env.CORS_ORIGINS);
  return origins.length === 0 ? undefined : { origins: new Set(origins) };
}

let containerConfig: { value: CorsConfig | undefined } | undefined;

/** Read once per container, at start-up: a bad CORS_ORIGINS fails the cold start. */
export function corsFromEnvironment(): CorsConfig | undefined {
  containerConfig ??= { value: loadCorsConfig(process.env) };
  return containerConfig.value;
}

/** What a browser script may read beyond the simple headers: replays, waits, shared reads. */
const EXPOSED_HEADERS = 'Idempotent-Replayed, Retry-After, Age';

/**
 * The CORS headers of an answer to a request carrying `origins` (its Origin header values): the
 * one origin echoed when it is listed, nothing for any other. `Vary: Origin` always, since the
 * answer depends on it.
 */
export function corsHeaders(config: CorsConfig, origins: readonly string[]): Record<string, string> {
  const origin = origins.length === 1 ? origins[0]! : undefined;
  if (origin === undefined || !config.origins.has(origin)) return { Vary: 'Origin' };
  return {
    Vary: 'Origin',
    'Access-Control-Allow-Origin': origin,
    'Access-Control-Expose-Headers': EXPOSED_HEADERS,
  };
}

/**
 * Outermost in the stack, so that it sees every answer, errors and idempotent replays included,
 * after the idempotency store kept it: a replay is answered to whichever origin asks now.
 */
export const cors = (config: CorsConfig): MiddlewareObj<Event, Result> => {
  const addHeaders = ({ event, response }: Request<Event, Result>) => {
    if (!response) return;
    response.headers = { ...response.headers, ...corsHeaders(config, headerValues(event, 'origin')) };
  };
  return { name: 'cors', after: addHeaders, onError: addHeaders };
};
