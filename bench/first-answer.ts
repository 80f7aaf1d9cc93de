/**
 * The service beside a naive intermediary (bench/naive/handler.ts), the merchant reading an order's
 * payments, with PayHere and DynamoDB at a fixed distance: what a cold container's first answer
 * costs, and a warm one's, whether its answer is shared or must come from PayHere.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { SANDBOX_CREDENTIALS } from '../sandbox/server.ts';
import { ROUTE_SCOPES, tokenFor } from '../tests/helpers/auth.ts';
import { apiEvent } from '../tests/helpers/events.ts';
import { ROUTES } from '../tests/helpers/routes.ts';
import { chargeBody, newOrderId } from '../tests/resilience/fixtures.ts';
import { accessToken, apiClient } from '../tests/sandbox/helpers.ts';
import { OUT, ROOT } from './build.ts';
import type { ColdRequest } from './cold.ts';
import { startBenchEnvironment } from './environment.ts';
import { median, round } from './stats.ts';

const run = promisify(execFile);
const CHILD = path.join(ROOT, 'bench', 'cold-child.ts');

/** How far PayHere and DynamoDB are: every request to them waits this long for its answer. */
export const DISTANCE = { payhereMs: 100, dynamodbMs: 5 };

/** Budgets of issue 24, against the naive intermediary measured in the same run. */
export const FIRST_ANSWER_BUDGET = {
  /** A first request beyond one DynamoDB and one PayHere round trip. */
  firstRequestSlackMs: 15,
  firstRequestRatio: 0.6,
  warmMissRatio: 0.55,
  importRatio: 0.35,
  /** DynamoDB round trips a warm miss makes before its PayHere call, and after it that its answer waits for. */
  warmMissRoundsBefore: 1,
  warmMissWaitsAfter: 0,
};

export interface FirstAnswerSample {
  importMs: number;
  /** The cold container's first request: an order nobody has read, the shared token in the table. */
  first: ColdRequest;
  /** Warm: orders nobody has read (every request to PayHere) ... */
  misses: ColdRequest[];
  /** ... and the same orders again, their answers shared. */
  shared: ColdRequest[];
}

export type FirstAnswerSamples = Record<'service' | 'naive', FirstAnswerSample[]>;

/**
 * `runs` fresh processes per side, in turns. Each imports its bundle and answers five requests: a
 * new order (cold), then twice a new order followed by the same order again. Orders are paid in
 * the sandbox before PayHere is moved away; an unmeasured process of the service first leaves the
 * shared access token in the table, as the deployment's other containers would have.
 */
export async function measureFirstAnswer(
  bundles: { service: string; naive: string },
  runs: number,
  serviceEnv: Record<string, string> = {},
): Promise<FirstAnswerSamples> {
  const environment = await startBenchEnvironment({
    payhereDelayMs: DISTANCE.payhereMs,
    dynamodbDelayMs: DISTANCE.dynamodbMs,
  });
  try {
    const api = apiClient(environment.sandbox, await accessToken(environment.sandbox));
    const authorization = `Bearer ${await tokenFor(`${ROUTE_SCOPES.retrievePayments} merchant`)}`;
    const orders: string[][] = [];
    for (let process = 0; process < 2 * runs + 1; process++) {
      const three = [newOrderId(), newOrderId(), newOrderId()];
      for (const order of three) await api.post('payment/charge', chargeBody(order));
      orders.push(three);
    }
    environment.distant();
    const env = {
      ...process.env,
      ...environment.env,
      // PayHere's 20 slots, as deployed (the other sections' 200 make a budget item the local
      // DynamoDB writes more slowly), on a window short enough that no call here waits for one.
      GATEWAY_RATE_LIMIT: '20/100',
      NAIVE_PAYHERE_URL: environment.sandbox.url,
      NAIVE_APP_ID: SANDBOX_CREDENTIALS.appId,
      NAIVE_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
    };
    const samples: FirstAnswerSamples = { service: [], naive: [] };
    const sides = ['service', 'naive'] as const;
    for (let round = -1; round < runs; round++) {
      for (const side of round < 0 ? sides.slice(0, 1) : sides) {
        const [a, b, c] = orders.pop()!;
        const files: string[] = [];
        for (const [index, order] of [a, b, b, c, c].entries()) {
          const file = path.join(OUT, `first-answer-event-${index}.json`);
          const event = apiEvent({
            ...ROUTES.retrievePayments,
            headers: { Authorization: authorization },
            pathParameters: { id: order! },
          });
          await writeFile(file, JSON.stringify(event));
          files.push(file);
        }
        const { stdout } = await run(process.execPath, [CHILD, bundles[side], ...files], {
          env: side === 'service' ? { ...env, ...serviceEnv } : env,
          timeout: 60_000,
        });
        const { importMs, requests } = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
          importMs: number;
          requests: ColdRequest[];
        };
        const statuses = requests.map((request) => request.statusCode);
        if (statuses.some((status) => status !== 200))
          throw new Error(`${side} answered ${statuses.join(', ')}`);
        if (round < 0) continue;
        const [first, missB, sharedB, missC, sharedC] = requests as [ColdRequest, ...ColdRequest[]];
        samples[side].push({ importMs, first, misses: [missB!, missC!], shared: [sharedB!, sharedC!] });
      }
    }
    return samples;
  } finally {
    await environment.close();
  }
}

/** The DynamoDB round trips a request made before its first PayHere call (requests in flight together count once). */
export function roundsBeforePayHere(request: ColdRequest): number {
  const firstCall = Math.min(...request.sent.timeline.payhere.map(([left]) => left));
  const before = request.sent.timeline.dynamodb
    .filter(([, answered]) => answered >= 0 && answered <= firstCall)
    .sort((x, y) => x[0] - y[0]);
  let rounds = 0;
  let roundEnds = Number.NEGATIVE_INFINITY;
  for (const [left, answered] of before) {
    if (left >= roundEnds) rounds++;
    roundEnds = left >= roundEnds ? answered : Math.max(roundEnds, answered);
  }
  return rounds;
}

/** DynamoDB requests sent after PayHere's last answer that the handler's answer waited for. */
export function waitsAfterPayHere(request: ColdRequest): number {
  const lastAnswer = Math.max(...request.sent.timeline.payhere.map(([, answered]) => answered));
  return request.sent.timeline.dynamodb.filter(
    ([left, answered]) => left >= lastAnswer && answered >= 0 && answered <= request.ms,
  ).length;
}

export interface FirstAnswerFigures {
  importMs: number;
  firstMs: number;
  importAndFirstMs: number;
  warmSharedMs: number;
  warmMissMs: number;
}

function figures(samples: readonly FirstAnswerSample[]): FirstAnswerFigures {
  return {
    importMs: median(samples.map((sample) => sample.importMs)),
    firstMs: median(samples.map((sample) => sample.first.ms)),
    importAndFirstMs: median(samples.map((sample) => sample.importMs + sample.first.ms)),
    warmSharedMs: median(samples.flatMap((sample) => sample.shared.map((request) => request.ms))),
    warmMissMs: median(samples.flatMap((sample) => sample.misses.map((request) => request.ms))),
  };
}

/** The section's lines, and the budgets it missed. */
export function firstAnswerSection(samples: FirstAnswerSamples): { lines: string[]; failures: string[] } {
  const service = figures(samples.service);
  const naive = figures(samples.naive);
  const ratio = (key: keyof FirstAnswerFigures) => round(service[key] / naive[key], 2);
  const B = FIRST_ANSWER_BUDGET;
  const runs = samples.service.length;
  const firstLimit = DISTANCE.dynamodbMs + DISTANCE.payhereMs + B.firstRequestSlackMs;
  const misses = samples.service.flatMap((sample) => sample.misses);
  const roundsBefore = Math.max(...misses.map(roundsBeforePayHere));
  const waitsAfter = Math.max(...misses.map(waitsAfterPayHere));
  const firstRounds = Math.max(...samples.service.map((sample) => roundsBeforePayHere(sample.first)));
  const firstWaits = Math.max(...samples.service.map((sample) => waitsAfterPayHere(sample.first)));
  const ms = (value: number) => `${round(value)} ms`;
  const lines = [
    "## A cold container's first answer, beside a naive intermediary",
    '',
    `The merchant reading an order's payments (retrievePayments), with every PayHere request answered ${DISTANCE.payhereMs} ms after it arrives and every DynamoDB request ${DISTANCE.dynamodbMs} ms after (the sandbox's latency and the local DynamoDB's delay). The naive intermediary (bench/naive/handler.ts) is what public PayHere intermediaries do, the usual Node way: Express behind serverless-http, axios, a new access token for every request; bundled and minified as the functions are. ${runs} fresh \`node\` processes per side, without \`--enable-source-maps\` as the functions run (lib/log/stack.ts maps a stack when one is read), in turns; each imports its bundle and answers a new order (cold; the shared token in the table, as another container left it), then twice a new order (warm, every request to PayHere) and that order again (warm, its answer shared). Medians.`,
    `Budgets: the service's first request at most one DynamoDB and one PayHere round trip plus ${B.firstRequestSlackMs} ms (${firstLimit} ms), and its import and first request at most ${B.firstRequestRatio} of the naive intermediary's; a warm miss at most ${B.warmMissRatio} of the naive's warm request, with ${B.warmMissRoundsBefore} DynamoDB round trip before its PayHere call (the budget's slot; requests in flight together count once) and ${B.warmMissWaitsAfter} after it that the answer waits for, in every sample; the import at most ${B.importRatio} of the naive's.`,
    '',
    '| | import | first request | import and first request | warm, shared answer | warm, every request to PayHere |',
    '|---|---|---|---|---|---|',
    `| this service | ${ms(service.importMs)} | ${ms(service.firstMs)} | ${ms(service.importAndFirstMs)} | ${ms(service.warmSharedMs)} | ${ms(service.warmMissMs)} |`,
    `| the naive intermediary | ${ms(naive.importMs)} | ${ms(naive.firstMs)} | ${ms(naive.importAndFirstMs)} | ${ms(naive.warmSharedMs)} | ${ms(naive.warmMissMs)} |`,
    `| ratio | ${ratio('importMs')} | ${ratio('firstMs')} | ${ratio('importAndFirstMs')} | ${ratio('warmSharedMs')} | ${ratio('warmMissMs')} |`,
    '',
    `DynamoDB round trips before the PayHere call, most in any sample: first request ${firstRounds}, warm miss ${roundsBefore}. DynamoDB requests after PayHere's answer that the answer waited for, most: first request ${firstWaits}, warm miss ${waitsAfter}.`,
    '',
  ];
  const failures: string[] = [];
  if (service.firstMs > firstLimit)
    failures.push(`first answer: the first request took ${ms(service.firstMs)} (budget ${firstLimit} ms)`);
  if (ratio('importAndFirstMs') > B.firstRequestRatio)
    failures.push(
      `first answer: import and first request at ${ratio('importAndFirstMs')} of the naive's (budget ${B.firstRequestRatio})`,
    );
  if (ratio('warmMissMs') > B.warmMissRatio)
    failures.push(
      `first answer: a warm miss at ${ratio('warmMissMs')} of the naive's warm request (budget ${B.warmMissRatio})`,
    );
  if (ratio('importMs') > B.importRatio)
    failures.push(
      `first answer: the import at ${ratio('importMs')} of the naive's (budget ${B.importRatio})`,
    );
  if (roundsBefore > B.warmMissRoundsBefore)
    failures.push(
      `first answer: a warm miss made ${roundsBefore} DynamoDB round trips before its PayHere call (budget ${B.warmMissRoundsBefore})`,
    );
  if (waitsAfter > B.warmMissWaitsAfter)
    failures.push(
      `first answer: a warm miss's answer waited for ${waitsAfter} DynamoDB requests after PayHere's (budget ${B.warmMissWaitsAfter})`,
    );
  return { lines, failures };
}
