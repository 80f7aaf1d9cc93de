import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { callerOf } from '../../lib/http/caller.ts';
import type { ValidRequest } from '../../lib/http/route.ts';
import { TEST_AUTH_ENV, tokenFor } from '../helpers/auth.ts';
import { apiEvent, invoke, lambdaContext } from '../helpers/events.ts';

/**
 * route() with a probe for a handler: what the handler is given once the stack has authenticated
 * the caller, and that it is never reached when authentication fails.
 */
type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
let seen: ValidRequest<{ amount: number }, undefined>[];
let probe: Handler;

beforeAll(async () => {
  Object.assign(process.env, TEST_AUTH_ENV);
  const { route } = await import('../../lib/http/route.ts');
  probe = route(
    { name: 'probe', scope: 'payments:charge', body: z.strictObject({ amount: z.number() }) },
    async (request) => {
      seen.push(request);
      return { statusCode: 200, body: JSON.stringify({ status: 1, msg: 'ok', data: null }) };
    },
  );
});

const event = (headers: Record<string, string>, body: unknown = { amount: 1 }) =>
  apiEvent({ method: 'POST', resource: '/probe', body, headers });

describe('the authenticated caller', () => {
  it("is handed to the handler: the token's sub, scopes and role", async () => {
    seen = [];
    const token = await tokenFor('payments:charge payments:read');

    const answer = await invoke(probe, event({ Authorization: `Bearer ${token}` }));

    expect(answer.statusCode).toBe(200);
    expect(seen.map((request) => request.caller)).toEqual([
      { sub: 'test-client', scopes: ['payments:charge', 'payments:read'], role: 'customer' },
    ]);
  });

  it('is never reached without authentication, however valid the rest', async () => {
    seen = [];

    const answers = [
      await invoke(probe, event({})),
      await invoke(probe, event({ Authorization: `Bearer ${await tokenFor('payments:read')}` })),
    ];

    expect(answers.map((answer) => answer.statusCode)).toEqual([401, 403]);
    expect(seen).toEqual([]);
  });

  it('is required: reading it from a context the middleware did not authenticate is a bug, not "anonymous"', () => {
    expect(() => callerOf(lambdaContext())).toThrow('No authenticated caller');
  });
});
