import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Transport, TransportError } from '../../lib/gateway/transport.ts';
import { timersLeftBy } from '../helpers/timers.ts';

/**
 * How large an answer of PayHere's the transport reads (docs/contract.md "Subscription lists"):
 * PayHere's list of every subscription comes whole, about 0.8 KB a subscription, so a merchant with
 * 10,000 of them gets some 8 MB, which the 4 MiB limit before turned into a 502. A gateway answering
 * without end is still cut off.
 */
const MiB = 1024 * 1024;
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    const bytes = Number(new URL(request.url!, 'http://x').searchParams.get('bytes'));
    response.writeHead(200, { 'Content-Type': 'application/json' });
    response.end(`"${'x'.repeat(bytes - 2)}"`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const read = (transport: Transport, bytes: number) =>
  transport.send({ method: 'GET', path: `/list?bytes=${bytes}`, headers: {}, deadline: Date.now() + 20_000 });

describe('the answers the transport reads', () => {
  it('leaves no timer running once the answer is read', async () => {
    // Prepare: the request's limit is what is left of its deadline.
    const transport = new Transport(base, { connectTimeoutMs: 2_000 });
    const deadline = Date.now() + 60_000;

    // Act: a limit is ms whole, so any of the few the send can see.
    const left = await timersLeftBy(
      Array.from({ length: 50 }, (_, ms) => 60_000 - ms),
      () => transport.send({ method: 'GET', path: '/list?bytes=10', headers: {}, deadline }),
    );

    // Assess: a limit left running fires in some later request's time.
    expect(left).toEqual([]);
    await transport.close();
  });

  it('reads a subscription list of 10,000 (8 MB), over the 4 MiB it stopped at before', async () => {
    const transport = new Transport(base, { connectTimeoutMs: 2_000 });

    const answer = await read(transport, 8 * 1_000_000);

    expect(answer.status).toBe(200);
    expect(answer.body).toHaveLength(8 * 1_000_000);
    expect(8 * 1_000_000).toBeGreaterThan(4 * MiB);
    await transport.close();
  });

  it('abandons an answer over 16 MiB, as a failure that may have reached PayHere', async () => {
    const transport = new Transport(base, { connectTimeoutMs: 2_000 });

    const failure = await read(transport, 16 * MiB + 1).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(TransportError);
    expect(failure).toMatchObject({ kind: 'protocol', reach: 'lost' });
    await transport.close();
  });
});
