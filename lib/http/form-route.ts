import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type * as z from 'zod/mini';
import { callers } from '../budget/caller-shares.ts';
import { InvalidRequestError, UnsupportedMediaTypeError } from '../envelope/errors.ts';
import { setLogContext } from '../log/log.ts';
import { counted } from '../net/background.ts';
import { requestDeadline } from './deadline.ts';
import { declaresMediaType } from './headers.ts';
import { envelopeErrors } from './middleware.ts';
import { observe } from './observe.ts';
import { guardRequest } from './request-guard.ts';
import { parse } from './validation.ts';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

export const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';

export interface FormRequest<Body> {
  body: Body;
  /** Epoch ms by which all upstream work must be done. */
  deadline: number;
  context: Context;
}

/** Every log line of the request carries its id (route() does this in authentication). */
const requestIdInLogs = (): MiddlewareObj<Event, Result> => ({
  name: 'requestIdInLogs',
  before: ({ event, context }) => {
    setLogContext({ requestId: event.requestContext?.requestId ?? context.awsRequestId });
  },
});

/**
 * The form body's fields: exactly one content type, the form one; each field once (a repeated
 * field would leave the reader to guess which one counts).
 */
function readForm(event: Event): Record<string, string> {
  if (!declaresMediaType(event, FORM_MEDIA_TYPE)) {
    throw new UnsupportedMediaTypeError(`Send the body as ${FORM_MEDIA_TYPE}, with that Content-Type.`);
  }
  const text = event.isBase64Encoded
    ? Buffer.from(event.body ?? '', 'base64').toString('utf8')
    : (event.body ?? '');
  const fields: Record<string, string> = Object.create(null);
  const repeated = new Set<string>();
  for (const [name, value] of new URLSearchParams(text)) {
    if (name in fields) repeated.add(name);
    fields[name] = value;
  }
  if (repeated.size > 0) {
    throw new InvalidRequestError(
      [...repeated].map((name) => ({ path: name, message: 'must be sent once' })),
    );
  }
  return fields;
}

export interface FormRouteOptions<Body> {
  /** The function's name: the `route` dimension of its metrics. */
  name: string;
  body: z.ZodMiniType<Body>;
}

/**
 * A route that a machine, not a user, calls with a form (PayHere's notifications): no bearer token
 * (the handler authenticates the content, by its signature), the same limits, validation and
 * envelope as every other route.
 */
export function formRoute<Body>(
  options: FormRouteOptions<Body>,
  handler: (request: FormRequest<Body>) => Promise<Result>,
) {
  // The options travel with the handler, as route()'s do, for the API description's tests.
  return Object.assign(counted(formStack(options, handler)), { route: { ...options, form: true as const } });
}

function formStack<Body>(
  options: FormRouteOptions<Body>,
  handler: (request: FormRequest<Body>) => Promise<Result>,
) {
  return middy<Event, Result>({ timeoutEarlyInMillis: 0 })
    .use(observe({ name: options.name }))
    .use(envelopeErrors())
    .use(requestIdInLogs())
    .use(guardRequest({ takesBody: true, takesPath: false }))
    .handler(async (event, context) => {
      const body = parse(options.body, readForm(event), '');
      if (!body.ok) throw new InvalidRequestError(body.errors);
      // What PayHere's notifications make the service confirm draws on a share of its own.
      return callers.run({ id: 'payhere', kind: 'notifications' }, () =>
        handler({
          body: body.value,
          deadline: requestDeadline(context.getRemainingTimeInMillis?.()),
          context,
        }),
      );
    });
}
