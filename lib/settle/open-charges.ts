import { OutcomeUnknownError } from '../envelope/errors.ts';
import type { IdempotencyStore } from '../idempotency/store.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { describeError, log } from '../log/log.ts';
import { type ChargeEngine, SETTLE_INTERVAL_MS } from '../orders/charge-engine.ts';

/**
 * What looking at one open charge did: `waiting` for a pending charge's limit (not looked at yet),
 * `open` when PayHere's records could not settle it (with when its charge was sent), `deferred`
 * when its key's record is still being settled on its own (counted there), `closed` when nothing
 * was open any more.
 */
export type OpenChargeOutcome =
  | { outcome: 'settled' | 'waiting' | 'closed' | 'deferred' }
  | { outcome: 'open'; sentAt: number };

/**
 * The backstop behind every charge through the service (the ledger's charges index): an order a
 * charge still holds open (in flight, pending or unknown) once no request can finish it. A slot
 * whose key's record is still being settled is left to that record; one whose record is gone or
 * complete (a claim whose answer was lost, a write of the outcome that failed) and a pending charge
 * past its limit are settled from PayHere's records. So no claim outlives its request, and no
 * charge stays pending or unknown for good.
 */
export class OpenCharges {
  readonly #ledger: LedgerStore;
  readonly #store: IdempotencyStore;
  readonly #chargeEngine: ChargeEngine;
  readonly #settleDelayMs: number;
  readonly #now: () => number;

  constructor(options: {
    ledger: LedgerStore;
    store: IdempotencyStore;
    chargeEngine: ChargeEngine;
    settleDelayMs: number;
    now?: () => number;
  }) {
    this.#ledger = options.ledger;
    this.#store = options.store;
    this.#chargeEngine = options.chargeEngine;
    this.#settleDelayMs = options.settleDelayMs;
    this.#now = options.now ?? Date.now;
  }

  /** The orders due at `now`, oldest first, at most `limit`. */
  due(now: number, limit: number): Promise<string[]> {
    return this.#ledger.chargesDue(now, limit);
  }

  async settle(orderId: string, deadline: number): Promise<OpenChargeOutcome> {
    const order = await this.#ledger.getOrder(orderId);
    const slot = order?.charge;
    const now = this.#now();
    if (!order || !slot) {
      await this.#ledger.closeCharge(orderId);
      return { outcome: 'closed' };
    }
    const later = () => this.#ledger.postponeCharge(orderId, slot.key, now + SETTLE_INTERVAL_MS);
    try {
      if (order.state === 'pending' && !slot.inflight) {
        const limit = slot.until + this.#chargeEngine.pendingLimitMs(order.kind);
        if (now < limit) {
          await this.#ledger.postponeCharge(orderId, slot.key, limit);
          return { outcome: 'waiting' };
        }
        await this.#chargeEngine.settlePending(order, deadline, this.#now);
        // Left open (a report of its success settles first): looked at again, not at every run.
        await later();
        return { outcome: 'settled' };
      }
      // Settled meanwhile by other evidence: nothing is open any more.
      if (!slot.inflight && order.state !== 'unknown') {
        await this.#ledger.closeCharge(orderId);
        return { outcome: 'closed' };
      }
      // Its key's record, while it is not complete, is settled on its own (a repeat, the job's requests).
      const record = await this.#store.get(slot.key);
      if (record && record.state !== 'complete') {
        await later();
        return { outcome: 'deferred' };
      }
      await this.#chargeEngine.settleOpen(order, deadline, this.#settleDelayMs, this.#now);
      await later();
      return { outcome: 'settled' };
    } catch (error) {
      if (!(error instanceof OutcomeUnknownError)) {
        log.warn('an open charge could not be settled now', { orderId, error: describeError(error) });
      }
      await later().catch(() => false);
      return { outcome: 'open', sentAt: slot.sentAt };
    }
  }
}
