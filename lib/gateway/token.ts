export interface IssuedToken {
  value: string;
  expiresInSeconds: number;
}

/**
 * The gateway's access token, cached per container. It is refreshed a little before it expires,
 * and concurrent callers share a single fetch instead of stampeding the token endpoint.
 */
export class TokenCache {
  readonly #fetchToken: (deadline: number) => Promise<IssuedToken>;
  readonly #now: () => number;
  #current: { value: string; refreshAt: number } | undefined;
  #inflight: Promise<string> | undefined;

  constructor(fetchToken: (deadline: number) => Promise<IssuedToken>, now: () => number = Date.now) {
    this.#fetchToken = fetchToken;
    this.#now = now;
  }

  /** The current token; a fetch started here gives up at `deadline` (epoch ms). */
  get(deadline: number): Promise<string> {
    if (this.#current && this.#now() < this.#current.refreshAt) return Promise.resolve(this.#current.value);
    this.#inflight ??= this.#refresh(deadline).finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  /** Forget `value` (the gateway called it invalid); a newer token fetched meanwhile is kept. */
  invalidate(value: string): void {
    if (this.#current?.value === value) this.#current = undefined;
  }

  async #refresh(deadline: number): Promise<string> {
    const issuedAt = this.#now();
    const token = await this.#fetchToken(deadline);
    const lifetimeMs = token.expiresInSeconds * 1000;
    // Refresh with a tenth of the lifetime (at most a minute) to spare, so a token never expires in flight.
    const margin = Math.min(60_000, lifetimeMs / 10);
    this.#current = { value: token.value, refreshAt: issuedAt + lifetimeMs - margin };
    return token.value;
  }
}
