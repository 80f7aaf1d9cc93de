import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { OUT, ROOT } from './build.ts';
import type { BenchEnvironment, Prepared } from './environment.ts';
import { median, percentile, round } from './stats.ts';

const run = promisify(execFile);
const CHILD = path.join(ROOT, 'bench', 'events-child.ts');

export interface EventsPlan {
  /** The charge's bundle, from the repository's root (the plan names no path of this machine). */
  bundle: string;
  warmUp: number;
  secret: string;
  requests: Array<{ orderId: string; event: Prepared['event'] }>;
}

export interface EventsSamples {
  /** A charge, from the handler's start to its answer. */
  answerMs: number[];
  /** The same charge, from the handler's start to the merchant's receiver holding its event. */
  deliveredMs: number[];
  statusCodes: number[];
}

/**
 * How long a money event takes to reach the merchant's webhook locally: warm charges in a process
 * of their own, the receiver in that process (the relay publishes after the answer, and the
 * deliverer, told by the relay, posts at once where the endpoint is local: lib/webhooks/).
 */
export async function measureEventDelivery(
  chargeBundle: string,
  environment: BenchEnvironment,
  count: number,
  warmUp: number,
): Promise<{ lines: string[]; failures: string[] }> {
  const requests: EventsPlan['requests'] = [];
  for (let i = 0; i < warmUp + count; i++) {
    const { event } = await environment.prepare('charge');
    const orderId = JSON.parse(String((event as { body?: string }).body)).order_id as string;
    requests.push({ orderId, event });
  }
  const plan: EventsPlan = {
    bundle: path.relative(ROOT, chargeBundle),
    warmUp,
    secret: `whsec_${randomBytes(32).toString('base64')}`,
    requests,
  };
  const planFile = path.join(OUT, 'events-charge.json');
  await writeFile(planFile, JSON.stringify(plan));
  let stdout: string;
  try {
    ({ stdout } = await run(process.execPath, [CHILD, planFile], {
      env: { ...process.env, ...environment.env },
      maxBuffer: 64 * 1024 * 1024,
      timeout: 300_000,
    }));
  } finally {
    // The plan holds this run's secret and requests: it is for this run alone.
    await rm(planFile, { force: true });
  }
  const samples = JSON.parse(stdout.trim().split('\n').at(-1)!) as EventsSamples;
  const missing = samples.deliveredMs.filter((ms) => Number.isNaN(ms)).length;
  const delivered = samples.deliveredMs.filter((ms) => !Number.isNaN(ms));
  const after = samples.deliveredMs
    .map((ms, i) => ms - samples.answerMs[i]!)
    .filter((ms) => !Number.isNaN(ms));
  const failures =
    missing > 0 ? [`events: ${missing} of ${count} charges' events never reached the receiver`] : [];
  return {
    failures,
    lines: [
      '## Event delivery',
      '',
      `${count} warm charges (after ${warmUp} to warm up), each followed to the merchant's webhook receiver: the charge's ledger write records its \`order.succeeded\` in the same conditional write; after the answer the relay publishes it to the events table and the deliverer, told by the relay, posts it signed (a local endpoint: deployed, deliverWebhooks posts it within a minute). The receiver runs in the charge's process, on one clock. Reported, not budgeted: what an event costs the money request itself is in "Warm overhead per request" (charge, against its floor).`,
      '',
      '| charge answered, p50 | p90 | event at the receiver, p50 | p90 | after the answer, p50 | p90 | events missing | status |',
      '|---|---|---|---|---|---|---|---|',
      `| ${round(median(samples.answerMs), 2)} ms | ${round(percentile(samples.answerMs, 90), 2)} ms | ${round(median(delivered), 2)} ms | ${round(percentile(delivered, 90), 2)} ms | ${round(median(after), 2)} ms | ${round(percentile(after, 90), 2)} ms | ${missing} | ${[...new Set(samples.statusCodes)].join(', ')} |`,
    ],
  };
}
