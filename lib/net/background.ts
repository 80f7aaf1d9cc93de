import { describeError, log } from '../log/log.ts';

/**
 * Writes that finish after the caller has its answer: a shared answer kept, a budget slot freed or
 * given back. Losing one (a Lambda frozen before it landed, a table down) costs a later request a
 * round trip, never a wrong answer, so no caller waits for them, not even for their requests to be
 * made (signed, serialised, handed to a socket: a few milliseconds the first time in a container).
 * They are tracked only so that whoever calls handlers in its own process (the tests) can wait
 * until they have landed.
 */
const running = new Set<Promise<void>>();

/** Resolves in the next turn of the event loop, once what this turn started has been handed on. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Start `work` once the current turn of the event loop is over, after the answer it follows has
 * gone back up to whoever called the handler, and let it finish on its own. The work handles the
 * failures it expects (a table down); one it did not is logged here rather than left unhandled,
 * which would end the container, and the promise returned (settled when the work has finished)
 * never rejects, so whoever waits on it cannot inherit the failure.
 */
export function inBackground(work: () => Promise<unknown>): Promise<void> {
  const finished = nextTurn()
    .then(work)
    .then(
      () => {},
      (error: unknown) =>
        log.error('a write started after an answer failed', { error: describeError(error) }),
    );
  running.add(finished);
  void finished.finally(() => running.delete(finished));
  return finished;
}

/** Resolves once every write started in the background has finished, those they started included. */
export async function backgroundSettled(): Promise<void> {
  while (running.size > 0) await Promise.all(running);
}

/** Requests this container is answering now (route() and formRoute() count them). */
let answering = 0;
/** Work waiting for the container's requests to be answered. */
let waiting: Array<() => Promise<unknown>> = [];

/**
 * `handler`, counted while it answers: work left for after the answer (afterAnswer) waits until no
 * request of the container is being answered, so that it never competes with one.
 */
export function counted<A extends unknown[], R>(
  handler: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args: A) => {
    answering++;
    try {
      return await handler(...args);
    } finally {
      answering--;
      if (answering === 0) {
        const ready = waiting;
        waiting = [];
        for (const work of ready) inBackground(work);
      }
    }
  };
}

/**
 * Start `work` in the background once every request the container is answering has its answer
 * (at once, in the background, when none is: a scheduled job, a test calling a store).
 */
export function afterAnswer(work: () => Promise<unknown>): void {
  if (answering === 0) inBackground(work);
  else waiting.push(work);
}
