/**
 * Time that passes at once where the service would wait: `sleep` (the budget's waits, the token's
 * lease polls) moves the clock instead of waiting, and the settle job's runs are minutes apart
 * without anyone sleeping. Real time still passes underneath, so what the code does between waits
 * takes the time it takes. A sleep moves the clock only once every PayHere call in flight has its
 * answer and the background writes after it (a slot's release) have landed: a call is never
 * answered later, on the clock, than it really was.
 */
import { Transport, type UpstreamRequest, type UpstreamResponse } from '../../lib/gateway/transport.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { CappedTransport } from '../../lib/settle/capped-transport.ts';

export class VirtualClock {
  #skipped = 0;
  readonly #inFlight = new Set<Promise<unknown>>();
  /** When each call was sent, on this clock (what PayHere's limit counts), and by whom. */
  readonly arrivals: Array<{ at: number; path: string; by: string }> = [];

  readonly now = (): number => Date.now() + this.#skipped;

  /** Runs each time someone is about to wait, before the clock moves (a test acts then). */
  onSleep: ((ms: number) => Promise<void>) | undefined;

  readonly sleep = async (ms: number): Promise<void> => {
    const until = this.now() + Math.max(0, ms);
    await this.settled();
    await this.onSleep?.(ms);
    this.advanceTo(until);
  };

  /** The clock shows at least `at` from now on. */
  advanceTo(at: number): void {
    this.#skipped = Math.max(this.#skipped, at - Date.now());
  }

  /** Every call in flight answered, and what the answers started in the background done. */
  async settled(): Promise<void> {
    do {
      await new Promise((resolve) => setImmediate(resolve));
      await Promise.allSettled([...this.#inFlight]);
      await backgroundSettled();
    } while (this.#inFlight.size > 0);
  }

  /** A call `by` sent now, tracked until its answer. */
  sent<T>(by: string, path: string, call: () => Promise<T>): Promise<T> {
    this.arrivals.push({ at: this.now(), path, by });
    const answered = call();
    this.#inFlight.add(answered);
    void answered.then(
      () => this.#inFlight.delete(answered),
      () => this.#inFlight.delete(answered),
    );
    return answered;
  }
}

/** A transport whose calls `clock` sees, as `by`'s: when each was sent, and whether any is in flight. */
export function clockedTransport(clock: VirtualClock, baseUrl: string, by: string): Transport {
  return new (class extends Transport {
    override send(request: UpstreamRequest): Promise<UpstreamResponse> {
      return clock.sent(by, request.path, () => super.send(request));
    }
  })(baseUrl, { connectTimeoutMs: 3_000 });
}

/** The settle job's capped transport, its calls seen by `clock` as the job's. */
export function clockedCappedTransport(clock: VirtualClock, baseUrl: string, cap: number): CappedTransport {
  return new (class extends CappedTransport {
    override send(request: UpstreamRequest): Promise<UpstreamResponse> {
      // A call the cap refuses is not sent: only what reaches the transport underneath counts.
      if (this.calls >= cap) return super.send(request);
      return clock.sent('job', request.path, () => super.send(request));
    }
  })(baseUrl, { connectTimeoutMs: 3_000, cap });
}
