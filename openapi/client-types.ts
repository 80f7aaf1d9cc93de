import { compile } from 'json-schema-to-typescript';

/**
 * client/api.ts: the typed face of the API for the client (client/index.ts), made from the
 * document: each operation's method, path and headers, and the types of its path parameters, its
 * body and every answer by HTTP status. The JSON Schemas become TypeScript through
 * json-schema-to-typescript; only the operations' table is written here.
 */

type JsonSchema = Record<string, unknown>;

interface OpenApiOperation {
  operationId: string;
  security: unknown[];
  parameters: Array<{ $ref?: string; name?: string; in?: string; schema?: JsonSchema; required?: boolean }>;
  requestBody?: { content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, { content: Record<string, { schema: JsonSchema }> }>;
}

interface OpenApiDocument {
  info: { title: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, JsonSchema> };
}

const JSON_MEDIA = 'application/json';

/** The operations an app calls: those with a bearer token (PayHere's notifications are not for apps). */
function operationsOf(document: OpenApiDocument) {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([, operation]) => operation.security.length > 0)
      .map(([method, operation]) => ({ path, method: method.toUpperCase(), operation })),
  );
}

/** One schema whose properties are the operations: `{ path?, body?, answers: { "<status>": envelope } }`. */
function operationsSchema(document: OpenApiDocument): JsonSchema {
  const codes = new Set<string>();
  const operations: Record<string, JsonSchema> = {};
  for (const { operation } of operationsOf(document)) {
    const pathParameters = operation.parameters.filter((parameter) => parameter.in === 'path');
    const body = operation.requestBody?.content[JSON_MEDIA]?.schema;
    const answers = Object.fromEntries(
      Object.entries(operation.responses).map(([status, response]) => [
        status,
        response.content[JSON_MEDIA]!.schema,
      ]),
    );
    JSON.stringify(answers, (key, value) => {
      if (key === 'code') for (const code of value.enum ?? [value.const]) codes.add(code);
      return value;
    });
    const properties: Record<string, JsonSchema> = {
      answers: {
        type: 'object',
        properties: answers,
        required: Object.keys(answers),
        additionalProperties: false,
      },
    };
    if (pathParameters.length > 0) {
      properties.path = {
        type: 'object',
        properties: Object.fromEntries(pathParameters.map((p) => [p.name!, { type: ['string', 'number'] }])),
        required: pathParameters.map((p) => p.name!),
        additionalProperties: false,
      };
    }
    const queryParameters = operation.parameters.filter((parameter) => parameter.in === 'query');
    if (queryParameters.length > 0) {
      properties.query = {
        type: 'object',
        properties: Object.fromEntries(queryParameters.map((p) => [p.name!, p.schema!])),
        additionalProperties: false,
      };
    }
    if (body) properties.body = body;
    operations[operation.operationId] = {
      type: 'object',
      properties,
      // Every query parameter is optional, and so the query.
      required: Object.keys(properties).filter((name) => name !== 'query'),
      additionalProperties: false,
    };
  }
  const schema = {
    title: 'Operations',
    description:
      'Every operation: its path and query parameters, its JSON body, and its answers by HTTP status.',
    type: 'object',
    properties: operations,
    required: Object.keys(operations),
    additionalProperties: false,
    $defs: {
      ...document.components.schemas,
      ErrorCode: { description: 'Every `data.code` a failure can carry.', enum: [...codes].sort() },
    },
  };
  return JSON.parse(JSON.stringify(schema).replaceAll('#/components/schemas/', '#/$defs/'));
}

/** Method, path and the headers each operation takes, for the client's requests. */
function operationTable(document: OpenApiDocument): string {
  const rows = operationsOf(document).map(({ path, method, operation }) => {
    const refs = operation.parameters.map((parameter) => parameter.$ref ?? '');
    // A route where the key is optional (a cancel) gets one too: a repeat after a lost answer is then replayed.
    const idempotent = refs.some((ref) => /#\/components\/parameters\/(Optional)?IdempotencyKey$/.test(ref));
    const onBehalfOf = refs.includes('#/components/parameters/OnBehalfOf');
    return `  ${operation.operationId}: { method: '${method}', path: '${path}', idempotent: ${idempotent}, onBehalfOf: ${onBehalfOf} },`;
  });
  return `/** How each operation is called. */
export const OPERATIONS = {
${rows.join('\n')}
} as const;
`;
}

export async function buildClientTypes(document: OpenApiDocument): Promise<string> {
  const types = await compile(operationsSchema(document) as never, 'Operations', {
    bannerComment: '',
    additionalProperties: false,
    unreachableDefinitions: true,
    style: { singleQuote: true, printWidth: 110, trailingComma: 'all' },
  });
  return `// Generated by npm run openapi from openapi/openapi.json (${document.info.title}); do not edit.

${types}
${operationTable(document)}`;
}
