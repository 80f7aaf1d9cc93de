import { createHook } from 'node:async_hooks';
import { setImmediate as turn } from 'node:timers/promises';

/**
 * The timers of `durations` (ms) that `work` started and left running once it was done and a turn
 * of the event loop had passed: what a request leaves behind to fire later, in some later
 * request's time. Node's own timers count too (AbortSignal.timeout's), which a spy on setTimeout
 * would miss.
 */
export async function timersLeftBy(
  durations: readonly number[],
  work: () => Promise<unknown>,
): Promise<number[]> {
  const live = new Map<number, number>();
  const hook = createHook({
    init(id, type, _trigger, resource) {
      const ms = (resource as { _idleTimeout?: number })._idleTimeout;
      if (type === 'Timeout' && ms !== undefined && durations.includes(ms)) live.set(id, ms);
    },
    destroy(id) {
      live.delete(id);
    },
  });
  hook.enable();
  try {
    await work().catch(() => {});
    await turn();
    return [...live.values()];
  } finally {
    hook.disable();
  }
}
