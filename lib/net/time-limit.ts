/**
 * A limit on one piece of work: `signal` aborts with a `TimeoutError` once `ms` have passed, as
 * `AbortSignal.timeout(ms)`'s does, and `end()` stops its timer when the work is done first.
 *
 * Not `AbortSignal.timeout` itself: its timer cannot be stopped, so it fires after every request
 * it limited was answered, and builds its `TimeoutError` (with a stack) and dispatches the abort
 * then. A warm read limited five requests that way: about half a millisecond of CPU per request,
 * spent in whatever later request was running when the timers came due.
 */
export interface TimeLimit {
  signal: AbortSignal;
  end(): void;
}

export function timeLimit(ms: number): TimeLimit {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
  );
  // Like AbortSignal.timeout's: a limit alone does not keep the process alive.
  timer.unref();
  return { signal: controller.signal, end: () => clearTimeout(timer) };
}

/** `work` under a limit of `ms`, its timer stopped however the work ends. */
export async function withinMs<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const limit = timeLimit(ms);
  try {
    return await work(limit.signal);
  } finally {
    limit.end();
  }
}
