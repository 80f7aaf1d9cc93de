import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The merchant's side under `npm start` (docs/operator.md "Webhooks"): a receiver on loopback that
 * checks each delivery's Standard Webhooks signature as any receiver would (the key after `whsec_`,
 * HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, a timestamp within 5 minutes), prints
 * what it received, answers 204 (or 400 to a delivery that does not verify), and lists what it
 * received at GET /received.
 */
export interface ReceivedDelivery {
  id: string;
  type: string;
  verified: boolean;
  receivedAt: string;
  event: unknown;
}

export interface WebhookReceiver {
  url: string;
  secret: string;
  received: ReceivedDelivery[];
  close(): Promise<void>;
}

const TOLERANCE_SECONDS = 300;

/** Whether `headers` carry a valid signature of `body` under `secret`, at `nowSeconds`. */
export function verifyDelivery(
  secret: string,
  body: string,
  headers: http.IncomingHttpHeaders,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export async function startWebhookReceiver(
  options: { port?: number; secret?: string; print?: (line: string) => void } = {},
): Promise<WebhookReceiver> {
  const secret = options.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
  const print = options.print ?? ((line: string) => console.log(line));
  const received: ReceivedDelivery[] = [];
  const server = http.createServer(async (request, response) => {
    if (request.method === 'GET' && request.url === '/received') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(received));
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const verified = verifyDelivery(secret, body, request.headers);
    let event: { id?: string; type?: string; object?: { type?: string; id?: string } } = {};
    try {
      event = JSON.parse(body);
    } catch {
      // shown as received, unverified
    }
    const id = String(request.headers['webhook-id'] ?? '');
    received.push({ id, type: event.type ?? '', verified, receivedAt: new Date().toISOString(), event });
    print(
      `Webhook ${verified ? 'received' : 'REFUSED (signature does not verify)'}: ${event.type ?? '?'} ` +
        `${event.object?.type ?? ''} ${event.object?.id ?? ''} (${id})`,
    );
    response.writeHead(verified ? 204 : 400).end();
  });
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    secret,
    received,
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
