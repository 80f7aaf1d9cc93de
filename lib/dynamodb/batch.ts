import type { SendOptions } from '../aws/client.ts';
import type { DynamoDBClient } from './client.ts';
import { BatchGetItemCommand, type Item } from './commands.ts';

/** DynamoDB's most keys in one BatchGetItem. */
export const BATCH_GET_KEYS = 100;
/** How often keys DynamoDB left unprocessed (throttled, or over 16 MB) are asked again. */
const UNPROCESSED_TRIES = 5;
/** Batches in flight at once. */
const IN_FLIGHT = 4;

/**
 * The items of `keys` (each `{ pk }`) in `table`, by BatchGetItem: 100 keys a request, a few requests
 * at once, keys DynamoDB left unprocessed asked again after a short pause. An item that does not
 * exist is simply absent from the answer. Throws when keys stay unprocessed after several tries.
 */
export async function batchGet(
  client: Pick<DynamoDBClient, 'send'>,
  table: string,
  keys: readonly string[],
  options: { consistent?: boolean; send?: () => SendOptions; sleep?: (ms: number) => Promise<void> } = {},
): Promise<Item[]> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const unique = [...new Set(keys)];
  const chunks: string[][] = [];
  for (let i = 0; i < unique.length; i += BATCH_GET_KEYS) chunks.push(unique.slice(i, i + BATCH_GET_KEYS));
  const found: Item[] = [];
  const one = async (chunk: string[]) => {
    let wanted: Item[] = chunk.map((pk) => ({ pk: { S: pk } }));
    for (let attempt = 0; wanted.length > 0; attempt++) {
      if (attempt === UNPROCESSED_TRIES)
        throw new Error(`DynamoDB left ${wanted.length} keys of ${table} unprocessed`);
      if (attempt > 0) await sleep(50 * 2 ** attempt);
      const answer = await client.send(
        new BatchGetItemCommand({
          RequestItems: {
            [table]: { Keys: wanted, ...(options.consistent ? { ConsistentRead: true } : {}) },
          },
        }),
        options.send?.() ?? {},
      );
      found.push(...(answer.Responses?.[table] ?? []));
      wanted = answer.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  };
  let next = 0;
  const worker = async () => {
    while (next < chunks.length) await one(chunks[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, chunks.length) }, worker));
  return found;
}
