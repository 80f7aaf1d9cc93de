import { describe, expect, it } from 'vitest';
import { type BatchGetItemCommand, batchGet, type Item } from '../../lib/dynamodb/index.ts';

/**
 * lib/dynamodb/batch.ts against a scripted client: 100 keys a request, each key asked once, and the
 * keys DynamoDB leaves unprocessed (throttled) asked again until answered or given up on.
 */
function scripted(unprocessedTimes: number) {
  const requests: string[][] = [];
  let left = unprocessedTimes;
  const client = {
    send: async (command: unknown) => {
      const { RequestItems } = (command as BatchGetItemCommand).input;
      const keys = RequestItems.t!.Keys.map((key) => key.pk!.S!);
      requests.push(keys);
      // DynamoDB answers the first key and leaves the rest, while `left` lasts.
      const answered = left-- > 0 ? keys.slice(0, 1) : keys;
      const unprocessed = keys.slice(answered.length);
      return {
        Responses: {
          t: answered.filter((pk) => !pk.startsWith('missing')).map((pk): Item => ({ pk: { S: pk } })),
        },
        ...(unprocessed.length > 0
          ? { UnprocessedKeys: { t: { Keys: unprocessed.map((pk): Item => ({ pk: { S: pk } })) } } }
          : {}),
      };
    },
  };
  return { client: client as never, requests };
}

const noWait = async () => undefined;

describe('batchGet', () => {
  it('asks 100 keys a request, each once, and leaves out the items that do not exist', async () => {
    const keys = [...Array.from({ length: 230 }, (_, i) => `k${i}`), 'missing-1', 'k0'];
    const { client, requests } = scripted(0);

    const items = await batchGet(client, 't', keys, { sleep: noWait });

    expect(requests.map((r) => r.length)).toEqual([100, 100, 31]);
    expect(new Set(requests.flat()).size).toBe(231);
    expect(items.map((item) => item.pk!.S).sort()).toEqual(
      Array.from({ length: 230 }, (_, i) => `k${i}`).sort(),
    );
  });

  it('asks again for the keys left unprocessed, until every one is answered', async () => {
    const { client, requests } = scripted(3);

    const items = await batchGet(client, 't', ['a', 'b', 'c', 'd', 'e'], { sleep: noWait });

    expect(requests).toEqual([
      ['a', 'b', 'c', 'd', 'e'],
      ['b', 'c', 'd', 'e'],
      ['c', 'd', 'e'],
      ['d', 'e'],
    ]);
    expect(items.map((item) => item.pk!.S)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('gives up when keys stay unprocessed: the caller fails rather than reading a part as the whole', async () => {
    const { client, requests } = scripted(Number.POSITIVE_INFINITY);

    await expect(
      batchGet(client, 't', ['a', 'b', 'c', 'd', 'e', 'f', 'g'], { sleep: noWait }),
    ).rejects.toThrow(/left 2 keys of t unprocessed/);
    expect(requests).toHaveLength(5);
  });
});
