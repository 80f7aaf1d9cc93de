import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { GatewayRouteName } from '../tests/helpers/routes.ts';
import { OUT, ROOT } from './build.ts';
import type { BenchEnvironment } from './environment.ts';

const run = promisify(execFile);
const CHILD = path.join(ROOT, 'bench', 'cold-child.ts');

export interface ColdTarget {
  label: string;
  bundle: string;
  /**
   * The route whose request the bundle answers first (floors answer it without looking); none for
   * a bundle that reads no event (a candidate).
   */
  route?: GatewayRouteName;
}

/** What one request sent, as the child saw it leave (bench/cold-child.ts). */
export interface RequestSent {
  /** PayHere calls, token requests apart. */
  payhere: number;
  tokens: number;
  /** AWS requests: `DynamoDB_20120810.GetItem <table> <pk>`, `secretsmanager.GetSecretValue`... */
  aws: Record<string, number>;
  /** [left, answered] of each request, in ms since the handler was called (-1: never answered). */
  timeline: { dynamodb: [number, number][]; payhere: [number, number][] };
}

export interface ColdRequest {
  ms: number;
  /** CPU time the process spent answering it (bench/cold-child.ts). */
  cpuMs: number;
  statusCode: number;
  sent: RequestSent;
}

export interface ColdSample {
  importMs: number;
  /** CPU time the process spent importing the bundle. */
  importCpuMs: number;
  /** The cold container's first request, then the same route's next one, warm. */
  first: ColdRequest;
  second: ColdRequest;
}

/**
 * `runs` fresh `node` processes per target, taken in turns so that the machine's drift touches
 * every target alike. Each imports its bundle as Lambda's init does (with source maps enabled, as
 * serverless.yml sets) and answers two prepared requests against the sandbox, the first cold.
 * What the child saw leave for PayHere must be what the sandbox saw arrive, or the run fails.
 */
export async function measureCold(
  targets: readonly ColdTarget[],
  runs: number,
  environment: BenchEnvironment,
): Promise<Map<string, ColdSample[]>> {
  const samples = new Map<string, ColdSample[]>(targets.map((target) => [target.label, []]));
  const eventFiles = [path.join(OUT, 'cold-event.json'), path.join(OUT, 'cold-event-2.json')];
  // An unmeasured first container leaves the shared access token, as the deployment's other
  // containers would have: every measured cold start then finds one.
  for (let round = -1; round < runs; round++) {
    for (const target of round < 0 ? targets.slice(0, 1) : targets) {
      for (const file of eventFiles) {
        const event = target.route === undefined ? {} : (await environment.prepare(target.route)).event;
        await writeFile(file, JSON.stringify(event));
      }
      const before = environment.sandbox.arrivals().length;
      const { stdout } = await run(process.execPath, [CHILD, target.bundle, ...eventFiles], {
        env: { ...process.env, ...environment.env },
        timeout: 60_000,
      });
      const line = stdout.trim().split('\n').at(-1)!;
      const { importMs, importCpuMs, requests } = JSON.parse(line) as {
        importMs: number;
        importCpuMs: number;
        requests: ColdRequest[];
      };
      const arrived = environment.sandbox.arrivals().length - before;
      const left = requests.reduce((sum, request) => sum + request.sent.payhere + request.sent.tokens, 0);
      if (arrived !== left) {
        throw new Error(
          `${target.label}: the sandbox saw ${arrived} PayHere requests, the child sent ${left}`,
        );
      }
      if (round < 0) continue;
      samples.get(target.label)!.push({ importMs, importCpuMs, first: requests[0]!, second: requests[1]! });
    }
  }
  return samples;
}

/** DynamoDB's operations that read, and those that write. */
export const DYNAMODB_READS = ['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems'];
export const DYNAMODB_WRITES = [
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'BatchWriteItem',
  'TransactWriteItems',
];

/** How many of `operations` a request sent to DynamoDB, on `items` (`<table> <pk>`) if given. */
export function dynamodbCount(
  request: ColdRequest,
  operations: readonly string[],
  items?: readonly string[],
): number {
  let count = 0;
  for (const [name, times] of Object.entries(request.sent.aws)) {
    const [target = '', ...item] = name.split(' ');
    const [service, operation = ''] = target.split('.');
    if (service !== 'DynamoDB_20120810' || !operations.includes(operation)) continue;
    if (items && !items.includes(item.join(' '))) continue;
    count += times;
  }
  return count;
}
