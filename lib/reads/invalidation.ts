import { describeError, log } from '../log/log.ts';

/**
 * After the service's own money call on an object, the answers shared about it are dropped, so the
 * next read sees PayHere's truth (docs/contract.md "PayHere's budget"): the money routes and the
 * notification receiver hold this, not the read store itself.
 */
export interface ReadInvalidation {
  /** The order's payments changed (a charge, capture or refund; a notification). Nothing when unknown. */
  forgetOrder(orderId: string | undefined): Promise<void>;
  /** The subscription, its payments and the list changed (a retry or cancel; a notification). */
  forgetSubscription(id: string): Promise<void>;
}

/**
 * The longest a money call's answer waits for the drop after it: the time kept for the writes after
 * PayHere answered (WRITES_AFTER_ANSWER_MS) is the ledger's and the idempotency record's. A drop
 * slower than this finishes, or not, on its own; the stale answer lives out its window (seconds).
 */
export const FORGET_WITHIN_MS = 500;

/** Run `forget`, waiting for it at most FORGET_WITHIN_MS; it never throws. */
export async function forgetWithin(forget: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, FORGET_WITHIN_MS);
  });
  const dropped = forget().catch((error: unknown) => {
    log.warn('could not drop the shared reads of a changed object', { error: describeError(error) });
  });
  await Promise.race([dropped, late]);
  clearTimeout(timer);
}

/**
 * An order (and its subscription) changed at PayHere: the shared reads of them dropped, waited for
 * at most FORGET_WITHIN_MS (a notification's answer is due within a second); nothing without a store.
 */
export async function forgetChanged(
  invalidation: ReadInvalidation | undefined,
  orderId: string,
  subscriptionId: string | null | undefined,
): Promise<void> {
  if (!invalidation) return;
  await forgetWithin(async () => {
    await Promise.all([
      invalidation.forgetOrder(orderId),
      subscriptionId ? invalidation.forgetSubscription(subscriptionId) : undefined,
    ]);
  });
}

/**
 * Run a money call, then `forget` what it may have changed whatever its outcome (done, refused,
 * unknown: an unknown outcome may have changed it too); `forget` gets the result when there is one.
 * A drop that fails or is slow leaves a stale answer for its window, never a failed or late call.
 */
export async function thenForget<T>(
  call: () => Promise<T>,
  forget: (result: T | undefined) => Promise<void>,
): Promise<T> {
  let result: T | undefined;
  try {
    result = await call();
    return result;
  } finally {
    await forgetWithin(() => forget(result));
  }
}
