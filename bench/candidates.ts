import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Plugin } from 'esbuild';
import { type BuildChanges, type Built, bundle, FUNCTION_PLUGINS, ROOT } from './build.ts';
import type { ColdSample } from './cold.ts';
import { kib, median, percentile, round } from './stats.ts';

/**
 * The candidates: a library against what the service does without it, each alone in a bundle built
 * as the functions are built, constructed as the functions construct it, in fresh processes (the
 * cold section's, bench/cold.ts). What each decision weighs is a cold container's: the import and
 * the first call, since a library that loads on first use pays there.
 */
export type Decision = 'client' | 'signer' | 'logger' | 'marshalling' | 'transport';
export const DECISIONS: readonly Decision[] = ['client', 'signer', 'logger', 'marshalling', 'transport'];

interface Candidate {
  decision: Decision;
  source: string;
  /** What each of its two requests does; none for an import alone. */
  call?: string;
  changes?: BuildChanges;
}

/**
 * lib/aws/client.ts built with another signer in place of its own (`source`, a module exporting
 * `signRequest` as lib/aws/sign.ts does), the rest of the client as it is.
 */
function withSigner(name: string, source: string): Plugin {
  return {
    name: `signer-${name}`,
    setup(build) {
      build.onLoad({ filter: /[\\/]lib[\\/]aws[\\/]client\.ts$/ }, async (args) => {
        const ours = await readFile(args.path, 'utf8');
        if (ours.split("from './sign.ts'").length !== 2)
          throw new Error(
            "lib/aws/client.ts no longer imports './sign.ts' once: its signer cannot be swapped",
          );
        const contents = ours.replace("from './sign.ts'", "from 'bench-signer'");
        return { contents, loader: 'ts', resolveDir: path.dirname(args.path) };
      });
      build.onResolve({ filter: /^bench-signer$/ }, () => ({ path: name, namespace: 'bench-signer' }));
      build.onLoad({ filter: /.*/, namespace: 'bench-signer' }, () => ({
        contents: source,
        loader: 'ts',
        resolveDir: ROOT,
      }));
    },
  };
}

const GET_ITEM = `const input = {
  TableName: process.env.STATE_TABLE, Key: { pk: { S: 'bench-candidate' } }, ConsistentRead: true,
};`;
/** lib/dynamodb/ as a store uses it: one consistent GetItem per request. */
const OUR_CLIENT = `import { DynamoDBClient, GetItemCommand } from './lib/dynamodb/index.ts';
${GET_ITEM}
const client = new DynamoDBClient({ region: process.env.AWS_REGION, endpoint: process.env.DYNAMODB_ENDPOINT });
export const handler = async () => { await client.send(new GetItemCommand(input)); return { statusCode: 200, body: '' }; };`;

/**
 * The least a request can carry: the date and an Authorization header of the right form with no
 * signature computed (the local DynamoDB checks the form, not the signature). What any signer
 * costs is measured over this.
 */
const UNSIGNED = `export function signRequest(request, scope) {
  const date = scope.now.toISOString().replace(/[-:]/g, '').replace(/\\.\\d{3}/, '');
  const day = date.slice(0, 8);
  return {
    ...request.headers,
    'x-amz-date': date,
    authorization: \`AWS4-HMAC-SHA256 Credential=\${scope.credentials.accessKeyId}/\${day}/\${scope.region}/\${scope.service}/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=\${'0'.repeat(64)}\`,
  };
}`;
/** aws4 (synchronous, over node:crypto), given the request as lib/aws/client.ts sends it. */
const AWS4 = `import aws4 from 'aws4';
export function signRequest(request, scope) {
  const { url } = request;
  const signed = aws4.sign(
    { host: url.host, path: url.pathname + url.search, method: 'POST', headers: { ...request.headers }, body: request.body, service: scope.service, region: scope.region },
    scope.credentials,
  );
  const { Host: _host, ...headers } = signed.headers;
  return headers;
}`;
/**
 * Packages without an `exports` map are resolved by `mainFields`: the functions' build takes their
 * ES modules first (serverless.yml), where esbuild's own choice for Node is CommonJS `main`.
 * @smithy/signature-v4's CommonJS files require @smithy/core's parts whole.
 */
const AS_COMMONJS: BuildChanges = { mainFields: ['main', 'module'] };

export const SIGNER = {
  unsigned: 'lib/dynamodb/, unsigned (the form of a signature, none computed)',
  asBuilt: 'lib/dynamodb/ as the functions build it (@smithy/signature-v4)',
  asCommonJs: "lib/dynamodb/, @smithy/signature-v4's CommonJS files",
  aws4: 'lib/dynamodb/ signed by aws4',
};

/**
 * One log line of the kind the service writes most: the audit line of a refund, with its context.
 * Every logger candidate loads first what every function loads as it is imported, whatever it
 * logs with: its metrics (lib/log/metrics.ts: Powertools Metrics, whose @aws-lambda-powertools/commons
 * Powertools Logger shares), node:crypto (the signer, the idempotency store) and node:async_hooks
 * (each caller's share). What a logger loads besides is its own cost.
 */
const LINE = `import './lib/log/metrics.ts';
import 'node:crypto';
import 'node:async_hooks';
const fields = { route: 'refund', outcome: 'done', replayed: false, httpStatus: 200, orderId: 'Order-1', paymentId: '320025071278', amount: 345.67, currency: 'LKR', email: 'samanperera@gmail.com' };
const context = { requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef', caller: 'client-7', role: 'merchant' };`;
export const LOGGER = {
  bare: 'a redacted JSON line written by hand (redact, JSON.stringify, process.stderr.write)',
  asBuilt: 'lib/log/log.ts as the functions build it',
  powertools: 'Powertools Logger, used as bench/powertools-log.ts would use it in lib/log/log.ts',
};

/** An order as lib/ledger/order-item.ts writes it, every optional attribute set. */
const ORDER = `const order = { pk: 'order#Order-1', orderId: 'Order-1', owner: 'client-7', kind: 'payment', state: 'paid', items: 'Taxi Hire 123', currency: 'LKR', amount: 34567, custom1: 'a', custom2: 'b', customerToken: 'tok', card: '{"mask":"************1292"}', createdAt: 1764000000000, updatedAt: 1764000000000, holdVerified: true };`;
export const MARSHALLING = {
  byHand: "an order's item typed by hand ({ S: ... }, { N: String(...) }) and read back",
  library: "an order's item by @aws-sdk/util-dynamodb's marshall and unmarshall (its ES modules)",
  libraryCommonJs: "an order's item by @aws-sdk/util-dynamodb, its CommonJS files",
};

/** An order written and read back with `@aws-sdk/util-dynamodb` (its ES modules, or its CommonJS). */
const UTIL_DYNAMODB_ROUND_TRIP = `import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
${ORDER}
export let item;
export const handler = async () => {
  item = marshall(order, { removeUndefinedValues: true });
  const back = unmarshall(JSON.parse(JSON.stringify(item)));
  if (back.amount !== order.amount) throw new Error('read back wrong');
  return { statusCode: 200, body: '' };
};`;

export const CANDIDATES: Record<string, Candidate> = {
  'AWS SDK DynamoDB client': {
    decision: 'client',
    call: 'GetItem',
    source: `import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
${GET_ITEM}
const client = new DynamoDBClient({ region: process.env.AWS_REGION, endpoint: process.env.DYNAMODB_ENDPOINT });
export const handler = async () => { await client.send(new GetItemCommand(input)); return { statusCode: 200, body: '' }; };`,
  },
  '@aws-lite/client with @aws-lite/dynamodb': {
    decision: 'client',
    call: 'GetItem',
    source: `import awsLite from '@aws-lite/client';
import dynamodb from '@aws-lite/dynamodb';
const aws = await awsLite({ region: process.env.AWS_REGION, endpoint: process.env.DYNAMODB_ENDPOINT, plugins: [dynamodb], autoloadPlugins: false, awsConfigFile: false, keepAlive: true });
export const handler = async () => {
  await aws.DynamoDB.GetItem({ TableName: process.env.STATE_TABLE, Key: { pk: 'bench-candidate' }, ConsistentRead: true });
  return { statusCode: 200, body: '' };
};`,
  },
  "aws4fetch's signature, sent over Node's fetch": {
    decision: 'client',
    call: 'GetItem',
    source: `import { AwsClient } from 'aws4fetch';
${GET_ITEM}
const aws = new AwsClient({ accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY, region: process.env.AWS_REGION, service: 'dynamodb' });
export const handler = async () => {
  const response = await aws.fetch(process.env.DYNAMODB_ENDPOINT, { method: 'POST', body: JSON.stringify(input), headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.GetItem' } });
  if (!response.ok) throw new Error(await response.text());
  await response.json();
  return { statusCode: 200, body: '' };
};`,
  },
  [SIGNER.asBuilt]: { decision: 'signer', call: 'GetItem', source: OUR_CLIENT },
  [SIGNER.unsigned]: {
    decision: 'signer',
    call: 'GetItem',
    source: OUR_CLIENT,
    changes: { plugins: [withSigner('unsigned', UNSIGNED)] },
  },
  [SIGNER.asCommonJs]: { decision: 'signer', call: 'GetItem', source: OUR_CLIENT, changes: AS_COMMONJS },
  [SIGNER.aws4]: {
    decision: 'signer',
    call: 'GetItem',
    source: OUR_CLIENT,
    changes: { plugins: [withSigner('aws4', AWS4)] },
  },
  [LOGGER.bare]: {
    decision: 'logger',
    call: 'one warn line',
    source: `import { redact, redactText } from './lib/log/redact.ts';
${LINE}
export const handler = async () => {
  const line = JSON.stringify({ level: 'warn', time: new Date().toISOString(), message: redactText('audit'), ...redact({ ...context, ...fields }) });
  process.stderr.write(line + '\\n');
  return { statusCode: 200, body: '' };
};`,
  },
  [LOGGER.asBuilt]: {
    decision: 'logger',
    call: 'one warn line',
    source: `import * as logging from './lib/log/log.ts';
${LINE}
export const handler = async () => {
  logging.setLogContext(context);
  logging.log.warn('audit', fields);
  return { statusCode: 200, body: '' };
};`,
  },
  [LOGGER.powertools]: {
    decision: 'logger',
    call: 'one warn line',
    source: `import * as logging from './bench/powertools-log.ts';
${LINE}
export const handler = async (_event, lambdaContext) => {
  logging.setLambdaContext(lambdaContext);
  logging.setLogContext(context);
  logging.log.warn('audit', fields);
  return { statusCode: 200, body: '' };
};`,
  },
  [MARSHALLING.byHand]: {
    decision: 'marshalling',
    call: 'write and read',
    source: `${ORDER}
const number = (value) => ({ N: String(value) });
export let item;
export const handler = async () => {
  item = { pk: { S: order.pk }, orderId: { S: order.orderId }, owner: { S: order.owner }, kind: { S: order.kind }, state: { S: order.state }, items: { S: order.items }, currency: { S: order.currency }, amount: number(order.amount), custom1: { S: order.custom1 }, custom2: { S: order.custom2 }, customerToken: { S: order.customerToken }, card: { S: order.card }, createdAt: number(order.createdAt), updatedAt: number(order.updatedAt), holdVerified: { BOOL: order.holdVerified } };
  const back = Object.fromEntries(Object.entries(JSON.parse(JSON.stringify(item))).map(([name, value]) => [name, value.S ?? (value.N === undefined ? value.BOOL : Number(value.N))]));
  if (back.amount !== order.amount) throw new Error('read back wrong');
  return { statusCode: 200, body: '' };
};`,
  },
  [MARSHALLING.library]: {
    decision: 'marshalling',
    call: 'write and read',
    source: UTIL_DYNAMODB_ROUND_TRIP,
  },
  [MARSHALLING.libraryCommonJs]: {
    decision: 'marshalling',
    call: 'write and read',
    source: UTIL_DYNAMODB_ROUND_TRIP,
    changes: AS_COMMONJS,
  },
  "undici's main entry (Pool), what a first PayHere call loaded until issue 24": {
    decision: 'transport',
    source: `import { Pool } from 'undici';
export const pool = new Pool('https://sandbox.payhere.lk');
export const handler = async () => ({ statusCode: 200, body: '' });`,
  },
  "undici's Pool module, what a first PayHere call loads (lib/gateway/transport.ts)": {
    decision: 'transport',
    source: `import Pool from 'undici/lib/dispatcher/pool.js';
export const pool = new Pool('https://sandbox.payhere.lk');
export const handler = async () => ({ statusCode: 200, body: '' });`,
    // Trimmed as the functions' bundles are (plugins/esbuild.cjs).
    changes: { plugins: FUNCTION_PLUGINS },
  },
};

/** The candidates of `decisions`, each built alone (with the functions' settings, its changes apart). */
export async function buildCandidates(decisions: readonly Decision[]): Promise<Map<string, Built>> {
  const built = new Map<string, Built>();
  for (const [label, { decision, source, changes }] of Object.entries(CANDIDATES)) {
    if (!decisions.includes(decision)) continue;
    // Each as it comes, unless it says otherwise: not with the functions' plugins.
    built.set(label, await bundle(`candidate-${built.size}`, { source }, { plugins: [], ...changes }));
  }
  return built;
}

/**
 * The budget of each decision, on the difference of the import and first call, median of each
 * fresh process's own difference (processes taken in turns, so the pair shares the machine's
 * moment): a maintained library is used unless it costs more.
 */
export const DECISION_BUDGET_MS = { signer: 5, logger: 3, marshalling: 1 };

export interface DecisionFigure {
  decision: Decision;
  what: string;
  /** Import and first call, the candidate minus its baseline: median of the paired differences. */
  pairedMs: number;
  /** The same in CPU time: what the library itself costs, the machine's other work apart. */
  pairedCpuMs: number;
  /** The candidate's JavaScript minus its baseline's. */
  bytes: number;
  budgetMs?: number;
}

export function candidatesSection(
  cold: ReadonlyMap<string, ColdSample[]>,
  built: ReadonlyMap<string, Built>,
): { lines: string[]; figures: DecisionFigure[] } {
  const lines: string[] = [];
  const say = (line = '') => lines.push(line);
  const importMs = (label: string) => cold.get(label)!.map((s) => s.importMs);
  /** Import and first call, per fresh process: the time that passed, and the CPU time spent. */
  const coldFirst = (label: string) => cold.get(label)!.map((s) => s.importMs + s.first.ms);
  const coldFirstCpu = (label: string) => cold.get(label)!.map((s) => s.importCpuMs + s.first.cpuMs);
  say(
    "The candidates, each alone in a bundle built as the functions are built, constructed as the functions construct them, in the same fresh processes, in turns. The tables' clients answer each of their two requests with one consistent GetItem on the local DynamoDB (loopback, no TLS): the first is what a cold container pays for its first read, the load of anything the client loads on first use included. The loggers write one warn line (the bench runs at LOG_LEVEL=warn); the marshalling candidates write an order's item and read it back. CPU time is the process's own (user and system): on a machine busy with other work, the time that passes also waits for the CPU, and the CPU time shows what a library costs with far less noise.",
  );
  say();
  say(
    '| candidate | JavaScript | import p25 | import median | each call | first call median | second call median | import and first call, median | the same, CPU time |',
  );
  say('|---|---|---|---|---|---|---|---|---|');
  for (const [label, bundle] of built) {
    const samples = cold.get(label)!;
    const { call } = CANDIDATES[label]!;
    const calls = call
      ? `${call} | ${round(median(samples.map((s) => s.first.ms)))} ms | ${round(median(samples.map((s) => s.second.ms)))} ms | ${round(median(coldFirst(label)))} ms | ${round(median(coldFirstCpu(label)))} ms`
      : `| | | | ${round(median(samples.map((s) => s.importCpuMs)))} ms (import)`;
    say(
      `| ${label} | ${kib(bundle.jsBytes)} | ${round(percentile(importMs(label), 25))} ms | ${round(median(importMs(label)))} ms | ${calls} |`,
    );
  }

  const figures: DecisionFigure[] = [];
  const paired = (measure: (label: string) => number[], candidate: string, baseline: string) => {
    const base = measure(baseline);
    return round(median(measure(candidate).map((ms, i) => ms - base[i]!)));
  };
  const weigh = (decision: Decision, what: string, candidate: string, baseline: string) => {
    if (!built.has(candidate) || !built.has(baseline)) return;
    figures.push({
      decision,
      what,
      pairedMs: paired(coldFirst, candidate, baseline),
      pairedCpuMs: paired(coldFirstCpu, candidate, baseline),
      bytes: built.get(candidate)!.jsBytes - built.get(baseline)!.jsBytes,
      ...(decision in DECISION_BUDGET_MS
        ? { budgetMs: DECISION_BUDGET_MS[decision as keyof typeof DECISION_BUDGET_MS] }
        : {}),
    });
  };
  weigh('signer', 'the signer as built, over an unsigned client', SIGNER.asBuilt, SIGNER.unsigned);
  weigh('signer', 'aws4, over an unsigned client', SIGNER.aws4, SIGNER.unsigned);
  weigh('signer', 'the signer as CommonJS, over the signer as built', SIGNER.asCommonJs, SIGNER.asBuilt);
  weigh('logger', 'lib/log/log.ts as built, over a line written by hand', LOGGER.asBuilt, LOGGER.bare);
  weigh('logger', 'Powertools Logger, over lib/log/log.ts as built', LOGGER.powertools, LOGGER.asBuilt);
  weigh(
    'marshalling',
    '@aws-sdk/util-dynamodb (ES modules), over typing by hand',
    MARSHALLING.library,
    MARSHALLING.byHand,
  );
  weigh(
    'marshalling',
    '@aws-sdk/util-dynamodb (CommonJS), over typing by hand',
    MARSHALLING.libraryCommonJs,
    MARSHALLING.byHand,
  );
  if (figures.length > 0) {
    say();
    say(
      "What each decision weighs: a cold container's import and first call, the candidate minus its baseline, the median of each fresh process's own difference (the two taken in turns, so that each pair shares the machine's moment), in time and in CPU time, and the JavaScript it adds. Budgets: a signer at most 5 ms on the first GetItem, the logger at most 3 ms on the first line, marshalling at most 1 ms (no measurable cost).",
    );
    say();
    say(
      '| decision | what | import and first call, paired median | the same, CPU time | JavaScript | budget |',
    );
    say('|---|---|---|---|---|---|');
    for (const figure of figures) {
      say(
        `| ${figure.decision} | ${figure.what} | ${figure.pairedMs} ms | ${figure.pairedCpuMs} ms | ${kib(figure.bytes)} | ${figure.budgetMs === undefined ? '' : `${figure.budgetMs} ms`} |`,
      );
    }
  }
  return { lines, figures };
}
