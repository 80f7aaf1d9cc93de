import { type Config, type CredentialsProvider, loadConfig } from '../config/config.ts';
import { credentialsFor } from '../config/secrets.ts';
import { GatewayClient } from './client.ts';
import { PayHere } from './payhere.ts';
import { SlidingWindowLimiter } from './rate-limit.ts';
import { Transport } from './transport.ts';

export { PayHere } from './payhere.ts';

/** PayHere's connect budget: a handshake that takes longer than this will not finish usefully. */
export const CONNECT_TIMEOUT_MS = 3_000;

export interface PayHereOptions {
  credentials?: CredentialsProvider;
  /** Clock and sleep of the rate limiter (tests drive them by hand). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  transport?: Transport;
}

export function createPayHere(config: Config, options: PayHereOptions = {}): PayHere {
  return new PayHere(
    new GatewayClient({
      transport:
        options.transport ?? new Transport(config.gatewayBaseUrl, { connectTimeoutMs: CONNECT_TIMEOUT_MS }),
      credentials: options.credentials ?? credentialsFor(config),
      limiter: new SlidingWindowLimiter({
        ...config.rateLimit,
        ...(options.now ? { now: options.now } : {}),
        ...(options.sleep ? { sleep: options.sleep } : {}),
      }),
    }),
  );
}

/** The container's PayHere client, built from the environment at start-up (a bad variable fails here). */
export function payHereFromEnvironment(): PayHere {
  return createPayHere(loadConfig(process.env));
}
