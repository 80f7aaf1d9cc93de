import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_TIMEOUT_MS, postWebhook, webhookPoster } from '../../lib/webhooks/post.ts';
import { timersLeftBy } from '../helpers/timers.ts';

let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume();
    // A receiver that never answers.
    if (request.url!.includes('silent')) return;
    response.writeHead(Number(new URL(request.url!, 'http://x').searchParams.get('status')));
    response.end('ignored');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('an attempt to post a webhook', () => {
  it('delivers on a 2xx, fails on anything else, and leaves no timer running either way', async () => {
    // Act
    const results: unknown[] = [];
    const left = await timersLeftBy([DELIVERY_TIMEOUT_MS], async () => {
      results.push(await postWebhook(`${url}?status=204`, {}, '{}'));
      results.push(await postWebhook(`${url}?status=500`, {}, '{}'));
    });

    // Assess: a deliverer's run posts many; a limit left running fires in a later attempt's time.
    expect(results).toEqual([
      { delivered: true, status: 204 },
      { delivered: false, status: 500, error: 'HTTP 500' },
    ]);
    expect(left).toEqual([]);
  });

  it('calls a receiver that gives no answer in time timed out, which the deliverer acts on', async () => {
    // Act
    const result = await webhookPoster(100)(`${url}?silent`, {}, '{}');

    // Assess
    expect(result).toEqual({ delivered: false, error: 'no answer within 0.1 s', timedOut: true });
  });
});
