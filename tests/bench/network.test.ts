import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { setImmediate as turn } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_MODEL,
  describeModel,
  makeCertificates,
  startTlsStandIn,
  type TlsFiles,
  type TlsStandIn,
} from '../../bench/network.ts';

let files: TlsFiles;
let target: Server;
let standIn: TlsStandIn;
let ca: Buffer;

beforeAll(async () => {
  files = await makeCertificates();
  ca = await readFile(files.caFile);
  target = createHttpServer((req, res) => res.end(`answered ${req.url}`));
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  // No distance: what is counted, not how long it takes.
  standIn = await startTlsStandIn({
    target: (target.address() as AddressInfo).port,
    model: { ...DEFAULT_MODEL, payhereRttMs: 0 },
    tls: files,
  });
});
afterAll(async () => {
  await standIn?.close();
  target?.closeAllConnections();
  await new Promise((resolve) => target?.close(resolve));
});

/** A GET through the stand-in on `agent`: the body, or the error's code. */
function get(agent: Agent, path: string): Promise<string> {
  return new Promise((resolve) => {
    httpsRequest(`${standIn.url}${path}`, { agent }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      response.on('end', () => resolve(body));
    })
      .on('error', (error: NodeJS.ErrnoException) => resolve(`failed: ${error.code}`))
      .end();
  });
}

describe("the bench's PayHere stand-in (bench/network.ts)", () => {
  it('serves TLS with a certificate its certificate authority signed, which nobody else trusts', async () => {
    // Prepare
    const trusting = new Agent({ keepAlive: true, ca });
    const untrusting = new Agent({ keepAlive: false });

    // Act
    const trusted = await get(trusting, '/trusted');
    const refused = await get(untrusting, '/untrusted');

    // Assess
    trusting.destroy();
    expect(trusted).toBe('answered /trusted');
    expect(refused).toMatch(
      /^failed: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)$/,
    );
  });

  it('counts a connection and its handshake once, however many requests it carries', async () => {
    // Prepare
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
    const before = standIn.counters();

    // Act
    await get(agent, '/one');
    await turn();
    await get(agent, '/two');
    const after = standIn.counters();

    // Assess
    agent.destroy();
    expect({
      connections: after.connections - before.connections,
      handshakes: after.handshakes - before.handshakes,
      failedCalls: after.failedCalls - before.failedCalls,
    }).toEqual({ connections: 1, handshakes: 1, failedCalls: 0 });
  });

  it('resets a request sent on a connection it dropped, counts it lost, and counts the next connection', async () => {
    // Prepare: a kept-alive connection, then dropped without a word.
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
    await get(agent, '/before');
    await turn();
    const before = standIn.counters();
    standIn.drop();

    // Act
    const lost = await get(agent, '/lost');
    const next = await get(agent, '/next');
    const after = standIn.counters();

    // Assess
    agent.destroy();
    expect(lost).toBe('failed: ECONNRESET');
    expect(next).toBe('answered /next');
    expect({
      connections: after.connections - before.connections,
      failedCalls: after.failedCalls - before.failedCalls,
    }).toEqual({ connections: 1, failedCalls: 1 });
  });

  it('answers its counters and drops connections over its control port, for the processes measured', async () => {
    // Prepare
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
    await get(agent, '/kept');
    await turn();
    const { failedCalls } = standIn.counters();

    // Act
    await fetch(`${standIn.controlUrl}/drop`, { method: 'POST' });
    const lost = await get(agent, '/lost');
    const counted = (await (await fetch(`${standIn.controlUrl}/counters`)).json()) as { failedCalls: number };

    // Assess
    agent.destroy();
    expect(lost).toBe('failed: ECONNRESET');
    expect(counted.failedCalls).toBe(failedCalls + 1);
  });

  it('says the model it runs', () => {
    expect(describeModel(DEFAULT_MODEL)).toContain('30 ms a round trip');
    expect(describeModel({ ...DEFAULT_MODEL, handshakeRoundTrips: 3 })).toContain('3 round trips');
  });
});
