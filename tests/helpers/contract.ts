import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

/**
 * The API description (openapi/openapi.json) as a contract for real answers: which operation a
 * request reached, whether the document gives that operation that status, and whether the body
 * and the headers match the response's schemas (ajv, JSON Schema 2020-12, offline).
 */

export interface RecordedAnswer {
  method: string;
  /** The request's path, e.g. `/gateway/api/payments/LP8006126139`. */
  path: string;
  /** Known when the test called an operation by name (in-process handler calls). */
  operationId?: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface Operation {
  operationId: string;
  method: string;
  pattern: RegExp;
  parameters: number;
  responses: Record<string, DocumentedResponse>;
}

interface DocumentedResponse {
  headers?: Record<string, { $ref: string }>;
  content?: Record<string, { schema: unknown; examples?: Record<string, { value: unknown }> }>;
}

type OpenApiDocument = {
  paths: Record<
    string,
    Record<string, { operationId: string; responses: Record<string, DocumentedResponse> }>
  >;
  components: { schemas: Record<string, unknown>; headers: Record<string, { schema: { type?: string } }> };
};

const DOCUMENT_ID = 'urn:payhere-payments-api:openapi';
const JSON_MEDIA = 'application/json';

export const DOCUMENT_PATH = path.resolve(import.meta.dirname, '../../openapi/openapi.json');

/** Every schema of the document, compiled once; refs to components resolve through `$defs`. */
export class Contract {
  readonly document: OpenApiDocument;
  readonly operations: Operation[];
  readonly #ajv: Ajv2020;
  readonly #validators = new Map<string, ValidateFunction>();

  constructor(document: OpenApiDocument) {
    this.document = document;
    this.#ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
    formats.default(this.#ajv);
    this.#ajv.addSchema({ $id: DOCUMENT_ID, $defs: this.#relinked(document.components.schemas) });
    this.operations = Object.entries(document.paths).flatMap(([template, item]) =>
      Object.entries(item).map(([method, operation]) => ({
        operationId: operation.operationId,
        method: method.toUpperCase(),
        pattern: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
        parameters: (template.match(/\{/g) ?? []).length,
        responses: operation.responses,
      })),
    );
  }

  static fromFile(file = DOCUMENT_PATH): Contract {
    return new Contract(JSON.parse(readFileSync(file, 'utf8')) as OpenApiDocument);
  }

  /** `#/components/schemas/X` → the document's `$defs` (the schemas' own refs included). */
  #relinked<T>(schema: T): T {
    return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${DOCUMENT_ID}#/$defs/`));
  }

  /** Compiles a schema of the document (once); throws when it is not valid JSON Schema 2020-12. */
  validator(key: string, schema: unknown): ValidateFunction {
    let validate = this.#validators.get(key);
    if (!validate) {
      validate = this.#ajv.compile(this.#relinked(schema as object));
      this.#validators.set(key, validate);
    }
    return validate;
  }

  /** The operation a request reached: the most literal path template that matches. */
  operationOf(answer: Pick<RecordedAnswer, 'method' | 'path' | 'operationId'>): Operation | undefined {
    if (answer.operationId) return this.operations.find((op) => op.operationId === answer.operationId);
    return this.operations
      .filter((op) => op.method === answer.method.toUpperCase() && op.pattern.test(answer.path))
      .sort((a, b) => a.parameters - b.parameters)[0];
  }

  /** What is wrong with `answer` by the document; `[]` when it matches. Unknown routes are not judged. */
  problems(answer: RecordedAnswer): string[] {
    const operation = this.operationOf(answer);
    if (!operation) return [];
    const where = `${operation.operationId} ${answer.status}`;
    const response = operation.responses[String(answer.status)];
    if (!response)
      return [`${where}: the document gives ${operation.operationId} no ${answer.status} answer`];
    const problems: string[] = [];
    const headers = lowerCased(answer.headers);
    // A documented answer in another media type (the reconciliation report's CSV): that type, a body.
    const textMedia = Object.keys(response.content ?? {}).find(
      (type) => type !== JSON_MEDIA && (headers['content-type'] ?? '').startsWith(type),
    );
    if (textMedia) return answer.body.length > 0 ? [] : [`${where}: an empty ${textMedia} body`];
    const media = response.content?.[JSON_MEDIA];
    if (!media) return [`${where}: the document describes no JSON body`];
    if (!(headers['content-type'] ?? '').startsWith(JSON_MEDIA)) {
      problems.push(`${where}: Content-Type is ${headers['content-type']}, not ${JSON_MEDIA}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      return [...problems, `${where}: the body is not JSON: ${answer.body.slice(0, 200)}`];
    }
    const validate = this.validator(`${operation.operationId} ${answer.status}`, media.schema);
    if (!validate(body)) {
      problems.push(
        `${where}: the body does not match: ${this.#ajv.errorsText(validate.errors)}; ${answer.body.slice(0, 300)}`,
      );
    }
    problems.push(...this.#headerProblems(where, response, headers));
    return problems;
  }

  /** A documented header must match its schema; one the document describes elsewhere must not appear here undocumented. */
  #headerProblems(where: string, response: DocumentedResponse, headers: Record<string, string>): string[] {
    const problems: string[] = [];
    const documented = new Map(
      Object.entries(response.headers ?? {}).map(([name, ref]) => [
        name.toLowerCase(),
        ref.$ref.split('/').pop()!,
      ]),
    );
    const known = new Map(
      Object.keys(this.document.components.headers).map((component) => [component.toLowerCase(), component]),
    );
    for (const [name, value] of Object.entries(headers)) {
      const component = documented.get(name) ?? known.get(name.replaceAll('-', ''));
      if (!component) continue;
      if (!documented.has(name)) {
        problems.push(`${where}: header ${name} is sent but not documented for this answer`);
        continue;
      }
      const schema = this.document.components.headers[component]!.schema;
      const typed = schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
      const validate = this.validator(`header ${component}`, schema);
      if (!validate(typed)) problems.push(`${where}: header ${name}: ${value} does not match its schema`);
    }
    return problems;
  }

  /** Every `operationId status` the document gives. */
  documentedStatuses(): string[] {
    return this.operations.flatMap((op) =>
      Object.keys(op.responses).map((status) => `${op.operationId} ${status}`),
    );
  }
}

function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

let contract: Contract | undefined;
const recorded: RecordedAnswer[] = [];
const pending: Promise<void>[] = [];

/** Keep an answer the API gave in this test file, to be held to the document after it (tests/setup/answers.ts). */
export function recordAnswer(answer: RecordedAnswer | Promise<RecordedAnswer | undefined>): void {
  if (answer instanceof Promise) {
    pending.push(answer.then((a) => void (a && recorded.push(a))).catch(() => undefined));
  } else {
    recorded.push(answer);
  }
}

/** The answers recorded so far in this test file (their bodies read). */
export async function recordedAnswers(): Promise<RecordedAnswer[]> {
  await Promise.all(pending);
  return recorded;
}

export function documentContract(): Contract {
  contract ??= Contract.fromFile();
  return contract;
}
