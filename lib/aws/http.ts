import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { beingWritten } from '../net/outbound.ts';

// Not `import ... from 'node:http'`: ESM's view of a built-in module reads every export, and three
// of node:http's (WebSocket, CloseEvent, MessageEvent) load Node's own copy of undici to answer,
// at a cold start's expense, for nothing. getBuiltinModule gives the module itself.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

/**
 * One POST to an AWS endpoint over Node's own `node:http`/`node:https`, with undici's limits
 * written out: a connect timeout that covers the TLS handshake, a timeout for the answer's
 * headers and the same again between its bytes, and the caller's signal. Node's modules come with
 * the runtime, compiled: both cost a cold start far less to load (most of it TLS) than undici,
 * which only a container that calls PayHere then loads (lib/gateway/transport.ts).
 *
 * Failures keep the socket's own code (`ECONNREFUSED`, `ECONNRESET`, ...) or carry one of ours
 * for the limits (`CONNECT_TIMEOUT`, `HEADERS_TIMEOUT`, `BODY_TIMEOUT`): lib/net/failure.ts reads
 * them, as it reads undici's.
 */

export interface Exchange {
  url: URL;
  headers: Record<string, string>;
  body: string;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  /**
   * Any of them aborting ends the exchange (the caller's and the client's own limit, say): listened
   * to apart rather than joined with AbortSignal.any, whose composite signal (and its first use in
   * a process) was a measurable part of a request's CPU before it left.
   */
  signals: readonly AbortSignal[];
}

export interface Answer {
  status: number;
  text: string;
}

/**
 * Keep-alive agents, one per protocol, whichever client asks: a handshake (TLS to AWS) is paid
 * once, not per client or per request, while the container is busy.
 */
const newAgents = () => ({
  'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }),
});
let agents = newAgents();

/**
 * Idle this long, no request in flight, and the kept-alive sockets are not used again: the container
 * was frozen meanwhile, and the path may have forgotten them unseen (a NAT gateway after 350 s idle,
 * the far end after its own limit). Writing on one loses the request's try, and Node's agent hands
 * the next try the next dead one, so a request could spend every try on them. Past this, the next
 * request's handshake is new; a busy container keeps its sockets.
 */
export const AWS_IDLE_MS = 60_000;
let inFlight = 0;
let lastActivityAt = Date.now();

function agentFor(protocol: 'http:' | 'https:'): InstanceType<typeof http.Agent> {
  const now = Date.now();
  if (inFlight === 0 && now - lastActivityAt > AWS_IDLE_MS) {
    // Nothing in flight on them: the old agents' sockets are all idle, and closed here.
    agents['http:'].destroy();
    agents['https:'].destroy();
    agents = newAgents();
  }
  inFlight++;
  lastActivityAt = now;
  return agents[protocol];
}

/** Sockets that finished connecting once: a keep-alive socket taken again needs no connect timer. */
const connected = new WeakSet<Socket>();

function failure(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/** What an abort ends an exchange with, as Node's own `signal` option does. */
function aborted(reason: unknown): Error {
  return Object.assign(new Error('The operation was aborted', { cause: reason }), {
    name: 'AbortError',
    code: 'ABORT_ERR',
  });
}

export function post(exchange: Exchange): Promise<Answer> {
  const { url, connectTimeoutMs, requestTimeoutMs, signals } = exchange;
  const secure = url.protocol === 'https:';
  const send = secure ? https.request : http.request;
  const abortedAlready = signals.find((signal) => signal.aborted);
  if (abortedAlready) return Promise.reject(aborted(abortedAlready.reason));
  return new Promise<Answer>((resolveAnswer, rejectAnswer) => {
    let timer: NodeJS.Timeout | undefined;
    let response: IncomingMessage | undefined;
    const onAbort = (event: Event) => {
      const error = aborted((event.target as AbortSignal).reason);
      response?.destroy(error);
      request.destroy(error);
    };
    let done = false;
    const settled = () => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener('abort', onAbort);
      if (done) return;
      done = true;
      inFlight--;
      lastActivityAt = Date.now();
    };
    const resolve = (answer: Answer) => {
      settled();
      resolveAnswer(answer);
    };
    const reject = (error: unknown) => {
      settled();
      rejectAnswer(error);
    };
    /** One limit at a time; when it passes, `stream` ends with the failure that names it. */
    const arm = (stream: { destroy(error: Error): void }, ms: number, code: string, message: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => stream.destroy(failure(code, message)), ms);
    };
    let request: ClientRequest;
    try {
      request = send(url, {
        method: 'POST',
        agent: agentFor(secure ? 'https:' : 'http:'),
        headers: { ...exchange.headers, 'content-length': String(Buffer.byteLength(exchange.body)) },
      });
    } catch (error) {
      // Refused before it existed (a header Node will not send): counted out of the agents' use too.
      reject(error);
      return;
    }
    // Listened to once the request exists (onAbort destroys it).
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
    beingWritten(request);
    const waitForAnswer = () =>
      arm(request, requestTimeoutMs, 'HEADERS_TIMEOUT', `no answer within ${requestTimeoutMs} ms`);
    request.on('socket', (socket: Socket) => {
      if (connected.has(socket)) return waitForAnswer();
      arm(request, connectTimeoutMs, 'CONNECT_TIMEOUT', `no connection within ${connectTimeoutMs} ms`);
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        connected.add(socket);
        waitForAnswer();
      });
    });
    request.on('response', (answer: IncomingMessage) => {
      response = answer;
      const chunks: Buffer[] = [];
      const idle = () =>
        arm(answer, requestTimeoutMs, 'BODY_TIMEOUT', `the answer stalled for ${requestTimeoutMs} ms`);
      idle();
      answer.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        idle();
      });
      answer.on('end', () => {
        resolve({ status: answer.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
      answer.on('error', (error) => reject(error));
    });
    request.on('error', (error) => reject(error));
    request.end(exchange.body);
  });
}
