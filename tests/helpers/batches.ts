/**
 * `work` on every item, at most `concurrency` at a time, answers in the items' order: many
 * customers set up or served without a herd of thousands of requests at once.
 */
export async function inBatches<T, R>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}
