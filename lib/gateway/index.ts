import { randomUUID } from 'node:crypto';
import type { CallerShares } from '../budget/caller-shares.ts';
import { callerSharesFromEnvironment, sharedStateFromEnvironment } from '../budget/from-environment.ts';
import {
  arrivalMargin,
  type GatewayLimiter,
  LocalLimiter,
  reservedShare,
  SharedLimiter,
} from '../budget/limiter.ts';
import type { SharedStateTable } from '../budget/state-table.ts';
import { SlidingWindowLimiter } from '../budget/window-limiter.ts';
import { type Config, type CredentialsProvider, loadConfig } from '../config/config.ts';
import { credentialsFor } from '../config/secrets.ts';
import { GatewayClient } from './client.ts';
import { CONNECT_TIMEOUT_MS } from './early-connection.ts';
import { PayHere } from './payhere.ts';
import { SharedTokenCache, TokenCache } from './token.ts';
import { Transport } from './transport.ts';

export { CONNECT_TIMEOUT_MS } from './early-connection.ts';
export { PayHere } from './payhere.ts';

export interface PayHereOptions {
  credentials?: CredentialsProvider;
  /** Clock and sleep of the rate limiter (tests drive them by hand). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** The clock the client's pauses between retries wait on and are held to the deadline by (real time by default). */
  retryClock?: { now: () => number; sleep: (ms: number) => Promise<void> };
  transport?: Transport;
  /**
   * The deployment's shared budget and token (docs/contract.md "PayHere's budget"). Without it, the
   * container keeps `rateLimit` and a token of its own (tests of one container).
   */
  sharedState?: SharedStateTable;
  /** Each caller's share of the budget (lib/budget/caller-shares.ts). */
  shares?: CallerShares;
}

export function createPayHere(config: Config, options: PayHereOptions = {}): PayHere {
  const clock = {
    ...(options.now ? { now: options.now } : {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
  };
  const table = options.sharedState;
  let limiter: GatewayLimiter;
  if (table) {
    // A container's own share only where the deployment bounds the containers that may use one
    // (docs/budget.md "The fallback"): their shares are then slots the table never gives out.
    const containers = config.fallbackContainers;
    const own = config.fallbackRateLimit;
    const fallback =
      containers > 0
        ? new SlidingWindowLimiter({
            limit: own.limit,
            // Counted over a window and the margin, as the table's slots are.
            windowMs: own.windowMs + arrivalMargin(config.rateLimit.windowMs),
            reserved: reservedShare(own.limit),
            ...clock,
          })
        : undefined;
    limiter = new SharedLimiter({
      table,
      ...config.rateLimit,
      ...(fallback ? { fallback, fallbackSlots: containers * own.limit } : {}),
      ...clock,
    });
  } else {
    limiter = new LocalLimiter(new SlidingWindowLimiter({ ...config.rateLimit, ...clock }), options.now);
  }
  const owner = randomUUID();
  return new PayHere(
    new GatewayClient({
      transport:
        options.transport ?? new Transport(config.gatewayBaseUrl, { connectTimeoutMs: CONNECT_TIMEOUT_MS }),
      credentials: options.credentials ?? credentialsFor(config),
      limiter,
      ...options.retryClock,
      ...(options.shares ? { shares: options.shares } : {}),
      ...(table
        ? {
            tokens: (fetchToken) =>
              new SharedTokenCache({
                table,
                fetchToken,
                owner,
                fallback: new TokenCache(fetchToken),
                ...clock,
              }),
          }
        : {}),
    }),
  );
}

/**
 * The container's PayHere client, built from the environment at start-up (a bad variable fails
 * here), its connection to PayHere opening meanwhile: the handshakes of a cold container's first
 * call overlap its start instead of following it. Only a socket: nothing is sent until a call.
 */
export function payHereFromEnvironment(): PayHere {
  const payhere = createPayHere(loadConfig(process.env), {
    sharedState: sharedStateFromEnvironment(process.env),
    shares: callerSharesFromEnvironment(process.env),
  });
  payhere.connectEarly();
  return payhere;
}
