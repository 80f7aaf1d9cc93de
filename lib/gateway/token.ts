import type { SharedStateTable, SharedToken } from '../budget/state-table.ts';
import { defaultSleep } from '../budget/window-limiter.ts';
import { GatewayUnavailableError } from '../envelope/errors.ts';
import { describeError, log } from '../log/log.ts';

export interface IssuedToken {
  value: string;
  expiresInSeconds: number;
}

/** Where the gateway client gets its access token. */
export interface TokenSource {
  /** The current token; a fetch started here gives up at `deadline` (epoch ms). */
  get(deadline: number): Promise<string>;
  /** The gateway called `value` invalid: forget it unless a newer token replaced it meanwhile. */
  invalidate(value: string): Promise<void>;
  /** This container asked PayHere for `value` itself (rather than taking another's). */
  fetchedHere(value: string): boolean;
  /**
   * The gateway refused `rejected`: forget it and fetch a token here and now, never one fetched
   * earlier or by another container (which may have been revoked with it): a money call gets one
   * more try only, and it must go out on a token that works.
   */
  renew(rejected: string, deadline: number): Promise<string>;
  /**
   * A PayHere call may follow: read a stored token into memory beside the caller's other lookups,
   * never asking PayHere for one (the caller may find its answer shared and call nobody).
   */
  preload?(): void;
}

/**
 * When a token just issued at `issuedAt` expires and when to fetch the next one: a tenth of its
 * lifetime (at most a minute) early, so a token never expires in flight. But an OAuth server that
 * answers an early request with the token it already gave (Spring's token services do, with the
 * remaining lifetime) would be asked again and again as the remaining lifetime shrinks: a token
 * that comes back unchanged is kept until it expires, and the next request is made only then.
 */
export function tokenTimes(issuedAt: number, token: IssuedToken, previous: string | undefined) {
  const lifetimeMs = token.expiresInSeconds * 1000;
  const expiresAt = issuedAt + lifetimeMs;
  if (token.value === previous) return { expiresAt, refreshAt: expiresAt };
  return { expiresAt, refreshAt: expiresAt - Math.min(60_000, lifetimeMs / 10) };
}

/**
 * The gateway's access token, cached per container. It is refreshed a little before it expires,
 * and concurrent callers share a single fetch instead of stampeding the token endpoint.
 */
export class TokenCache implements TokenSource {
  readonly #fetchToken: (deadline: number) => Promise<IssuedToken>;
  readonly #now: () => number;
  #current: { value: string; refreshAt: number } | undefined;
  #last: string | undefined;
  #inflight: Promise<string> | undefined;

  constructor(fetchToken: (deadline: number) => Promise<IssuedToken>, now: () => number = Date.now) {
    this.#fetchToken = fetchToken;
    this.#now = now;
  }

  get(deadline: number): Promise<string> {
    if (this.#current && this.#now() < this.#current.refreshAt) return Promise.resolve(this.#current.value);
    this.#inflight ??= this.#refresh(deadline).finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  async invalidate(value: string): Promise<void> {
    if (this.#current?.value === value) this.#current = undefined;
  }

  fetchedHere(): boolean {
    return true;
  }

  async renew(rejected: string, deadline: number): Promise<string> {
    await this.invalidate(rejected);
    // A fetch already in flight started here too, and after the token was handed out.
    return this.get(deadline);
  }

  async #refresh(deadline: number): Promise<string> {
    const issuedAt = this.#now();
    const token = await this.#fetchToken(deadline);
    this.#current = { value: token.value, refreshAt: tokenTimes(issuedAt, token, this.#last).refreshAt };
    this.#last = token.value;
    return token.value;
  }
}

export interface SharedTokenOptions {
  table: SharedStateTable;
  fetchToken: (deadline: number) => Promise<IssuedToken>;
  /** This container's name in the lease. */
  owner: string;
  /** The container's own token while the table cannot be reached. */
  fallback: TokenSource;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** How often a container without a usable token looks whether the lease holder stored the new one. */
const LEASE_POLL_MS = 50;
/** A token this close to its expiry is not used while another container fetches the next. */
const EXPIRY_GUARD_MS = 1_000;

/**
 * One access token for the deployment, in the shared table. When it is due, one container takes
 * the lease (a conditional write) and asks PayHere; the others keep using the current token, or,
 * when there is none that still works, wait for the new one. A token PayHere rejected is dropped
 * from the table only if it is still the current one. When the table cannot be reached, this
 * container falls back to a token of its own.
 */
export class SharedTokenCache implements TokenSource {
  readonly #table: SharedStateTable;
  readonly #fetchToken: (deadline: number) => Promise<IssuedToken>;
  readonly #owner: string;
  readonly #fallback: TokenSource;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  /** The token as this container last read it, used without a read until its refresh time. */
  #current: { value: string; useUntil: number } | undefined;
  #inflight: Promise<string> | undefined;
  /** A read of the stored token that preload() started: the next get() waits for it rather than reading again. */
  #preloading: Promise<void> | undefined;
  /** The last token this container fetched itself. */
  #fetched: string | undefined;
  #fellBack = false;

  constructor(options: SharedTokenOptions) {
    this.#table = options.table;
    this.#fetchToken = options.fetchToken;
    this.#owner = options.owner;
    this.#fallback = options.fallback;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? defaultSleep;
  }

  get(deadline: number): Promise<string> {
    if (this.#current && this.#now() < this.#current.useUntil) return Promise.resolve(this.#current.value);
    this.#inflight ??= this.#obtain(deadline).finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  fetchedHere(value: string): boolean {
    return value === this.#fetched || (this.#fellBack && this.#fallback.fetchedHere(value));
  }

  /**
   * A cold container reads the stored token while its request looks up what it needs, rather than
   * after: one round trip fewer before its first PayHere call. A token that is missing or due is
   * left to get() (the lease, PayHere), and a failed read is get()'s to see again.
   */
  preload(): void {
    if (this.#fellBack || this.#inflight || this.#preloading) return;
    if (this.#current && this.#now() < this.#current.useUntil) return;
    this.#preloading = this.#table
      .readToken()
      .then(
        (stored) => {
          if (stored?.value && this.#now() < stored.refreshAt)
            this.#current = { value: stored.value, useUntil: stored.refreshAt };
        },
        () => {},
      )
      .finally(() => {
        this.#preloading = undefined;
      });
  }

  async invalidate(value: string): Promise<void> {
    if (this.#current?.value === value) this.#current = undefined;
    await this.#fallback.invalidate(value);
    try {
      await this.#table.dropToken(value);
    } catch (error) {
      log.debug('could not drop the rejected token from the shared table', { error: describeError(error) });
    }
  }

  async renew(rejected: string, deadline: number): Promise<string> {
    await this.invalidate(rejected);
    if (this.#fellBack) return this.#fallback.renew(rejected, deadline);
    let leased = false;
    try {
      leased = await this.#table.leaseToken(this.#owner, deadline, this.#now());
    } catch (error) {
      log.debug('could not lease the shared token', { error: describeError(error) });
      // Its answer may have been lost with the lease taken: given back, or every container waits it out.
      await this.#table.endLease(this.#owner, deadline).catch(() => {});
    }
    // With the lease, the new token is shared; without it (another container is fetching, or
    // already stored one that may be as stale), this container's own serves this call.
    if (leased) return this.#fetchUnderLease(deadline, rejected);
    const issuedAt = this.#now();
    const token = await this.#fetchToken(deadline);
    this.#fetched = token.value;
    this.#current = { value: token.value, useUntil: tokenTimes(issuedAt, token, rejected).refreshAt };
    return token.value;
  }

  async #obtain(deadline: number): Promise<string> {
    await this.#preloading;
    if (this.#current && this.#now() < this.#current.useUntil) return this.#current.value;
    let stored: Awaited<ReturnType<SharedStateTable['readToken']>>;
    try {
      for (;;) {
        stored = await this.#table.readToken();
        const now = this.#now();
        if (stored?.value && now < stored.refreshAt) {
          this.#current = { value: stored.value, useUntil: stored.refreshAt };
          return stored.value;
        }
        const usable = stored?.value && now < stored.expiresAt - EXPIRY_GUARD_MS ? stored.value : undefined;
        if ((stored?.leasedUntil ?? 0) <= now && (await this.#table.leaseToken(this.#owner, deadline, now)))
          break;
        // Another container is fetching the next token: keep using this one meanwhile, else wait for it.
        if (usable) {
          this.#current = {
            value: usable,
            useUntil: Math.min(now + 1_000, stored!.expiresAt - EXPIRY_GUARD_MS),
          };
          return usable;
        }
        if (now + LEASE_POLL_MS >= deadline) {
          throw new GatewayUnavailableError(
            'The payment gateway cannot be reached right now; try again shortly.',
          );
        }
        await this.#sleep(LEASE_POLL_MS);
      }
    } catch (error) {
      if (error instanceof GatewayUnavailableError) throw error;
      // A lease whose answer was lost may be this container's: given back, or every container waits it out.
      await this.#table.endLease(this.#owner, deadline).catch(() => {});
      log.warn('the shared token table cannot be reached: this container uses a token of its own', {
        error: describeError(error),
      });
      this.#fellBack = true;
      return this.#fallback.get(deadline);
    }
    return this.#fetchUnderLease(deadline, stored?.value);
  }

  /** This container holds the lease: ask PayHere, store what it gave, end the lease either way. */
  async #fetchUnderLease(deadline: number, previous: string | undefined): Promise<string> {
    const issuedAt = this.#now();
    let token: IssuedToken;
    try {
      token = await this.#fetchToken(deadline);
    } catch (error) {
      await this.#table.endLease(this.#owner, deadline).catch(() => {});
      throw error;
    }
    const shared: SharedToken = { value: token.value, ...tokenTimes(issuedAt, token, previous) };
    this.#fetched = token.value;
    this.#current = { value: shared.value, useUntil: shared.refreshAt };
    try {
      await this.#table.storeToken(this.#owner, shared, this.#now());
    } catch (error) {
      log.debug('could not store the new token in the shared table', { error: describeError(error) });
    }
    return shared.value;
  }
}
