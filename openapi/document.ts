import * as z from 'zod/mini';
import type { Envelope, EnvelopeStatus } from '../lib/envelope/envelope.ts';
import { errorResponse } from '../lib/envelope/error-response.ts';
import type { ApiError } from '../lib/envelope/errors.ts';
import * as gatewaySchemas from '../lib/gateway/schemas.ts';
import { MERCHANT_SCOPE, ROUTE_SCOPES } from '../lib/http/auth/scopes.ts';
import { IDEMPOTENCY_HEADER, VALID_KEY } from '../lib/http/idempotency-key.ts';
import { ON_BEHALF_OF_HEADER, SUBJECT } from '../lib/http/on-behalf-of.ts';
import packageJson from '../package.json' with { type: 'json' };
import * as answerSchemas from './data.ts';
import {
  CODES_WITH_FIELD_ERRORS,
  CODES_WITH_IDEMPOTENCY_KEY,
  commonFailures,
  FAILURE_WHEN,
  type FailureCode,
} from './failures.ts';
import { type Answer, describedRoutes, type Example, type Failure, type RouteDoc } from './routes.ts';

/**
 * Builds the OpenAPI 3.1 document from the route table (openapi/routes.ts): the schemas are turned
 * into JSON Schema by zod, the failures' statuses, codes, headers and examples come from the error
 * classes the functions throw. Nothing here is specific to one route.
 */

type JsonSchema = Record<string, unknown>;
type Schema = z.ZodMiniType;
type Route = RouteDoc & { operationId: string };

const JSON_MEDIA = 'application/json';
const SECURITY_SCHEME = 'bearer';

/** Response headers the functions (or API Gateway) send, by name. */
const HEADERS: Record<string, { description: string; schema: JsonSchema }> = {
  'Idempotent-Replayed': {
    description:
      '`true` when this is the stored answer to an earlier request with the same Idempotency-Key (nothing was sent to PayHere again).',
    schema: { type: 'string', const: 'true' },
  },
  'Retry-After': {
    description:
      'Seconds to wait before repeating the request (with the same Idempotency-Key, on money routes).',
    schema: { type: 'integer', minimum: 0 },
  },
  Age: {
    description:
      'Whole seconds since PayHere gave this answer, when it was served from data shared earlier: for a few seconds between callers, or, for a customer’s own order in a final state, its copy in the ledger. Absent on an answer fetched from PayHere for this request.',
    schema: { type: 'integer', minimum: 0 },
  },
  'WWW-Authenticate': {
    description: 'The authentication scheme: `Bearer`.',
    schema: { type: 'string', const: 'Bearer' },
  },
};

/** Component names of the described schemas: their export names (without a `Schema` suffix). */
const SCHEMA_NAMES = new Map<unknown, string>(
  Object.entries({ ...gatewaySchemas, ...answerSchemas })
    .filter(([, value]) => value instanceof Object && '_zod' in value)
    .map(([name, value]) => [value, name.replace(/Schema$/, '')]),
);

/** Checks zod cannot express in JSON Schema (refinements) are described by their messages. */
function describeRefinements(context: { zodSchema: unknown; jsonSchema: JsonSchema }): void {
  const checks: Array<{ _zod: { def: { check: string; error?: unknown } } }> =
    (context.zodSchema as { _zod: { def: { checks?: [] } } })._zod.def.checks ?? [];
  const messages = checks
    .filter((check) => check._zod.def.check === 'custom' && typeof check._zod.def.error === 'function')
    .map((check) => (check._zod.def.error as () => unknown)())
    .filter((message): message is string => typeof message === 'string');
  if (messages.length === 0) return;
  const rules = `Also checked: ${messages.map((message) => `"${message}"`).join(', ')}.`;
  const own = context.jsonSchema.description;
  context.jsonSchema.description = typeof own === 'string' ? `${own} ${rules}` : rules;
}

function toJsonSchema(schema: Schema, io: 'input' | 'output'): JsonSchema {
  const { $schema: _, ...json } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    unrepresentable: 'any',
    override: describeRefinements,
  }) as JsonSchema;
  return json;
}

class DocumentBuilder {
  readonly schemas: Record<string, JsonSchema> = {};
  readonly codeStatuses = new Map<string, Set<number>>();

  /** A named schema becomes a component and a `$ref`; any other is written in place. */
  schemaOf(schema: Schema, io: 'input' | 'output', name = SCHEMA_NAMES.get(schema)): JsonSchema {
    if (!name) return toJsonSchema(schema, io);
    const json = toJsonSchema(schema, io);
    const existing = this.schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(json)) {
      throw new Error(`two different schemas are both named ${name}`);
    }
    this.schemas[name] = json;
    return { $ref: `#/components/schemas/${name}` };
  }

  dataOf(data: Answer['data']): JsonSchema {
    if (data === null) return { type: 'null' };
    if ('listOf' in data) return { type: 'array', items: this.schemaOf(data.listOf, 'output') };
    return this.schemaOf(data, 'output');
  }

  operation(route: Route) {
    const body = route.body
      ? {
          requestBody: {
            required: true,
            content: {
              [route.mediaType ?? JSON_MEDIA]: {
                schema: this.schemaOf(route.body, 'input', `${pascal(route.operationId)}Request`),
                ...(route.bodyExamples ? { examples: namedExamples(route.bodyExamples) } : {}),
              },
            },
            ...(route.bodyRules ? { description: route.bodyRules } : {}),
          },
        }
      : {};
    return {
      operationId: route.operationId,
      summary: route.summary,
      description: `${route.description}\n\n${requirements(route)}`,
      tags: [route.tag],
      // No scope: no bearer token (PayHere's notifications are signed instead).
      security: route.scope ? [{ [SECURITY_SCHEME]: [route.scope] }] : [],
      parameters: this.parameters(route),
      ...body,
      responses: this.responses(route),
    };
  }

  parameters(route: Route) {
    const parameters: unknown[] = [];
    if (route.pathParameters) {
      const json = toJsonSchema(route.pathParameters, 'input') as { properties: Record<string, JsonSchema> };
      for (const [name, schema] of Object.entries(json.properties)) {
        parameters.push({
          name,
          in: 'path',
          required: true,
          ...(route.pathDescription ? { description: route.pathDescription } : {}),
          schema,
          ...(route.pathExample === undefined ? {} : { example: String(route.pathExample) }),
        });
      }
    }
    if (route.queryParameters) {
      const json = toJsonSchema(route.queryParameters, 'input') as {
        properties: Record<string, JsonSchema>;
        required?: string[];
      };
      for (const [name, schema] of Object.entries(json.properties)) {
        parameters.push({
          name,
          in: 'query',
          required: json.required?.includes(name) ?? false,
          ...(route.queryDescriptions?.[name] ? { description: route.queryDescriptions[name] } : {}),
          schema,
        });
      }
    }
    if (route.idempotent === true) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
    if (route.idempotent === 'optional')
      parameters.push({ $ref: '#/components/parameters/OptionalIdempotencyKey' });
    if (route.createsOrders) parameters.push({ $ref: '#/components/parameters/OnBehalfOf' });
    return parameters;
  }

  responses(route: Route) {
    const failures: Failure[] = [
      ...commonFailures({
        scope: route.scope,
        body: route.body === undefined ? undefined : route.mediaType === undefined ? 'json' : 'form',
        idempotent: route.idempotent !== undefined,
        upstream: route.upstream,
      }).map((error) => ({ error })),
      { error: route.invalid },
      ...route.failures,
    ];
    const statuses = new Set([
      ...route.answers.map((a) => a.httpStatus),
      ...failures.map((f) => f.error.httpStatus),
    ]);
    const responses: Record<string, unknown> = {};
    for (const httpStatus of [...statuses].sort((a, b) => a - b)) {
      const answers = route.answers.filter((answer) => answer.httpStatus === httpStatus);
      const failed = failures.filter((failure) => failure.error.httpStatus === httpStatus);
      // Per code: the general "when", then this route's own cases, and an example of each.
      const codes = new Map<string, { errors: ApiError[]; whens: string[] }>();
      for (const { error, when } of failed) {
        let code = codes.get(error.code);
        if (!code) {
          code = { errors: [], whens: [FAILURE_WHEN[error.code as FailureCode] ?? ''] };
          codes.set(error.code, code);
        }
        if (!code.errors.some((known) => known.message === error.message)) code.errors.push(error);
        if (when) code.whens.push(when);
        const statuses = this.codeStatuses.get(error.code) ?? new Set<number>();
        this.codeStatuses.set(error.code, statuses.add(httpStatus));
      }
      const envelopes = [
        ...answers.map((answer) => envelopeSchema([answer.status], this.dataOf(answer.data))),
        ...failureEnvelopes([...codes.values()].map((code) => code.errors[0]!)),
      ];
      const headers = new Set<string>();
      if (route.idempotent) headers.add('Idempotent-Replayed');
      // A repeat of an unknown outcome looked for lately: its 202 again, with when to look again.
      if (route.idempotent && httpStatus === 202) headers.add('Retry-After');
      if (route.shared && answers.length > 0 && httpStatus === 200) headers.add('Age');
      for (const error of [...codes.values()].flatMap((code) => code.errors)) {
        for (const name of Object.keys(error.headers)) {
          if (!HEADERS[name]) throw new Error(`${error.code} sends ${name}, which HEADERS does not describe`);
          headers.add(name);
        }
      }
      const examples = [
        ...answers.flatMap((answer) => answer.examples ?? []),
        ...[...codes.values()].flatMap((code) =>
          code.errors.map((error) => ({ summary: `\`${error.code}\``, value: failureEnvelope(error) })),
        ),
      ];
      responses[String(httpStatus)] = {
        description: [
          ...answers.map((answer) => answer.description),
          ...[...codes].map(([code, { whens }]) => `\`${code}\`: ${whens.join(' ')}`),
        ].join('\n\n'),
        ...(headers.size > 0
          ? {
              headers: Object.fromEntries(
                [...headers]
                  .sort()
                  .map((name) => [name, { $ref: `#/components/headers/${headerComponent(name)}` }]),
              ),
            }
          : {}),
        content: {
          [JSON_MEDIA]: {
            schema: envelopes.length === 1 ? envelopes[0] : { anyOf: envelopes },
            examples: namedExamples(examples),
          },
          ...Object.fromEntries(
            answers.flatMap((answer) =>
              answer.text
                ? [[answer.text.mediaType, { schema: { type: 'string' }, example: answer.text.example }]]
                : [],
            ),
          ),
        },
      };
    }
    return responses;
  }
}

function envelopeSchema(statuses: EnvelopeStatus[], data: JsonSchema): JsonSchema {
  return {
    type: 'object',
    properties: {
      status:
        statuses.length === 1 ? { type: 'integer', const: statuses[0] } : { type: 'integer', enum: statuses },
      msg: { type: 'string' },
      data,
    },
    required: ['status', 'msg', 'data'],
    additionalProperties: false,
  };
}

/** One envelope per envelope status among the failures (401 and 403 are -2, outcome_unknown 0). */
function failureEnvelopes(errors: ApiError[]): JsonSchema[] {
  const byStatus = new Map<EnvelopeStatus, string[]>();
  for (const error of errors) byStatus.set(error.status, [...(byStatus.get(error.status) ?? []), error.code]);
  return [...byStatus].map(([status, codes]) =>
    envelopeSchema([status], {
      type: 'object',
      properties: {
        code: codes.length === 1 ? { type: 'string', const: codes[0] } : { type: 'string', enum: codes },
        ...(codes.some((code) => CODES_WITH_FIELD_ERRORS.includes(code as FailureCode))
          ? { errors: { type: 'array', items: { $ref: '#/components/schemas/FieldError' } } }
          : {}),
        ...(codes.some((code) => CODES_WITH_IDEMPOTENCY_KEY.includes(code as FailureCode))
          ? {
              idempotency_key: {
                type: 'string',
                description:
                  'The Idempotency-Key of the request to repeat (another refund in flight, to its own caller).',
              },
            }
          : {}),
      },
      required: ['code'],
      additionalProperties: false,
    }),
  );
}

/** The envelope the functions answer for `error` (lib/envelope/error-response.ts). */
function failureEnvelope(error: ApiError): Envelope {
  return JSON.parse(errorResponse(error).body) as Envelope;
}

function namedExamples(examples: Example[]) {
  const named: Record<string, { summary: string; value: unknown }> = {};
  for (const example of examples) {
    let name = example.summary.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '');
    while (named[name]) name += '_';
    named[name] = example;
  }
  return named;
}

function requirements(route: Route): string {
  const lines = [
    route.scope
      ? `Requires a bearer token with the scope \`${route.scope}\`.`
      : 'Takes no bearer token: the body is authenticated by its signature.',
  ];
  if (route.idempotent === 'optional') {
    lines.push(
      'Takes an optional `Idempotency-Key`: with one, a repeat with the same key is answered from the store ' +
        '(`Idempotent-Replayed: true`), never sent to PayHere again.',
    );
  } else if (route.idempotent) {
    lines.push(
      'Requires an `Idempotency-Key`: a repeat with the same key is answered from the store for at least 24 hours ' +
        '(`Idempotent-Replayed: true`), never sent to PayHere again.',
    );
  }
  if (route.createsOrders) {
    lines.push('A merchant token may name the customer who owns the new order with `On-Behalf-Of`.');
  }
  return lines.join(' ');
}

const pascal = (name: string) => `${name[0]!.toUpperCase()}${name.slice(1)}`;
const headerComponent = (name: string) => name.replaceAll('-', '');

const SCOPE_ROUTES = (routes: Route[]) =>
  [...ROUTE_SCOPES, MERCHANT_SCOPE]
    .map((scope) => {
      const names = routes
        .filter((route) => route.scope === scope)
        .map((route) => `\`${route.operationId}\``);
      const what =
        scope === MERCHANT_SCOPE
          ? 'none by itself: added to a route scope, the caller is the merchant and acts on every object'
          : names.join(', ');
      return `| \`${scope}\` | ${what} |`;
    })
    .join('\n');

function apiDescription(routes: Route[], codeStatuses: Map<string, Set<number>>): string {
  const codes = Object.entries(FAILURE_WHEN)
    .filter(([code]) => codeStatuses.has(code))
    .map(([code, when]) => `| \`${code}\` | ${[...codeStatuses.get(code)!].sort().join(', ')} | ${when} |`)
    .join('\n');
  return `Charge, capture, refund and retrieve PayHere payments and manage subscriptions, without the app holding gateway credentials.

## The envelope

Every answer, success or failure (API Gateway's own included), is \`{"status": <int>, "msg": <string>, "data": <...>}\` with the real HTTP status:

| \`status\` | meaning |
|---|---|
| 1 | done |
| 0 | accepted, not final: pending, or the outcome is unknown after a lost answer |
| -1 | failed: the request, the payment or the gateway |
| -2 | the caller is not authenticated or not allowed |

A failure's \`data\` is \`{"code": <string>}\` (with \`errors\`: \`[{"path", "message"}]\` for \`invalid_request\` and \`order_conflict\`). \`msg\` says in plain words what went wrong and what to do.

| \`data.code\` | HTTP | when |
|---|---|---|
${codes}

## Idempotency

PayHere does not deduplicate, so charge, capture, refund and subscription retry require an \`Idempotency-Key\` header (a new one per new request), and a subscription's cancel takes one optionally. A repeat with the same key from the same caller is answered from the store for at least 24 hours with \`Idempotent-Replayed: true\`, and nothing is sent to PayHere again. After a lost answer (a network error, or 202 \`outcome_unknown\`), repeat the request with the same key: it is settled, never sent twice. PayHere is asked about an unknown outcome at most once per 30 s per key: a repeat sooner gets the same 202 with \`Retry-After\`.

## Callers and scopes

Every route but PayHere's notifications needs \`Authorization: Bearer <JWT>\` from the configured issuer, holding the route's scope. A token without \`merchant\` is a customer's: it acts only on what it owns, and anything else is answered as if it did not exist (404). Locally, \`npm start\` runs an issuer and \`npm run -s token\` prints a merchant token.

| scope | routes |
|---|---|
${SCOPE_ROUTES(routes)}`;
}

export function buildDocument() {
  const routes = describedRoutes();
  const builder = new DocumentBuilder();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method] = builder.operation(route);
  }
  builder.schemaOf(answerSchemas.FieldError, 'output');
  return {
    openapi: '3.1.0',
    info: {
      title: 'PayHere payments API',
      version: packageJson.version,
      description: apiDescription(routes, builder.codeStatuses),
    },
    servers: [
      { url: 'http://127.0.0.1:3000', description: '`npm start`: the API against the local PayHere sandbox' },
      {
        url: 'https://{api}.execute-api.{region}.amazonaws.com/{stage}',
        description: 'A deployed stage',
        variables: {
          api: { default: 'abc123', description: 'The REST API id' },
          region: { default: 'ap-south-1' },
          stage: { default: 'prod' },
        },
      },
    ],
    tags: [
      {
        name: 'Payments',
        description: 'Charges, holds and their capture, refunds, and the payments of an order.',
      },
      { name: 'Subscriptions', description: 'Recurring payments set up through PayHere.' },
      { name: 'Checkouts', description: "Orders the app pays through PayHere's SDK or checkout." },
      { name: 'Orders', description: "The ledger's orders, listed and filtered, without asking PayHere." },
      { name: 'Notifications', description: 'What PayHere reports to the service: not for apps.' },
      { name: 'Webhooks', description: "The merchant's webhook deliveries of events, and redelivery." },
    ],
    paths,
    components: {
      schemas: sortedByKey(builder.schemas),
      parameters: {
        IdempotencyKey: {
          name: IDEMPOTENCY_HEADER,
          in: 'header',
          required: true,
          description:
            'A new unique key per request (a UUID fits); repeat a request with its own key to learn its outcome.',
          schema: { type: 'string', pattern: VALID_KEY.source },
          example: '5b0f3c1e-8d7a-4f2b-9c6e-1a2b3c4d5e6f',
        },
        OptionalIdempotencyKey: {
          name: IDEMPOTENCY_HEADER,
          in: 'header',
          required: false,
          description:
            'Optional on this route: with a new unique key per request, a repeat with the same key is answered from the store.',
          schema: { type: 'string', pattern: VALID_KEY.source },
          example: '5b0f3c1e-8d7a-4f2b-9c6e-1a2b3c4d5e6f',
        },
        OnBehalfOf: {
          name: ON_BEHALF_OF_HEADER,
          in: 'header',
          required: false,
          description:
            'Merchant tokens only (403 for a customer): the `sub` of the customer who owns the order this request creates.',
          schema: { type: 'string', pattern: SUBJECT.source },
          example: 'customer-42',
        },
      },
      headers: Object.fromEntries(
        Object.entries(HEADERS).map(([name, header]) => [headerComponent(name), header]),
      ),
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'A JWT from the configured issuer. Each operation lists the scope its token must hold in the `scope` claim; add `merchant` to act as the merchant.',
        },
      },
    },
  };
}

function sortedByKey<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}
