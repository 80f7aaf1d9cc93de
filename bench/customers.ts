/**
 * Customers' reads against PayHere's real budget (docs/budget.md "Reads that scale", measured):
 * many customers of the app, each reading its own order and its own subscription through the
 * packaged read functions, paced over a few seconds, while the sandbox logs every call that
 * reaches PayHere. tests/reads/customers.test.ts checks the same behaviour on the source; this
 * puts figures on it, with the bundles as deployed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { DynamoDBClient } from '../lib/dynamodb/index.ts';
import { LedgerStore } from '../lib/ledger/store.ts';
import { inBatches } from '../tests/helpers/batches.ts';
import { apiEvent } from '../tests/helpers/events.ts';
import { type PayingCustomer, payingCustomer } from '../tests/helpers/orders.ts';
import { type GatewayRouteName, ROUTES } from '../tests/helpers/routes.ts';
import { busiestWindow } from '../tests/helpers/windows.ts';
import { freshBudget, PAYHERE_LIMIT } from './budget.ts';
import { ROOT } from './build.ts';
import type { ReadAnswer, ReadPlan } from './customers-child.ts';
import type { BenchEnvironment } from './environment.ts';
import { median, percentile, round } from './stats.ts';

/** What the app reads when a customer opens it: its order, its subscriptions, its subscription. */
const READ_ROUTES = ['retrievePayments', 'listSubscriptions', 'getSubscription'] as const;
type ReadRoute = (typeof READ_ROUTES)[number];

/** Fields only the merchant's view of PayHere's answers holds. */
const MERCHANT_ONLY = ['amount_detail', 'md5sig'];

/** Set-up work in flight at once: the sandbox and dynalite share the bench process. */
const SET_UP_CONCURRENCY = 10;

/** Time for every container's timers to be set before the first request is due. */
const START_LEAD_MS = 300;

export interface CustomerReadOptions {
  customers: number;
  reads: number;
  /** The reads are due evenly over this long. */
  spreadMs: number;
  /** Each Lambda's remaining time when invoked: the deployed timeout. */
  remainingMs: number;
}

type Customer = PayingCustomer;

interface Request {
  customer: Customer;
  route: ReadRoute;
  offsetMs: number;
}

type Answered = ReadAnswer & { request: Request };

export interface CustomerReadRun {
  label: string;
  /** Customers' orders holding a ledger copy of PayHere's answer when the reads began. */
  copiesBefore: number;
  answers: number;
  statuses: Record<string, number>;
  byRoute: Record<string, Record<string, number>>;
  /** Requests PayHere received, by endpoint (token requests among them), and the most in any window. */
  payhereCalls: number;
  byEndpoint: Record<string, number>;
  busiestWindow: number;
  /** From the first request's due time to the last answer. */
  durationMs: number;
  ok: number;
  withAge: number;
  answerMs: number[];
  okAnswerMs: number[];
  /** 2xx answers showing exactly the customer's own order or subscription. */
  own: number;
  /** Answers showing anything not the customer's: another order or subscription, a merchant-only field. */
  leaks: number;
  /** PayHere's arrivals in each window from the first request's due time on. */
  perWindow: number[];
  /** How long after it was due each request started (the containers' pacing). */
  lateMs: number[];
}

export interface CustomerReadFigures {
  customers: number;
  setUpMs: number;
  runs: CustomerReadRun[];
}

/**
 * `customers` customers, each with its own paid order and its own subscription, read `reads` times
 * over `spreadMs` (request k by customer k mod `customers`, taking turns over the three read
 * routes), twice: (i) cold, no order read before; (ii) warm, after every customer read its order
 * once, which left PayHere's answer on the order's ledger item. Each case has a fresh budget of
 * PayHere's size (and with it an empty state table: nothing shared) and fresh warm containers, one
 * per function, each its packaged bundle in a process of its own.
 */
export async function measureCustomerReads(
  environment: BenchEnvironment,
  bundles: ReadonlyArray<{ route: GatewayRouteName; bundle: string }>,
  options: CustomerReadOptions,
): Promise<CustomerReadFigures> {
  const bundleOf = (route: ReadRoute) => {
    const found = bundles.find((b) => b.route === route);
    if (!found) throw new Error(`no bundle given for ${route}`);
    return found.bundle;
  };
  const ledger = ledgerOf(environment.env);
  const setUpStarted = Date.now();
  const customers = await inBatches(
    Array.from({ length: options.customers }, (_, i) => i),
    SET_UP_CONCURRENCY,
    (i) => payingCustomer(environment.sandbox, ledger, i, 'bench-c'),
  );
  environment.sandbox.clearDeliveries();
  const setUpMs = Date.now() - setUpStarted;

  const requests: Request[] = Array.from({ length: options.reads }, (_, k) => ({
    customer: customers[k % customers.length]!,
    // With a number of customers that is not a multiple of 3 (100), each customer reads all three.
    route: READ_ROUTES[k % READ_ROUTES.length]!,
    offsetMs: (k * options.spreadMs) / options.reads,
  }));
  const run = async (label: string) => {
    const copiesBefore = await copiesOf(ledger, customers);
    const env = await freshBudget(environment);
    const { answers, startAt } = await readAll(environment, bundleOf, env, requests, options.remainingMs);
    return figuresOf(label, environment, answers, startAt, copiesBefore);
  };

  const cold = await run('(i) cold');
  // Earlier visits: each customer reads its own order once, through the packaged function, with the
  // bench's large budget (a state table of its own) standing for the hours between them.
  const earlier = {
    ...(await freshBudget(environment)),
    GATEWAY_RATE_LIMIT: environment.env.GATEWAY_RATE_LIMIT!,
  };
  const visits = customers.map((c, i) => ({
    customer: c,
    route: 'retrievePayments' as const,
    offsetMs: i * 10,
  }));
  const { answers: visited } = await readAll(environment, bundleOf, earlier, visits, options.remainingMs);
  const refused = visited.filter((answer) => answer.status !== 200);
  if (refused.length > 0) throw new Error(`${refused.length} earlier visits were not answered 200`);
  const warm = await run('(ii) warm');
  return { customers: customers.length, setUpMs, runs: [cold, warm] };
}

/**
 * The functions' ledger table, reached from the bench process with the environment's own
 * credentials (lib/ledger/from-environment.ts would read them from this process's environment).
 */
function ledgerOf(env: Record<string, string>): LedgerStore {
  const client = new DynamoDBClient({
    endpoint: env.DYNAMODB_ENDPOINT!,
    region: env.AWS_REGION!,
    credentials: () => ({ accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! }),
  });
  return new LedgerStore({ client, table: env.LEDGER_TABLE! });
}

async function copiesOf(ledger: LedgerStore, customers: readonly Customer[]): Promise<number> {
  const orders = await inBatches([...customers], SET_UP_CONCURRENCY, (c) => ledger.getOrder(c.orderId));
  return orders.filter((order) => order?.paymentsCopy).length;
}

interface Reader {
  process: ChildProcess;
  next(): Promise<{ ready?: true; planned?: number; done?: ReadAnswer[] }>;
  send(line: unknown): void;
}

async function startReader(route: ReadRoute, bundle: string, env: Record<string, string>): Promise<Reader> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bench', 'customers-child.ts'), bundle], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (!line.startsWith('@@')) return;
    const resolve = waiting.shift();
    if (resolve) resolve(line.slice(2));
    else lines.push(line.slice(2));
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`${route} container exited (${code})`))),
  );
  exited.catch(() => {});
  const reader: Reader = {
    process: child,
    async next() {
      const line =
        lines.shift() ?? (await Promise.race([new Promise<string>((r) => waiting.push(r)), exited]));
      return JSON.parse(line);
    },
    send: (line) => child.stdin!.write(`${JSON.stringify(line)}\n`),
  };
  await reader.next();
  return reader;
}

/** Every request, through one container per route, each paced by its container from one start. */
async function readAll(
  environment: BenchEnvironment,
  bundleOf: (route: ReadRoute) => string,
  env: Record<string, string>,
  requests: readonly Request[],
  remainingMs: number,
): Promise<{ answers: Answered[]; startAt: number }> {
  const routes = READ_ROUTES.filter((route) => requests.some((r) => r.route === route));
  const readers = await Promise.all(routes.map((route) => startReader(route, bundleOf(route), env)));
  try {
    const mine = routes.map((route) => requests.filter((r) => r.route === route));
    readers.forEach((reader, i) => {
      const plan: ReadPlan = {
        events: mine[i]!.map((request) => ({ offsetMs: request.offsetMs, event: eventOf(request) })),
        remainingMs,
      };
      reader.send(plan);
    });
    await Promise.all(readers.map((reader) => reader.next()));
    environment.sandbox.resetCounters();
    const startAt = Date.now() + START_LEAD_MS;
    for (const reader of readers) reader.send({ startAt });
    const done = await Promise.all(readers.map(async (reader) => (await reader.next()).done!));
    return {
      answers: done.flatMap((answers, i) =>
        answers.map((answer, j) => ({ ...answer, request: mine[i]![j]! })),
      ),
      startAt,
    };
  } finally {
    for (const reader of readers) reader.process.kill();
  }
}

function eventOf({ customer, route }: Request) {
  const id = route === 'retrievePayments' ? customer.orderId : customer.subscriptionId;
  return apiEvent({
    ...ROUTES[route],
    headers: { Authorization: customer.authorization },
    ...(route === 'listSubscriptions' ? {} : { pathParameters: { id } }),
  });
}

/** The order or subscription ids an answer shows, whatever its status. */
function idsShown(route: ReadRoute, body: string): string[] {
  let data: unknown;
  try {
    data = (JSON.parse(body) as { data?: unknown }).data;
  } catch {
    return [];
  }
  const records = (Array.isArray(data) ? data : data ? [data] : []) as Array<Record<string, unknown>>;
  const field = route === 'retrievePayments' ? 'order_id' : 'subscription_id';
  // An error's data (its code and details) names neither.
  return records.filter((record) => record[field] !== undefined).map((record) => String(record[field]));
}

function figuresOf(
  label: string,
  environment: BenchEnvironment,
  answers: readonly Answered[],
  startAt: number,
  copiesBefore: number,
): CustomerReadRun {
  const arrivals = environment.sandbox.arrivals();
  const statuses: Record<string, number> = {};
  const byRoute: Record<string, Record<string, number>> = {};
  let own = 0;
  let leaks = 0;
  for (const answer of answers) {
    const { route, customer } = answer.request;
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
    byRoute[route] ??= {};
    byRoute[route][answer.status] = (byRoute[route][answer.status] ?? 0) + 1;
    const expected = route === 'retrievePayments' ? customer.orderId : customer.subscriptionId;
    const ids = idsShown(route, answer.body);
    const leaked =
      ids.some((id) => id !== expected) || MERCHANT_ONLY.some((name) => answer.body.includes(`"${name}"`));
    if (leaked) leaks++;
    else if (isOk(answer) && ids.length > 0) own++;
  }
  const byEndpoint: Record<string, number> = {};
  for (const { endpoint } of arrivals) byEndpoint[endpoint] = (byEndpoint[endpoint] ?? 0) + 1;
  const ok = answers.filter(isOk);
  return {
    label,
    copiesBefore,
    answers: answers.length,
    statuses,
    byRoute,
    payhereCalls: arrivals.length,
    byEndpoint,
    busiestWindow: busiestWindow(
      arrivals.map((arrival) => arrival.at),
      PAYHERE_LIMIT.windowMs,
    ),
    durationMs: Math.max(...answers.map((a) => a.answeredAt)) - startAt,
    ok: ok.length,
    withAge: answers.filter((a) => a.age !== undefined).length,
    answerMs: answers.map((a) => a.answeredAt - a.startedAt),
    okAnswerMs: ok.map((a) => a.answeredAt - a.startedAt),
    own,
    leaks,
    perWindow: arrivals.reduce<number[]>((windows, { at }) => {
      const i = Math.max(0, Math.floor((at - startAt) / PAYHERE_LIMIT.windowMs));
      while (windows.length <= i) windows.push(0);
      windows[i]!++;
      return windows;
    }, []),
    lateMs: answers.map((a) => a.startedAt - a.dueAt),
  };
}

const isOk = (answer: ReadAnswer) => answer.status >= 200 && answer.status < 300;
const counts = (record: Record<string, number>) =>
  Object.entries(record)
    .map(([name, n]) => `${name}: ${n}`)
    .join(', ');
const seconds = (ms: number) => `${round(ms / 1000, 1)} s`;

/** The report's section, and the budgets it missed. */
export function customerReadsSection(
  figures: CustomerReadFigures,
  options: CustomerReadOptions,
): { lines: string[]; failures: string[] } {
  const { runs } = figures;
  const failures: string[] = [];
  for (const run of runs) {
    if (run.busiestWindow > PAYHERE_LIMIT.limit)
      failures.push(`customer reads ${run.label}: ${run.busiestWindow} calls reached PayHere in one window`);
    if (run.leaks > 0)
      failures.push(`customer reads ${run.label}: ${run.leaks} answers not the customer's own`);
  }
  const windowS = PAYHERE_LIMIT.windowMs / 1000;
  const row = (what: string, cell: (run: CustomerReadRun) => string) =>
    `| ${what} | ${runs.map(cell).join(' | ')} |`;
  const perSecond = (n: number, run: CustomerReadRun) => round(n / (run.durationMs / 1000), 1);
  const share = (n: number, of: number) => `${n} of ${of} (${round((100 * n) / of, 1)}%)`;
  const lines = [
    "## Customers' reads",
    '',
    `${figures.customers} customers, each with its own order paid through PayHere's checkout (on the ledger as the app's checkout and its notification leave it: a payment, \`succeeded\`) and its own subscription (a recurring checkout, recorded on the ledger as its notification records it), read ${options.reads} times, due evenly over ${options.spreadMs / 1000} s (${round(options.reads / (options.spreadMs / 1000))} a second): request k by customer k mod ${figures.customers}, with its own token, taking turns over its order (retrievePayments), its subscriptions (listSubscriptions) and its subscription (getSubscription). One warm container per function (its packaged bundle imported in a process of its own, which paces its requests itself; no token yet), answering its requests concurrently as the in-process test does (Lambda would run more containers, each one request at a time, sharing the same budget and state table), each Lambda with the deployed ${options.remainingMs / 1000} s; for each case a fresh shared budget of PayHere's size (${PAYHERE_LIMIT.limit} per ${windowS} s) in an empty state table (nothing shared yet), against the sandbox, which logs every arrival. API Gateway's throttle on the read routes (docs/budget.md "PayHere's budget") is not in front of them: every request reaches its function. Setting up the customers took ${seconds(figures.setUpMs)}.`,
    `Two cases: (i) cold, no customer's order read before: no ledger copy; (ii) warm, after every customer read its own order once (an earlier visit through the packaged retrievePayments, the bench's large budget standing for the hours between), which kept PayHere's answer on the order's ledger item.`,
    `Budget: no ${windowS} s window of arrivals holds more than ${PAYHERE_LIMIT.limit}; no answer shows another customer's order or subscription, or a merchant-only field (${MERCHANT_ONLY.map((name) => `\`${name}\``).join(', ')}).`,
    '',
    `| what | ${runs.map((run) => run.label).join(' | ')} |`,
    `|---|${runs.map(() => '---|').join('')}`,
    row(
      'orders with a ledger copy when the reads began',
      (run) => `${run.copiesBefore} of ${figures.customers}`,
    ),
    row(
      'requests reaching PayHere (token requests among them)',
      (run) => `${run.payhereCalls} (${run.byEndpoint.token ?? 0})`,
    ),
    row('by endpoint', (run) => counts(run.byEndpoint) || 'none'),
    row(`most arrivals in any ${windowS} s window`, (run) => String(run.busiestWindow)),
    row(`PayHere calls per ${windowS} s from the first request`, (run) => run.perWindow.join(', ') || 'none'),
    row('answers by status', (run) => counts(run.statuses)),
    ...READ_ROUTES.map((route) => row(route, (run) => counts(run.byRoute[route] ?? {}))),
    row('first request to last answer', (run) => seconds(run.durationMs)),
    row(
      'answers per second',
      (run) => `${perSecond(run.answers, run)} (${perSecond(run.ok, run)} of them 2xx)`,
    ),
    row('answers carrying `Age`', (run) => share(run.withAge, run.answers)),
    row(
      'answer time p50 / p99, all answers',
      (run) => `${round(median(run.answerMs), 1)} / ${round(percentile(run.answerMs, 99), 1)} ms`,
    ),
    row('answer time p50 / p99, 2xx answers', (run) =>
      run.ok === 0
        ? ''
        : `${round(median(run.okAnswerMs), 1)} / ${round(percentile(run.okAnswerMs, 99), 1)} ms`,
    ),
    row("2xx answers showing exactly the customer's own", (run) => `${run.own} of ${run.ok}`),
    row("answers showing anything not the customer's", (run) => String(run.leaks)),
    row(
      'request started after it was due, p50 / max',
      (run) => `${round(median(run.lateMs))} / ${round(Math.max(...run.lateMs))} ms`,
    ),
  ];
  return { lines, failures };
}
