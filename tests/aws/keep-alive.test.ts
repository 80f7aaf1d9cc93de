import { setImmediate as turn } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AwsJsonClient } from '../../lib/aws/client.ts';
import { AWS_IDLE_MS, post } from '../../lib/aws/http.ts';
import { farEnd } from '../helpers/far-end.ts';

/**
 * The AWS JSON client's kept-alive sockets (lib/aws/http.ts) across a freeze, against an AWS
 * endpoint on loopback that counts connections, requests, and requests written on a socket the
 * path forgot unseen (tests/helpers/far-end.ts).
 */
async function endpoint() {
  // Answered a moment later: a round's requests sent together take a socket each.
  const end = await farEnd({ answerAfterMs: 20 });
  closing.push(() => end.close());
  const client = new AwsJsonClient(
    {
      signingName: 'dynamodb',
      label: 'DynamoDB',
      contentType: 'application/x-amz-json-1.0',
      targetPrefix: 'DynamoDB_20120810',
    },
    {
      region: 'ap-south-1',
      endpoint: `${end.url}/`,
      maxAttempts: 3,
      connectTimeoutMs: 500,
      requestTimeoutMs: 1_000,
      credentials: () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret-for-tests-only' }),
    },
  );
  return { client, counts: end.counts, drop: end.drop };
}

let closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(closing.map((close) => close()));
  closing = [];
});

/** A warm request's round: a GetItem and two UpdateItems at once, three kept-alive sockets after. */
async function round(client: AwsJsonClient) {
  await Promise.all([
    client.send('GetItem', {}),
    client.send('UpdateItem', {}),
    client.send('UpdateItem', {}),
  ]);
  for (let i = 0; i < 5; i++) await turn();
}

describe('kept-alive sockets to AWS', () => {
  it('are not used after a freeze longer than AWS_IDLE_MS: nothing is written on a socket the path forgot', async () => {
    // Prepare
    const { client, counts, drop } = await endpoint();
    await round(client);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    vi.setSystemTime(Date.now() + AWS_IDLE_MS + 1);
    drop();

    // Act
    const answer = await client.send('GetItem', {}).then(
      () => 'answered',
      (error: Error) => `${error.name}: ${error.message}`,
    );

    // Assess: one new connection, no try lost.
    expect(answer).toBe('answered');
    expect(counts).toEqual({ connections: 4, requests: 4, lost: 0 });
  });

  it('are used again within AWS_IDLE_MS: a busy container pays no new handshake', async () => {
    // Prepare
    const { client, counts } = await endpoint();
    await round(client);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    vi.setSystemTime(Date.now() + AWS_IDLE_MS - 1_000);

    // Act
    await client.send('GetItem', {});

    // Assess
    expect(counts).toEqual({ connections: 3, requests: 4, lost: 0 });
  });

  it('are not used after a freeze either when a request before it was refused by Node unsent', async () => {
    // Prepare: a round, then a request Node refuses before it exists (a header it will not send).
    const { client, counts, drop } = await endpoint();
    await round(client);
    const refused = await post({
      url: new URL(`http://127.0.0.1:1/`),
      headers: { 'x-broken': 'one\ntwo' },
      body: '{}',
      connectTimeoutMs: 500,
      requestTimeoutMs: 500,
      signals: [],
    }).catch((error: unknown) => error);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    vi.setSystemTime(Date.now() + AWS_IDLE_MS + 1);
    drop();

    // Act
    await client.send('GetItem', {});

    // Assess: the refusal left nothing counted as in flight, so the idle rule still applies.
    expect(refused).toBeInstanceOf(Error);
    expect(counts).toEqual({ connections: 4, requests: 4, lost: 0 });
  });
});
