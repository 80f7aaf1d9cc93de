// OAuth access tokens as PayHere issues them: opaque UUIDs with a fixed lifetime and no refresh token.
import { randomUUID } from 'node:crypto';

export type TokenCheck = 'valid' | 'unknown' | 'expired';

export class AccessTokens {
  readonly #expiresAt = new Map<string, number>();
  readonly #now: () => number;
  readonly #lifetimeMs: number;

  constructor(now: () => number, lifetimeSeconds: number) {
    this.#now = now;
    this.#lifetimeMs = lifetimeSeconds * 1000;
  }

  issue(): string {
    const token = randomUUID();
    this.#expiresAt.set(token, this.#now() + this.#lifetimeMs);
    return token;
  }

  check(token: string): TokenCheck {
    const expiresAt = this.#expiresAt.get(token);
    if (expiresAt === undefined) return 'unknown';
    return this.#now() < expiresAt ? 'valid' : 'expired';
  }

  /** Expired tokens are kept so that using one still says "expired", not "invalid". */
  expireAll(): void {
    for (const token of this.#expiresAt.keys()) this.#expiresAt.set(token, Number.NEGATIVE_INFINITY);
  }

  clear(): void {
    this.#expiresAt.clear();
  }
}
