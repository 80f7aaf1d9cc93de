/**
 * Writes that finish after the caller has its answer: a shared answer kept, a budget slot given
 * back. Losing one (a Lambda frozen before it landed, a table down) costs a later request a round
 * trip, never a wrong answer, so no caller waits for them. They are tracked only so that whoever
 * calls handlers in its own process (the tests) can wait until they have landed.
 */
const running = new Set<Promise<unknown>>();

/** Let `work` finish on its own; it must handle its own failures. */
export function inBackground(work: Promise<unknown>): void {
  running.add(work);
  void work.finally(() => running.delete(work));
}

/** Resolves once every write started in the background has finished, those they started included. */
export async function backgroundSettled(): Promise<void> {
  while (running.size > 0) await Promise.allSettled([...running]);
}
