/**
 * One cold start, in a fresh `node` process: import a bundle (what Lambda's init does), then,
 * given events, answer them one after the other: the first is the cold container's first request,
 * the second the same route's next request, warm. Each event is read as Lambda's runtime receives
 * one, over the event loop (its runtime client waits for the next invocation on I/O), so that the
 * handler is called after a turn of the loop, as it is deployed, rather than straight from the
 * import's own turn. Prints one JSON line of timings in milliseconds
 * and, per request, what it sent: PayHere calls and token requests (undici's `undici:request:create`
 * channel) and AWS requests by operation, table and key (node:http's `http.client.request.created`
 * on lib/aws/'s requests).
 * With BENCH_STAND_IN_CONTROL (bench/network.ts's PayHere stand-in), each request also counts the
 * connections the stand-in accepted and the requests it reset on a dropped connection, from the
 * import's start for the first. With BENCH_FREEZE=<index>:<ms>, the process freezes before that
 * request as a Lambda does between invocations (no timer, no I/O: the thread blocked) while PayHere
 * drops its connections.
 * Usage: node bench/cold-child.ts <bundle.mjs> [<event.json> [<event.json>]]
 */
import { subscribe } from 'node:diagnostics_channel';
import { readFile } from 'node:fs/promises';
import { type ClientRequest, request as httpRequest } from 'node:http';
import { setTimeout } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const [bundle, ...eventFiles] = process.argv.slice(2);
if (!bundle) throw new Error('usage: cold-child.ts <bundle.mjs> [<event.json> [<event.json>]]');

interface Sent {
  payhere: number;
  tokens: number;
  /** AWS requests: `DynamoDB_20120810.GetItem <table> <pk>`, `secretsmanager.GetSecretValue` to count. */
  aws: Record<string, number>;
  /**
   * When each request to DynamoDB and to PayHere (token requests too) left and its answer was in,
   * in ms since the handler was called: what the answer waited for, in order.
   */
  timeline: { dynamodb: Interval[]; payhere: Interval[] };
}
/** [left, answered] in ms since the handler was called; answered is -1 if it never was. */
type Interval = [number, number];
let handlerStarted = 0;
/** An interval for a request leaving now, closed by calling the function returned. */
function opened(list: Interval[]): () => void {
  const interval: Interval = [performance.now() - handlerStarted, -1];
  list.push(interval);
  return () => {
    if (interval[1] < 0) interval[1] = performance.now() - handlerStarted;
  };
}
const payhereOpen = new WeakMap<object, () => void>();
const sent: Sent[] = [];
const current = () => sent.at(-1);

const payhere = process.env.GATEWAY_BASE_URL ? new URL(process.env.GATEWAY_BASE_URL).origin : undefined;

/**
 * Connections to PayHere's host and port: when each was made and when its handshakes were done
 * (performance.now(), -1 if never), from node:net's channel, whoever made it (undici, the
 * service's early connection, node:https for the naive intermediary).
 */
const payhereConnections: Array<[number, number]> = [];
const payherePort = process.env.GATEWAY_BASE_URL ? Number(new URL(process.env.GATEWAY_BASE_URL).port) : -1;
subscribe('net.client.socket', (message) => {
  const { socket } = message as { socket: import('node:net').Socket };
  const made = performance.now();
  const ready = () => {
    if (socket.remotePort !== payherePort) return;
    payhereConnections.push([made, performance.now()]);
  };
  socket.once(payhere?.startsWith('https:') ? 'secureConnect' : 'connect', ready);
});
subscribe('undici:request:create', (message) => {
  const { request } = message as { request: { origin: string; path: string } };
  const counts = current();
  // Only PayHere's: a candidate client in the bench may send to DynamoDB over undici or fetch.
  if (!counts || String(request.origin) !== payhere) return;
  if (request.path.includes('/oauth/token')) counts.tokens++;
  else counts.payhere++;
  payhereOpen.set(request, opened(counts.timeline.payhere));
});
for (const channel of ['undici:request:trailers', 'undici:request:error']) {
  subscribe(channel, (message) => payhereOpen.get((message as { request: object }).request)?.());
}
/**
 * AWS requests sent but not yet named: their operation and body, named (counts.aws) once the
 * request that sent them is measured, so that parsing their bodies costs the measured answer nothing.
 */
const unnamed: Array<{ counts: Sent; target: string; body: unknown }> = [];
subscribe('http.client.request.created', (message) => {
  const { request } = message as { request: ClientRequest };
  const target = request.getHeader('x-amz-target');
  const counts = current();
  if (!counts || typeof target !== 'string') return;
  if (target.startsWith('DynamoDB_')) request.once('close', opened(counts.timeline.dynamodb));
  // lib/aws/http.ts sends the body in the request's one end(): the table and key are read from it later.
  const end = request.end.bind(request) as (...args: unknown[]) => ClientRequest;
  Object.assign(request, {
    end: (body?: unknown, ...rest: unknown[]) => {
      unnamed.push({ counts, target, body });
      return end(body, ...rest);
    },
  });
});

/** Each AWS request sent so far counted by operation, table and key (counts.aws). */
function nameSent(): void {
  for (const { counts, target, body } of unnamed.splice(0)) {
    let input: { TableName?: string; Key?: { pk?: { S?: string } } } = {};
    try {
      input = JSON.parse(String(body));
    } catch {
      // Not lib/aws/'s one JSON body: counted by its operation alone.
    }
    const name = [target, input.TableName, input.Key?.pk?.S].filter((part) => part !== undefined).join(' ');
    counts.aws[name] = (counts.aws[name] ?? 0) + 1;
  }
}

/**
 * The CPU time this process spent since `since` (user and system, every thread), in ms: on a
 * machine shared with other work, what a library costs shows here with far less noise than in the
 * time that passed, which waits for the CPU as well.
 */
const cpuMs = (since: NodeJS.CpuUsage) => {
  const { user, system } = process.cpuUsage(since);
  return (user + system) / 1000;
};

/** The stand-in's counters (bench/network.ts), over a connection of their own. */
const standIn = process.env.BENCH_STAND_IN_CONTROL;
type StandInCounters = { connections: number; handshakes: number; failedCalls: number };
function control(method: 'GET' | 'POST', path: string): Promise<StandInCounters> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(`${standIn}${path}`, { method, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      response.on('end', () => resolve(JSON.parse(body) as StandInCounters));
    });
    sent.on('error', reject);
    sent.end();
  });
}
const [freezeIndex, freezeMs] = (process.env.BENCH_FREEZE ?? '-1:0').split(':').map(Number) as [
  number,
  number,
];
let counted = standIn ? await control('GET', '/counters') : undefined;

const importCpu = process.cpuUsage();
const importStarted = performance.now();
/** When each handler was called (performance.now()). */
const handlersStarted: number[] = [];
const module = (await import(pathToFileURL(bundle).href)) as {
  handler: (event: unknown, context: unknown) => Promise<{ statusCode: number }>;
};
const importMs = performance.now() - importStarted;
const importCpuMs = cpuMs(importCpu);

const requests: {
  ms: number;
  cpuMs: number;
  statusCode: number;
  sent: Sent;
  /** Connections PayHere's stand-in accepted, and requests it reset, for this request (and the import, for the first). */
  standIn?: { connections: number; failedCalls: number };
}[] = [];
for (const [index, eventFile] of eventFiles.entries()) {
  // Read on the event loop, not synchronously: see the file's comment.
  const event = JSON.parse(await readFile(eventFile, 'utf8'));
  if (index === freezeIndex) {
    await control('POST', '/drop');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, freezeMs);
  }
  const endsAt = Date.now() + 25_000;
  const context = { awsRequestId: 'bench', getRemainingTimeInMillis: () => endsAt - Date.now() };
  const counts: Sent = { payhere: 0, tokens: 0, aws: {}, timeline: { dynamodb: [], payhere: [] } };
  sent.push(counts);
  const handlerCpu = process.cpuUsage();
  handlerStarted = performance.now();
  handlersStarted.push(handlerStarted);
  const { statusCode } = await module.handler(event, context);
  const ms = performance.now() - handlerStarted;
  const handlerCpuMs = cpuMs(handlerCpu);
  // What a request sends after its answer (a budget slot's release) is still its own.
  await setTimeout(100);
  nameSent();
  let standInCounts: { connections: number; failedCalls: number } | undefined;
  if (counted) {
    const now = await control('GET', '/counters');
    standInCounts = {
      connections: now.connections - counted.connections,
      failedCalls: now.failedCalls - counted.failedCalls,
    };
    counted = now;
  }
  requests.push({
    ms,
    cpuMs: handlerCpuMs,
    statusCode,
    sent: counts,
    ...(standInCounts ? { standIn: standInCounts } : {}),
  });
}

// Keep-alive sockets would hold the process open: exit once the line is out.
process.stdout.write(
  `${JSON.stringify({ importMs, importCpuMs, requests, importStarted, handlersStarted, payhereConnections })}\n`,
  () => process.exit(0),
);
