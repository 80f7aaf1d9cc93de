// A notify_url on loopback that records every request it receives and answers as the test says.
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Received {
  method: string;
  path: string;
  contentType: string | undefined;
  /** The raw body, as the wire carried it. */
  body: string;
  /** The form fields; a name sent twice would keep its last value (see `names`). */
  fields: Record<string, string>;
  /** Every field name in the order sent, repeats included. */
  names: string[];
  /** ms since the receiver started. */
  at: number;
}

export interface ReceiverAnswer {
  status?: number;
  body?: string;
  /** Wait this long before answering. */
  delayMs?: number;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startReceiver() {
  const received: Received[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  let answer: ReceiverAnswer = {};
  const started = performance.now();

  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const params = new URLSearchParams(body);
    received.push({
      method: req.method ?? '',
      path: req.url ?? '',
      contentType: req.headers['content-type'],
      body,
      fields: Object.fromEntries(params),
      names: [...params.keys()],
      at: performance.now() - started,
    });
    for (const waiter of waiters.filter((w) => received.length >= w.count)) waiter.resolve();
    const { status = 200, body: reply = 'OK', delayMs = 0 } = answer;
    if (delayMs > 0) await sleep(delayMs);
    res.writeHead(status, { 'content-type': 'text/plain' }).end(reply);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/payhere/notify`,
    port,
    received,
    /** How later requests are answered (default 200 "OK" at once). */
    answerWith(next: ReceiverAnswer): void {
      answer = next;
    },
    /** Resolves once `count` requests in all have arrived. */
    async receivedCount(count: number, timeoutMs = 5_000): Promise<Received[]> {
      if (received.length < count) {
        const arrived = new Promise<void>((resolve) => waiters.push({ count, resolve }));
        const giveUp = new AbortController();
        const timeout = sleep(timeoutMs, undefined, { signal: giveUp.signal }).then(() => {
          throw new Error(`only ${received.length} of ${count} notifications arrived`);
        });
        try {
          await Promise.race([arrived, timeout]);
        } finally {
          giveUp.abort();
        }
      }
      return received.slice(0, count);
    },
    clear(): void {
      received.length = 0;
      answer = {};
    },
    async close(): Promise<void> {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
