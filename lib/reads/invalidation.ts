/**
 * After the service's own money call on an object, the answers shared about it are dropped, so the
 * next read sees PayHere's truth (SPEC.md "PayHere's budget"): the money routes and the
 * notification receiver hold this, not the read store itself.
 */
export interface ReadInvalidation {
  /** The order's payments changed (a charge, capture or refund; a notification). Nothing when unknown. */
  forgetOrder(orderId: string | undefined): Promise<void>;
  /** The subscription, its payments and the list changed (a retry or cancel; a notification). */
  forgetSubscription(id: string): Promise<void>;
}

/**
 * Run a money call, then `forget` what it may have changed whatever its outcome (done, refused,
 * unknown: an unknown outcome may have changed it too); `forget` gets the result when there is one.
 * It never throws: a drop that fails leaves a stale answer for its window, not a failed call.
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
    await forget(result);
  }
}
