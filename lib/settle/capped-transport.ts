import { idleWork } from '../budget/limiter.ts';
import {
  Transport,
  TransportError,
  type UpstreamRequest,
  type UpstreamResponse,
} from '../gateway/transport.ts';

/**
 * The settle job's transport: it counts the PayHere calls of a run and refuses any beyond the run's
 * cap before sending them (not sent, not retried), so a run never makes more calls than it was
 * given, whatever its items turn out to need (a token, a search and its retries). A refusal marks
 * the item's idle work as cut short (lib/budget/limiter.ts), so the job puts the item back in its
 * place instead of taking it for one PayHere could not settle.
 */
export class CappedTransport extends Transport {
  readonly #cap: number;
  #calls = 0;

  constructor(baseUrl: string, options: ConstructorParameters<typeof Transport>[1] & { cap: number }) {
    super(baseUrl, options);
    this.#cap = options.cap;
  }

  /** Calls made since the run began. */
  get calls(): number {
    return this.#calls;
  }

  /** A new run: its calls count from zero. */
  reset(): void {
    this.#calls = 0;
  }

  override async send(request: UpstreamRequest): Promise<UpstreamResponse> {
    if (this.#calls >= this.#cap) {
      const work = idleWork.getStore();
      if (work) work.refused = true;
      throw new TransportError(
        'protocol',
        'SETTLE_RUN_CAP',
        new Error('the settle run used its PayHere calls'),
        'not_sent',
      );
    }
    this.#calls++;
    return super.send(request);
  }
}
