import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { GetItemCommand } from '../../lib/dynamodb/index.ts';
import { DAY_SECONDS, HOUR_MS, localClient, manualClock, testStore } from './fixtures.ts';

/** The store against the run's real dynalite table; keys are random, so tests never share a record. */
const response = { statusCode: 200, headers: { 'Content-Type': 'application/json' }, body: '{"status":1}' };

function setup() {
  const clock = manualClock();
  const store = testStore(clock.now);
  return { clock, store, key: `test#${randomUUID()}` };
}

describe('IdempotencyStore', () => {
  it('lets exactly one begin acquire a key; the others get the live record', async () => {
    const { clock, store, key } = setup();

    const results = await Promise.all(
      Array.from({ length: 20 }, () => store.begin(key, 'fp', clock.now() + 10_000)),
    );

    const acquired = results.filter((result) => 'acquired' in result);
    expect(acquired).toHaveLength(1);
    for (const result of results) {
      if ('existing' in result) {
        expect(result.existing).toMatchObject({ key, state: 'in_progress', fingerprint: 'fp' });
        expect(result.existing!.attempt).toBe(
          (acquired[0] as { acquired: { attempt: string } }).acquired.attempt,
        );
      }
    }
  });

  it('stores an answer only for the attempt that holds the record', async () => {
    const { clock, store, key } = setup();
    const begun = await store.begin(key, 'fp', clock.now() + 10_000);
    if (!('acquired' in begun)) throw new Error('expected to acquire');

    const byStranger = await store.finish({ ...begun.acquired, attempt: randomUUID() }, 'complete', response);
    const byHolder = await store.finish(begun.acquired, 'complete', response);
    const again = await store.finish(begun.acquired, 'outcome_unknown', response);

    expect(byStranger).toBe(false);
    expect(byHolder).toBe(true);
    expect(again).toBe(false);
    const stored = await store.get(key);
    expect(stored).toMatchObject({ state: 'complete', response });
    expect(stored!.lockedUntil).toBeUndefined();
  });

  it('keeps a finished answer ttlSeconds from when it was stored, with the TTL in epoch seconds', async () => {
    const { clock, store, key } = setup();
    const begun = await store.begin(key, 'fp', clock.now() + 10_000);
    if (!('acquired' in begun)) throw new Error('expected to acquire');
    clock.advance(5_000);
    await store.finish(begun.acquired, 'complete', response);

    const { Item } = await localClient().send(
      new GetItemCommand({ TableName: inject('idempotencyTable'), Key: { pk: { S: key } } }),
    );

    expect(Number(Item!.expiresAt!.N)).toBe(Math.ceil(clock.now() / 1000) + DAY_SECONDS);
  });

  it('treats an expired item as absent although DynamoDB has not deleted it yet, and begins over it', async () => {
    const { clock, store, key } = setup();
    const first = await store.begin(key, 'old', clock.now() + 10_000);
    if (!('acquired' in first)) throw new Error('expected to acquire');
    await store.finish(first.acquired, 'complete', response);

    clock.advance(23 * HOUR_MS);
    const stillLive = await store.get(key);
    clock.advance(1 * HOUR_MS + 1_000);
    const afterExpiry = await store.get(key);
    const second = await store.begin(key, 'new', clock.now() + 10_000);

    expect(stillLive?.fingerprint).toBe('old');
    expect(afterExpiry).toBeUndefined();
    expect('acquired' in second).toBe(true);
    expect((await store.get(key))?.fingerprint).toBe('new');
  });

  it('releases only the holder’s in_progress record', async () => {
    const { clock, store, key } = setup();
    const begun = await store.begin(key, 'fp', clock.now() + 10_000);
    if (!('acquired' in begun)) throw new Error('expected to acquire');

    expect(await store.release({ ...begun.acquired, attempt: randomUUID() })).toBe(false);
    expect(await store.get(key)).toBeDefined();
    expect(await store.release(begun.acquired)).toBe(true);
    expect(await store.get(key)).toBeUndefined();
  });

  it('never releases a stored answer', async () => {
    const { clock, store, key } = setup();
    const begun = await store.begin(key, 'fp', clock.now() + 10_000);
    if (!('acquired' in begun)) throw new Error('expected to acquire');
    await store.finish(begun.acquired, 'outcome_unknown', response);

    expect(await store.release(begun.acquired)).toBe(false);
    expect((await store.get(key))?.state).toBe('outcome_unknown');
  });

  it('lets one claimer take over a record as it was read, keeping the first start time', async () => {
    const { clock, store, key } = setup();
    const begun = await store.begin(key, 'fp', clock.now() + 1_000);
    if (!('acquired' in begun)) throw new Error('expected to acquire');
    clock.advance(2_000);
    const seen = (await store.get(key))!;

    const claims = await Promise.all(
      Array.from({ length: 10 }, () => store.claim(seen, clock.now() + 10_000)),
    );

    const winners = claims.filter((claim) => claim !== undefined);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ state: 'in_progress', startedAt: begun.acquired.startedAt });
    expect(await store.finish(begun.acquired, 'complete', response)).toBe(false);
    expect(await store.finish(winners[0]!, 'complete', response)).toBe(true);
  });

  it('reports a store it cannot reach as an error, not as a missing record', async () => {
    const unreachable = testStore(undefined, localClient({ endpoint: 'http://127.0.0.1:9', maxAttempts: 1 }));

    await expect(unreachable.get(`test#${randomUUID()}`)).rejects.toThrow();
    await expect(unreachable.begin(`test#${randomUUID()}`, 'fp', Date.now() + 1_000)).rejects.toThrow();
  });
});
