import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'acorn';
import { transform } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import * as errors from '../../lib/envelope/errors.ts';
import { type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { withToken } from '../helpers/auth.ts';
import { apiEvent, invoke } from '../helpers/events.ts';
import { handlerOf } from '../helpers/gateway.ts';
import { captureLogs } from '../helpers/logs.ts';
import { ROUTES } from '../helpers/routes.ts';
import {
  type FakeSecretsManager,
  gatewaySecret,
  startFakeSecretsManager,
  useSecretCredentials,
} from '../helpers/secrets-manager.ts';

/**
 * A caller learns what went wrong and what it can do, never how the service is configured: no
 * variable name, no ARN, no account id in any message (docs/contract.md "Envelope"). The operator finds
 * the detail in an error log line carrying the request id.
 */
const root = path.resolve(import.meta.dirname, '../..');

/** What a caller must never read, with the text of a message; empty when it is clean. */
function configurationIn(message: string): string[] {
  const literal = message.replace(/\$\{[^}]*\}/g, ' ');
  const code = [...message.matchAll(/\$\{([^}]*)\}/g)].map((match) => match[1]!);
  return [
    ...(literal.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g) ?? []), // GATEWAY_BASE_URL
    ...(literal.match(/arn:[^\s]*/gi) ?? []),
    ...(literal.match(/\b\d{12}\b/g) ?? []), // an AWS account id
    // A value interpolated from configuration: a secret id, an ARN, an environment variable.
    ...code.filter((expression) => /secret|arn\b|account|config|process\.env|\benv\b/i.test(expression)),
  ];
}

describe('the scanner', () => {
  it.each([
    ['GATEWAY_BASE_URL', 'the operator must check GATEWAY_BASE_URL.'],
    ['an ARN', 'the secret arn:aws:secretsmanager:ap-south-1:123456789012:secret:x cannot be read'],
    ['an account id', 'account 123456789012 is not allowed'],
    ['an interpolated secret id', `the secret \${secretId} is not JSON`],
  ])('finds %s', (_, message) => {
    expect(configurationIn(message)).not.toEqual([]);
  });

  it('passes a plain message, and one quoting a limit', () => {
    expect(configurationIn('The payment service is misconfigured; try again later.')).toEqual([]);
    expect(configurationIn(`must be at most \${MAX_HEADER_VALUE_LENGTH} characters long`)).toEqual([]);
  });
});

type Node = { type: string; start: number; end: number; [key: string]: any };

function* nodes(node: Node): Generator<Node> {
  yield node;
  for (const value of Object.values(node)) {
    for (const child of Array.isArray(value) ? value : [value]) {
      if (child && typeof child === 'object' && typeof child.type === 'string') yield* nodes(child);
    }
  }
}

/** The text an expression can produce, with what is computed at run time as `${code}`. */
function textOf(node: Node, code: string, constants: Map<string, Node>): string {
  const text = (n: Node) => textOf(n, code, constants);
  switch (node.type) {
    case 'Literal':
      return String(node.value);
    case 'TemplateLiteral':
      return node.quasis
        .map(
          (quasi: Node, i: number) =>
            quasi.value.cooked + (node.expressions[i] ? text(node.expressions[i]) : ''),
        )
        .join('');
    case 'BinaryExpression':
      return node.operator === '+'
        ? text(node.left) + text(node.right)
        : `\${${code.slice(node.start, node.end)}}`;
    case 'ConditionalExpression':
      return `${text(node.consequent)} | ${text(node.alternate)}`;
    case 'ObjectExpression':
      return node.properties.map((p: Node) => (p.value ? text(p.value) : '')).join(' | ');
    case 'ArrayExpression':
      return node.elements.map((e: Node | null) => (e ? text(e) : '')).join(' | ');
    case 'Identifier': {
      const constant = constants.get(node.name);
      return constant ? text(constant) : `\${${node.name}}`;
    }
    default:
      return `\${${code.slice(node.start, node.end)}}`;
  }
}

/** Every message an ApiError (what becomes a caller's `msg` and `data`) is built with, per file. */
async function callerMessages(): Promise<Array<{ file: string; message: string }>> {
  const apiErrors = new Set(
    Object.entries(errors)
      .filter(
        ([, value]) =>
          value === errors.ApiError ||
          (value as { prototype?: unknown }).prototype instanceof errors.ApiError,
      )
      .map(([name]) => name),
  );
  const files = (
    await Promise.all(
      ['lib', 'functions'].map(async (dir) =>
        (
          await readdir(path.join(root, dir), { recursive: true })
        )
          .filter((file) => file.endsWith('.ts'))
          .map((file) => path.join(dir, file)),
      ),
    )
  ).flat();
  const found: Array<{ file: string; message: string }> = [];
  for (const file of files) {
    const { code } = await transform(await readFile(path.join(root, file), 'utf8'), { loader: 'ts' });
    const program = parse(code, { ecmaVersion: 'latest', sourceType: 'module' }) as unknown as Node;
    const constants = new Map<string, Node>();
    for (const node of nodes(program)) {
      if (node.type === 'VariableDeclarator' && node.id.type === 'Identifier' && node.init) {
        constants.set(node.id.name, node.init);
      }
    }
    for (const node of nodes(program)) {
      // The error classes' own defaults, and every error the rest of the code raises.
      const inErrorClasses = file === path.join('lib', 'envelope', 'errors.ts');
      if (inErrorClasses && (node.type === 'Literal' || node.type === 'TemplateLiteral')) {
        found.push({ file, message: textOf(node, code, constants) });
      }
      if (
        node.type === 'NewExpression' &&
        node.callee.type === 'Identifier' &&
        apiErrors.has(node.callee.name)
      ) {
        for (const argument of node.arguments)
          found.push({ file, message: textOf(argument, code, constants) });
      }
    }
  }
  return found;
}

describe('every message the code can give a caller', () => {
  it('names no configuration, ARN or account id', async () => {
    const messages = await callerMessages();

    const offending = messages
      .map(({ file, message }) => ({ file, message, found: configurationIn(message) }))
      .filter(({ found }) => found.length > 0);
    expect(offending).toEqual([]);
    // The scan reads what it must: defaults of the error classes, and messages held in constants.
    expect(messages.length).toBeGreaterThan(80);
    expect(messages.map(({ message }) => message)).toEqual(
      expect.arrayContaining([
        'Something went wrong on our side; try again later.',
        'The payment service is misconfigured; try again later.',
      ]),
    );
  });
});

describe("a misconfigured service's answers", () => {
  const SECRET_ARN = 'arn:aws:secretsmanager:ap-south-1:123456789012:secret:payhere/prod/gateway-AbCdEf';
  const KNOWN = { appId: 'app-known', appSecret: 'CANARY-SECRET-known-5e21' };
  let secrets: FakeSecretsManager;
  let sandbox: Sandbox;

  beforeAll(async () => {
    secrets = await startFakeSecretsManager();
    sandbox = await startSandbox({ rateLimit: false, credentials: KNOWN });
    useSecretCredentials(secrets, SECRET_ARN);
    Object.assign(process.env, { GATEWAY_BASE_URL: sandbox.url, GATEWAY_RATE_LIMIT: '10000/1000' });
  });
  afterAll(async () => {
    await sandbox.close();
    await secrets.close();
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    sandbox.faults.clear();
  });

  /** listSubscriptions as a caller sends it; the answer and the request id API Gateway gave it. */
  async function listSubscriptions() {
    const event = apiEvent({ ...ROUTES.listSubscriptions, headers: await withToken('listSubscriptions') });
    return {
      answer: await invoke(await handlerOf('listSubscriptions'), event),
      requestId: event.requestContext.requestId,
    };
  }

  it.each([
    [
      'a malformed secret',
      () => secrets.secrets.set(SECRET_ARN, '{"app_id":'),
      503,
      'The payment gateway credentials are unavailable right now; try again later.',
      {
        message: 'the gateway credentials are unavailable',
        secretId: SECRET_ARN,
        problem: 'the secret is not JSON',
      },
    ],
    [
      'credentials the gateway rejects',
      () =>
        secrets.secrets.set(SECRET_ARN, gatewaySecret({ appId: 'app-old', appSecret: 'CANARY-SECRET-old' })),
      502,
      'The payment service is misconfigured; try again later.',
      {
        message: 'the payment gateway rejected the service credentials',
        check: expect.stringContaining('GATEWAY_SECRET_ID'),
      },
    ],
    [
      'a gateway URL that reaches no Merchant API',
      () => {
        secrets.secrets.set(SECRET_ARN, gatewaySecret(KNOWN));
        sandbox.faults.inject('listSubscriptions', {
          kind: 'status',
          status: 404,
          body: 'Not Found',
          contentType: 'text/plain',
        });
      },
      502,
      'The payment service is misconfigured; try again later.',
      { message: 'the payment gateway does not know this operation', check: 'GATEWAY_BASE_URL' },
    ],
  ])(
    '%s: a plain message for the caller, the detail in an error line with its request id',
    async (_, arrange, status, msg, line) => {
      arrange();
      const logs = captureLogs();

      const { answer, requestId } = await listSubscriptions();

      expect(answer.statusCode).toBe(status);
      expect(answer.body.msg).toBe(msg);
      expect(configurationIn(answer.raw)).toEqual([]);
      expect(logs).toContainEqual(expect.objectContaining({ level: 'error', requestId, ...line }));
    },
  );
});
