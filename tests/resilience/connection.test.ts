import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type CredentialsProvider, loadConfig } from '../../lib/config/config.ts';
import { GatewayError, GatewayUnavailableError } from '../../lib/envelope/errors.ts';
import { createPayHere } from '../../lib/gateway/index.ts';
import { STALE_AFTER_IDLE_MS, Transport } from '../../lib/gateway/transport.ts';
import { SANDBOX_CREDENTIALS, type Sandbox, startSandbox } from '../../sandbox/server.ts';
import { captureLogs } from '../helpers/logs.ts';
import { freePort } from '../helpers/ports.ts';
import { chargeBody } from './fixtures.ts';

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ rateLimit: false });
});
afterAll(async () => {
  await sandbox.close();
});

function configFor(baseUrl: string) {
  return loadConfig({
    GATEWAY_BASE_URL: baseUrl,
    GATEWAY_APP_ID: SANDBOX_CREDENTIALS.appId,
    GATEWAY_APP_SECRET: SANDBOX_CREDENTIALS.appSecret,
  });
}

const soon = () => Date.now() + 5_000;

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('wrong app credentials', () => {
  it('give gateway_error, the configuration named in the log only, after looking the credentials up once more', async () => {
    let lookups = 0;
    let invalidations = 0;
    const credentials: CredentialsProvider = {
      get: async () => {
        lookups++;
        return { ...SANDBOX_CREDENTIALS, appMerchantSecrets: [], appSecret: 'WRONG-SECRET-d41d8cd98f00' };
      },
      invalidate: () => {
        invalidations++;
      },
    };
    const payhere = createPayHere(configFor(sandbox.url), { credentials });
    sandbox.resetCounters();
    const logs = captureLogs();

    const error = await payhere.listSubscriptions(soon()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GatewayError);
    expect((error as Error).message).toBe('The payment service is misconfigured; try again later.');
    expect(logs).toContainEqual(
      expect.objectContaining({ level: 'error', check: expect.stringMatching(/GATEWAY_APP_ID/) }),
    );
    expect(JSON.stringify(logs)).not.toContain('WRONG-SECRET');
    expect({ lookups, invalidations }).toEqual({ lookups: 2, invalidations: 2 });
    expect(sandbox.counters()).toMatchObject({ token: 2, listSubscriptions: 0 });
  });

  it('recover as soon as a fresh lookup returns rotated credentials', async () => {
    let rotated = false;
    const credentials: CredentialsProvider = {
      get: async () => ({
        ...SANDBOX_CREDENTIALS,
        appMerchantSecrets: [],
        ...(rotated ? {} : { appSecret: 'OLD' }),
      }),
      invalidate: () => {
        rotated = true;
      },
    };
    const payhere = createPayHere(configFor(sandbox.url), { credentials });

    const { data } = await payhere.listSubscriptions(soon());

    expect(data.length).toBeGreaterThan(0);
  });
});

describe('an unreachable gateway', () => {
  it('gives gateway_unavailable for a read', async () => {
    const payhere = createPayHere(configFor(`http://127.0.0.1:${await freePort()}`));

    const error = await payhere.paymentsOfOrder('LP8006126139', soon()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GatewayUnavailableError);
  });

  it('gives gateway_unavailable for a charge: nothing was sent, so nothing is unknown', async () => {
    const payhere = createPayHere(configFor(`http://127.0.0.1:${await freePort()}`));

    const error = await payhere.charge(chargeBody() as never, soon()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GatewayUnavailableError);
    expect((error as GatewayUnavailableError).httpStatus).toBe(503);
  });

  it('gives gateway_unavailable for a charge when the gateway went away after the token was issued', async () => {
    const doomed = await startSandbox({ rateLimit: false });
    const payhere = createPayHere(configFor(doomed.url));
    await payhere.listSubscriptions(soon()); // token cached, connection pooled
    await doomed.close();
    await setTimeout(STALE_AFTER_IDLE_MS + 100);

    const error = await payhere.charge(chargeBody() as never, soon()).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(GatewayUnavailableError);
  });
});

describe('keep-alive sockets and money requests', () => {
  it('never puts a money request on a socket that sat idle long enough to be dead, and keeps the new one', async () => {
    let connections = 0;
    const server = createServer((_, res) => res.end('{}'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = new Transport(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
      connectTimeoutMs: 1_000,
    });
    const send = (unsafeToRepeat: boolean) =>
      transport.send({
        method: 'POST',
        path: '/',
        headers: {},
        body: '{}',
        deadline: soon(),
        unsafeToRepeat,
      });

    try {
      await send(false);
      await setTimeout(20); // let the pool take its socket back
      await send(true); // the pool was just used: its socket is alive
      const warm = connections;
      await setTimeout(STALE_AFTER_IDLE_MS + 100);
      await send(true); // idle: a fresh connection of its own
      const afterIdleMoney = connections;
      await setTimeout(20);
      await send(true); // that connection was just used: money requests keep it
      const nextMoney = connections;
      await setTimeout(20);
      await send(false); // reads use it too
      expect({ warm, afterIdleMoney, nextMoney, afterRead: connections }).toEqual({
        warm: 1,
        afterIdleMoney: 2,
        nextMoney: 2,
        afterRead: 2,
      });
    } finally {
      await transport.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
