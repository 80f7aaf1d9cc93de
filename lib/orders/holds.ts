import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';

/**
 * A hold's authorization token known only from a notification is unsigned and cannot be looked up
 * at PayHere, so the order shows it unverified. A capture or release through the service that
 * PayHere accepted proves it.
 */
export class Holds {
  readonly #ledger: LedgerStore;

  constructor(ledger: LedgerStore) {
    this.#ledger = ledger;
  }

  /** PayHere accepted a capture or release with `token`: its order's hold is proven. Never throws. */
  async proven(orderId: string | undefined, token: string): Promise<void> {
    if (!orderId) return;
    try {
      await this.#ledger.proveHold(orderId, token);
    } catch (error) {
      log.warn('could not mark a hold as proven', { orderId, error: describeError(error) });
    }
  }
}
