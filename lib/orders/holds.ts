import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { holdSettled } from './events.ts';

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

  /**
   * PayHere accepted a capture (of `amount`) or release with `token`: its order's hold is proven,
   * and its first capture or release recorded with its event. Never throws.
   */
  async proven(
    orderId: string | undefined,
    token: string,
    action: 'captured' | 'released',
    amount: number | null = null,
  ): Promise<void> {
    if (!orderId) return;
    try {
      await this.#ledger.proveHold(orderId, token, {
        action,
        events: [holdSettled(orderId, action, amount)],
      });
    } catch (error) {
      log.warn('could not mark a hold as proven', { orderId, error: describeError(error) });
    }
  }
}
