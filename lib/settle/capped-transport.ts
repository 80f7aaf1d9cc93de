import {
  Transport,
  TransportError,
  type UpstreamRequest,
  type UpstreamResponse,
} from '../gateway/transport.ts';

/**
 * The settle job's transport: it counts the PayHere calls of a run and refuses any beyond the run's
 * cap before sending them (not sent, not retried), so a run never takes more of the budget than
 * it was given, whatever its items turn out to need.
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
