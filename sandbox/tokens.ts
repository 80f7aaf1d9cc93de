// OAuth access tokens as PayHere issues them: opaque UUIDs with a fixed lifetime and no refresh token.
import { randomUUID } from 'node:crypto';

export type TokenCheck = 'valid' | 'unknown' | 'expired';

export class AccessTokens {
  readonly #expiresAt = new Map<string, number>();
  readonly #now: () => number;
  readonly #lifetimeMs: number;
  readonly #reuseLive: boolean;
  #latest: string | undefined;

  /**
   * `reuseLive`: a token request while the last token is still valid answers that same token with
   * its remaining lifetime, as Spring Security's OAuth2 token services do for client credentials
   * (PayHere's OAuth errors are Spring's: "Full authentication is required...", "Bad client
   * credentials"); otherwise every request gets a new token.
   */
  constructor(now: () => number, lifetimeSeconds: number, reuseLive = false) {
    this.#now = now;
    this.#lifetimeMs = lifetimeSeconds * 1000;
    this.#reuseLive = reuseLive;
  }

  /** A token and the seconds it has left (`expires_in`). */
  issue(): { token: string; expiresInSeconds: number } {
    const now = this.#now();
    const latest = this.#latest;
    const latestExpiry = latest === undefined ? undefined : this.#expiresAt.get(latest);
    if (this.#reuseLive && latest !== undefined && latestExpiry !== undefined && now < latestExpiry) {
      return { token: latest, expiresInSeconds: Math.floor((latestExpiry - now) / 1000) };
    }
    const token = randomUUID();
    this.#expiresAt.set(token, now + this.#lifetimeMs);
    this.#latest = token;
    return { token, expiresInSeconds: Math.round(this.#lifetimeMs / 1000) };
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
    this.#latest = undefined;
  }
}
