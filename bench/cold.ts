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
  /** The route whose request the bundle answers first (floors answer it without looking). */
  route: GatewayRouteName;
}

export interface ColdSample {
  importMs: number;
  firstRequestMs: number;
  statusCode: number;
  /** What reached PayHere during the first request (the sandbox's arrival log), token requests apart. */
  payhereCalls: number;
  tokenCalls: number;
}

/**
 * `runs` fresh `node` processes per target, taken in turns so that the machine's drift touches
 * every target alike. Each imports its bundle as Lambda's init does (with source maps enabled, as
 * serverless.yml sets) and answers one prepared request against the sandbox.
 */
export async function measureCold(
  targets: readonly ColdTarget[],
  runs: number,
  environment: BenchEnvironment,
): Promise<Map<string, ColdSample[]>> {
  const samples = new Map<string, ColdSample[]>(targets.map((target) => [target.label, []]));
  const eventFile = path.join(OUT, 'cold-event.json');
  // An unmeasured first container leaves the shared access token, as the deployment's other
  // containers would have: every measured cold start then finds one.
  for (let round = -1; round < runs; round++) {
    for (const target of round < 0 ? targets.slice(0, 1) : targets) {
      const { event } = await environment.prepare(target.route);
      await writeFile(eventFile, JSON.stringify(event));
      const before = environment.sandbox.arrivals().length;
      const { stdout } = await run(
        process.execPath,
        ['--enable-source-maps', CHILD, target.bundle, eventFile],
        {
          env: { ...process.env, ...environment.env },
          timeout: 60_000,
        },
      );
      const line = stdout.trim().split('\n').at(-1)!;
      const arrived = environment.sandbox.arrivals().slice(before);
      const tokenCalls = arrived.filter((arrival) => arrival.endpoint === 'token').length;
      if (round < 0) continue;
      samples.get(target.label)!.push({
        ...(JSON.parse(line) as Omit<ColdSample, 'payhereCalls' | 'tokenCalls'>),
        payhereCalls: arrived.length - tokenCalls,
        tokenCalls,
      });
    }
  }
  return samples;
}
