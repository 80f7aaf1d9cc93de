/**
 * The service beside a naive intermediary (bench/naive/handler.ts), the merchant reading an order's
 * payments, over the network as production has it (bench/network.ts): what a cold container's
 * first answer costs, a warm one's, whether its answer is shared or must come from PayHere, and
 * the first after a freeze, during which PayHere dropped the connections.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { Agent, request as httpsRequest } from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  awsCredentialsFromEnvironment,
  DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '../lib/dynamodb/index.ts';
import { SANDBOX_CREDENTIALS } from '../sandbox/server.ts';
import { ROUTE_SCOPES, tokenFor } from '../tests/helpers/auth.ts';
import { apiEvent } from '../tests/helpers/events.ts';
import { ROUTES } from '../tests/helpers/routes.ts';
import { chargeBody, newOrderId } from '../tests/resilience/fixtures.ts';
import { accessToken, apiClient } from '../tests/sandbox/helpers.ts';
import { OUT, ROOT } from './build.ts';
import type { ColdRequest } from './cold.ts';
import { type BenchEnvironment, startBenchEnvironment } from './environment.ts';
import {
  DEFAULT_MODEL,
  describeModel,
  makeCertificates,
  type NetworkModel,
  startTlsStandIn,
} from './network.ts';
import { median, percentile, round } from './stats.ts';

const run = promisify(execFile);
const CHILD = path.join(ROOT, 'bench', 'cold-child.ts');

/** Budgets of issue 38, each ratio on the median of the per-pair ratios. */
export const FIRST_ANSWER_BUDGET = {
  /** Import and first request, over the naive's. */
  importAndFirstRatio: 0.5,
  /** A warm read that reaches PayHere: at most one DynamoDB round trip and PayHere's request, plus this. */
  warmMissSlackMs: 5,
  warmMissRatio: 0.55,
  /** The first request after a freeze, in every pair: connections it opens, requests lost on dropped ones. */
  afterFreezeConnections: 1,
  afterFreezeFailedCalls: 0,
  /** Pairs a run needs for its ratios to be judged. */
  pairs: 15,
};

/**
 * One request as the child saw it, with what PayHere's stand-in counted for it, and when the
 * connection to PayHere it opened (for the first request, the import's too) was ready, in ms from
 * the handler's start (negative: before it).
 */
export type MeasuredRequest = ColdRequest & {
  standIn: { connections: number; failedCalls: number };
  payhereReadyMs?: number;
};

export interface FirstAnswerSample {
  importMs: number;
  /** The cold container's first request: an order nobody has read, the shared token in the table. */
  first: MeasuredRequest;
  /** Warm: orders nobody has read (every request to PayHere) ... */
  misses: MeasuredRequest[];
  /** ... and the same orders again, their answers shared. */
  shared: MeasuredRequest[];
  /** After a freeze during which PayHere dropped every connection: an order nobody has read. */
  afterFreeze: MeasuredRequest;
}

/**
 * What a round trip to each stand-in takes on this machine, beside the model's nominal figures:
 * a DynamoDB round (a GetItem and two conditional UpdateItems together, as a warm read sends them)
 * and PayHere's search over a kept-alive connection, from the bench's own process, medians. A warm request's budget counts these, not the nominal ones, so that
 * the stand-ins' own work (dynalite's, the sandbox's, TLS and the stand-in's hop) is not held
 * against the service.
 */
export interface RoundTrips {
  dynamodbMs: number;
  payhereMs: number;
}

/** What measureFirstAnswer measured: the pairs, and the stand-ins' round trips. */
export interface FirstAnswerMeasurement {
  pairs: readonly FirstAnswerPair[];
  roundTrips: RoundTrips;
}

/** One fresh process of each, run back to back; `naiveFirst` says which went first. */
export interface FirstAnswerPair {
  service: FirstAnswerSample;
  naive: FirstAnswerSample;
  naiveFirst: boolean;
}

/** The requests each process answers, in order: index of the one after the freeze. */
const FREEZE_INDEX = 5;

/**
 * `pairs` pairs of fresh processes, the service's and the naive's back to back, which goes first
 * alternating. Each imports its bundle and answers six requests: a new order (cold), twice a new
 * order followed by the same order again (warm), then, after a freeze, a new order. Orders are
 * paid in the sandbox before PayHere is moved away; an unmeasured process of the service first
 * leaves the shared access token in the table, as the deployment's other containers would have.
 */
export async function measureFirstAnswer(
  bundles: { service: string; naive: string },
  pairs: number,
  model: NetworkModel = DEFAULT_MODEL,
  serviceEnv: Record<string, string> = {},
): Promise<FirstAnswerMeasurement> {
  const environment = await startBenchEnvironment({
    payhereDelayMs: model.payhereRttMs + model.payhereWorkMs,
    dynamodbDelayMs: model.dynamodbRttMs,
  });
  const certificates = await makeCertificates();
  const standIn = await startTlsStandIn({ target: environment.sandbox.port, model, tls: certificates });
  try {
    const api = apiClient(environment.sandbox, await accessToken(environment.sandbox));
    const authorization = `Bearer ${await tokenFor(`${ROUTE_SCOPES.retrievePayments} merchant`)}`;
    const orders: string[][] = [];
    for (let process = 0; process < 2 * pairs + 1; process++) {
      const four = [newOrderId(), newOrderId(), newOrderId(), newOrderId()];
      for (const order of four) await api.post('payment/charge', chargeBody(order));
      orders.push(four);
    }
    environment.distant();
    const env = {
      ...process.env,
      ...environment.env,
      GATEWAY_BASE_URL: standIn.url,
      // How production trusts PayHere's certificate authority: Node's store, this one added.
      NODE_EXTRA_CA_CERTS: certificates.caFile,
      BENCH_STAND_IN_CONTROL: standIn.controlUrl,
      BENCH_FREEZE: `${FREEZE_INDEX}:${model.freezeMs}`,
      // PayHere's 20 slots, as deployed (the other sections' 200 make a budget item the local
      // DynamoDB writes more slowly), on a window short enough that no call here waits for one.
      GATEWAY_RATE_LIMIT: '20/100',
      NAIVE_PAYHERE_URL: standIn.url,
      NAIVE_APP_ID: SANDBOX_CREDENTIALS.appId,
      NAIVE_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
    };
    const sample = async (side: 'service' | 'naive'): Promise<FirstAnswerSample> => {
      const [a, b, c, d] = orders.pop()!;
      const files: string[] = [];
      for (const [index, order] of [a, b, b, c, c, d].entries()) {
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
      const { importMs, requests, importStarted, handlersStarted, payhereConnections } = JSON.parse(
        stdout.trim().split('\n').at(-1)!,
      ) as {
        importMs: number;
        requests: MeasuredRequest[];
        importStarted: number;
        handlersStarted: number[];
        payhereConnections: Array<[number, number]>;
      };
      for (const [index, request] of requests.entries()) {
        const from = index === 0 ? importStarted : handlersStarted[index]!;
        const until = handlersStarted[index + 1] ?? Number.POSITIVE_INFINITY;
        const opened = payhereConnections.find(([made]) => made >= from && made < until);
        if (opened) request.payhereReadyMs = opened[1] - handlersStarted[index]!;
      }
      const statuses = requests.map((request) => request.statusCode);
      // The naive intermediary may fail after the freeze (a request on a dropped connection): shown, not thrown.
      const failed = statuses.filter(
        (status, index) => status !== 200 && !(side === 'naive' && index === FREEZE_INDEX),
      );
      if (failed.length > 0) throw new Error(`${side} answered ${statuses.join(', ')}`);
      const [first, missB, sharedB, missC, sharedC, afterFreeze] = requests as [
        MeasuredRequest,
        ...MeasuredRequest[],
      ];
      return {
        importMs,
        first,
        misses: [missB!, missC!],
        shared: [sharedB!, sharedC!],
        afterFreeze: afterFreeze!,
      };
    };
    await sample('service');
    const measured: FirstAnswerPair[] = [];
    for (let pair = 0; pair < pairs; pair++) {
      const naiveFirst = pair % 2 === 1;
      const firstSide = naiveFirst ? 'naive' : 'service';
      const one = await sample(firstSide);
      const other = await sample(naiveFirst ? 'service' : 'naive');
      measured.push(
        naiveFirst ? { service: other, naive: one, naiveFirst } : { service: one, naive: other, naiveFirst },
      );
    }
    const token = await accessToken(environment.sandbox);
    const roundTrips = await measureRoundTrips(environment, standIn.url, certificates.caFile, token);
    return { pairs: measured, roundTrips };
  } finally {
    await Promise.allSettled([standIn.close(), environment.close()]);
  }
}

const ROUND_TRIPS = 15;

async function measureRoundTrips(
  environment: BenchEnvironment,
  payhereUrl: string,
  caFile: string,
  token: string,
): Promise<RoundTrips> {
  const dynamodb = new DynamoDBClient({
    endpoint: environment.dynamodb.endpoint,
    region: 'ap-south-1',
    credentials: () => awsCredentialsFromEnvironment(environment.env),
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: await readFile(caFile) });
  const search = () =>
    new Promise<void>((resolve, reject) => {
      httpsRequest(
        `${payhereUrl}/merchant/v1/payment/search?order_id=${newOrderId()}`,
        { agent, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } },
        (response) => {
          response.resume();
          response.on('end', resolve);
        },
      )
        .on('error', reject)
        .end();
    });
  const timed = async (work: () => Promise<unknown>) => {
    const started = performance.now();
    await work();
    return performance.now() - started;
  };
  try {
    // The connection and the table's first request, not timed.
    await search();
    const table = environment.env.STATE_TABLE!;
    // A round as a warm read sends it: a lookup and two conditional writes (its caller's share and
    // its slot of the budget) together, on items of the bench's own.
    const count = (pk: string) =>
      dynamodb.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: { S: pk } },
          UpdateExpression: 'ADD #n :one',
          ConditionExpression: 'attribute_not_exists(#n) OR #n < :most',
          ExpressionAttributeNames: { '#n': 'n' },
          ExpressionAttributeValues: { ':one': { N: '1' }, ':most': { N: '1000000' } },
        }),
      );
    const get = () =>
      Promise.all([
        dynamodb.send(
          new GetItemCommand({
            TableName: table,
            Key: { pk: { S: 'bench#round#lookup' } },
            ConsistentRead: true,
          }),
        ),
        count('bench#round#share'),
        count('bench#round#slot'),
      ]);
    await get();
    const dynamodbMs: number[] = [];
    const payhereMs: number[] = [];
    for (let i = 0; i < ROUND_TRIPS; i++) {
      dynamodbMs.push(await timed(get));
      payhereMs.push(await timed(search));
    }
    return { dynamodbMs: median(dynamodbMs), payhereMs: median(payhereMs) };
  } finally {
    agent.destroy();
  }
}

/** What the table shows of one process. */
export interface FirstAnswerFigures {
  importMs: number;
  firstMs: number;
  importAndFirstMs: number;
  warmSharedMs: number;
  warmMissMs: number;
  afterFreezeMs: number;
}

export const FIGURES: ReadonlyArray<[keyof FirstAnswerFigures, string]> = [
  ['importMs', 'import'],
  ['firstMs', 'first request'],
  ['importAndFirstMs', 'import and first request'],
  ['warmSharedMs', 'warm, shared answer'],
  ['warmMissMs', 'warm, every request to PayHere'],
  ['afterFreezeMs', 'after a freeze'],
];

const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;

export function figuresOf(sample: FirstAnswerSample): FirstAnswerFigures {
  return {
    importMs: sample.importMs,
    firstMs: sample.first.ms,
    importAndFirstMs: sample.importMs + sample.first.ms,
    warmSharedMs: mean(sample.shared.map((request) => request.ms)),
    warmMissMs: mean(sample.misses.map((request) => request.ms)),
    afterFreezeMs: sample.afterFreeze.ms,
  };
}

/** The naive intermediary answered its request after the freeze (else it failed: a request on a dropped connection). */
const naiveAnsweredAfterFreeze = (pair: FirstAnswerPair) => pair.naive.afterFreeze.statusCode === 200;

/**
 * Median and quartiles of each pair's ratio, the service's figure over the naive's; after the
 * freeze, over the pairs whose naive process answered (NaN if none did).
 */
export function pairRatios(
  pairs: readonly FirstAnswerPair[],
  key: keyof FirstAnswerFigures,
): { median: number; p25: number; p75: number; pairs: number } {
  const judged = key === 'afterFreezeMs' ? pairs.filter(naiveAnsweredAfterFreeze) : pairs;
  const ratios = judged.map((pair) => figuresOf(pair.service)[key] / figuresOf(pair.naive)[key]);
  return {
    median: median(ratios),
    p25: percentile(ratios, 25),
    p75: percentile(ratios, 75),
    pairs: judged.length,
  };
}

/**
 * When the request's PayHere search left, and how long after PayHere's last answer the handler
 * answered, in ms since the handler was called (the child's undici channel: the service's only).
 */
export function payhereCallTimes(request: ColdRequest): { left: number; after: number } | undefined {
  const calls = request.sent.timeline.payhere;
  if (calls.length === 0) return undefined;
  const left = Math.max(...calls.map(([at]) => at));
  const answered = Math.max(...calls.map(([, at]) => at));
  return { left, after: request.ms - answered };
}

/** The section's lines, and the budgets it missed. */
export function firstAnswerSection(
  { pairs, roundTrips }: FirstAnswerMeasurement,
  model: NetworkModel = DEFAULT_MODEL,
): { lines: string[]; failures: string[] } {
  const B = FIRST_ANSWER_BUDGET;
  const ms = (value: number) => `${round(value)} ms`;
  const medians = (side: 'service' | 'naive') =>
    FIGURES.map(([key]) => median(pairs.map((pair) => figuresOf(pair[side])[key])));
  const ratios = new Map(FIGURES.map(([key]) => [key, pairRatios(pairs, key)]));
  const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const warmMissLimit = round(roundTrips.dynamodbMs + roundTrips.payhereMs + B.warmMissSlackMs);
  const serviceWarmMiss = median(pairs.map((pair) => figuresOf(pair.service).warmMissMs));
  const most = (side: 'service' | 'naive', of: (sample: FirstAnswerSample) => number) =>
    Math.max(...pairs.map((pair) => of(pair[side])));
  const connections = (side: 'service' | 'naive') => ({
    first: most(side, (sample) => sample.first.standIn.connections),
    warm: most(side, (sample) =>
      Math.max(...[...sample.misses, ...sample.shared].map((request) => request.standIn.connections)),
    ),
    afterFreeze: most(side, (sample) => sample.afterFreeze.standIn.connections),
    failed: most(side, (sample) => sample.afterFreeze.standIn.failedCalls),
  });
  const ours = connections('service');
  const theirs = connections('naive');
  const naiveFailedAfterFreeze = pairs.filter((pair) => !naiveAnsweredAfterFreeze(pair)).length;
  const naiveFreezeStatuses = [...new Set(pairs.map((pair) => pair.naive.afterFreeze.statusCode))].join(', ');
  const callTimes = (of: (sample: FirstAnswerSample) => MeasuredRequest[]) => {
    const requests = pairs.flatMap((pair) => of(pair.service));
    const times = requests.map(payhereCallTimes).filter((t) => t !== undefined);
    const ready = requests.flatMap((request) =>
      request.payhereReadyMs === undefined ? [] : [request.payhereReadyMs],
    );
    const connection = ready.length > 0 ? ` (its new connection ready at ${ms(median(ready))})` : '';
    return `${ms(median(times.map((t) => t.left)))}${connection}, answered ${ms(median(times.map((t) => t.after)))} after PayHere`;
  };
  const lines = [
    "## A cold container's first answer, beside a naive intermediary",
    '',
    `The network modelled: ${describeModel(model)}.`,
    '',
    `The merchant reading an order's payments (retrievePayments). The naive intermediary (bench/naive/handler.ts) is what public PayHere intermediaries do, the usual Node way: Express behind serverless-http, axios, a new access token for every request; bundled and minified as the functions are. ${pairs.length} pairs of fresh \`node\` processes, one of the service and one of the naive intermediary back to back, which goes first alternating; each imports its bundle and answers a new order (cold; the shared token in the table, as another container left it), twice a new order (warm, every request to PayHere) and that order again (warm, its answer shared), then freezes ${model.freezeMs} ms while PayHere drops its connections, and answers a new order. Each pair's ratio is the service's figure over the naive's in that pair; the table shows each side's median and the median of the pairs' ratios, with their quartiles.`,
    `The stand-ins' round trips as measured here, from the bench's process with nothing else in flight, medians of ${ROUND_TRIPS}: a DynamoDB round, a GetItem and two conditional UpdateItems sent together as a warm read sends its lookup, share and slot, ${ms(roundTrips.dynamodbMs)} (modelled ${model.dynamodbRttMs} ms), PayHere's search over a kept-alive connection ${ms(roundTrips.payhereMs)} (modelled ${model.payhereRttMs + model.payhereWorkMs} ms).`,
    `Budgets: import and first request at most ${B.importAndFirstRatio} of the naive's; a warm request that reaches PayHere at most one DynamoDB round trip and PayHere's request, as measured here, plus ${B.warmMissSlackMs} ms (${warmMissLimit} ms, the service's median) and at most ${B.warmMissRatio} of the naive's; the first request after a freeze, in every pair, at most ${B.afterFreezeConnections} new connection (one handshake) and ${B.afterFreezeFailedCalls} requests lost on a dropped connection; the ratios judged on at least ${B.pairs} pairs.`,
    '',
    row(['', ...FIGURES.map(([, label]) => label)]),
    row(['---', ...FIGURES.map(() => '---')]),
    row(['this service, median', ...medians('service').map(ms)]),
    row([
      'the naive intermediary, median',
      ...medians('naive').map((value, index) =>
        FIGURES[index]![0] === 'afterFreezeMs' && naiveFailedAfterFreeze > 0
          ? `${ms(value)}, failed in ${naiveFailedAfterFreeze} of ${pairs.length}`
          : ms(value),
      ),
    ]),
    row([
      'per-pair ratio, median (quartiles)',
      ...FIGURES.map(([key]) => {
        const ratio = ratios.get(key)!;
        if (ratio.pairs === 0) return 'none: the naive intermediary failed in every pair';
        const over = ratio.pairs < pairs.length ? `, over the ${ratio.pairs} pairs it answered` : '';
        return `${round(ratio.median, 2)} (${round(ratio.p25, 2)}–${round(ratio.p75, 2)}${over})`;
      }),
    ]),
    '',
    `Connections PayHere's stand-in accepted (each one a handshake), most in any process, service / naive: first request (the import's included) ${ours.first} / ${theirs.first}, any warm request ${ours.warm} / ${theirs.warm}, first request after the freeze ${ours.afterFreeze} / ${theirs.afterFreeze}. Requests sent on a connection PayHere had dropped, after the freeze, most: ${ours.failed} / ${theirs.failed}; the naive intermediary answered ${naiveFreezeStatuses} after the freeze.`,
    `The service's PayHere call left, median from the handler's start: first request ${callTimes((sample) => [sample.first])}; warm ${callTimes((sample) => sample.misses)}; after the freeze ${callTimes((sample) => [sample.afterFreeze])}.`,
    '',
  ];
  const failures: string[] = [];
  const judged = (label: string, key: keyof FirstAnswerFigures, budget: number) => {
    const ratio = ratios.get(key)!.median;
    if (ratio > budget)
      failures.push(
        `first answer: ${label} at ${round(ratio, 2)} of the naive's, median of the pairs (budget ${budget})`,
      );
  };
  if (pairs.length < B.pairs)
    failures.push(`first answer: ${pairs.length} pairs, too few to judge the ratios (at least ${B.pairs})`);
  judged('import and first request', 'importAndFirstMs', B.importAndFirstRatio);
  judged('a warm request that reaches PayHere', 'warmMissMs', B.warmMissRatio);
  if (serviceWarmMiss > warmMissLimit)
    failures.push(
      `first answer: a warm request that reaches PayHere took ${ms(serviceWarmMiss)} (budget ${warmMissLimit} ms)`,
    );
  if (ours.afterFreeze > B.afterFreezeConnections)
    failures.push(
      `first answer: the first request after a freeze opened ${ours.afterFreeze} connections (budget ${B.afterFreezeConnections})`,
    );
  if (ours.failed > B.afterFreezeFailedCalls)
    failures.push(
      `first answer: the first request after a freeze sent ${ours.failed} requests on a dropped connection (budget ${B.afterFreezeFailedCalls})`,
    );
  return { lines, failures };
}
