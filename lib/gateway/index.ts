import { type Config, type CredentialsProvider, environmentCredentials, loadConfig } from '../config.ts';
import { GatewayClient } from './client.ts';
import { PayHere } from './payhere.ts';
import { SlidingWindowLimiter } from './rate-limit.ts';
import { Transport } from './transport.ts';

export { PayHere } from './payhere.ts';

/** PayHere's connect budget: a handshake that takes longer than this will not finish usefully. */
const CONNECT_TIMEOUT_MS = 3_000;

export function createPayHere(config: Config, credentials?: CredentialsProvider): PayHere {
  const provider = credentials ?? credentialsFor(config);
  return new PayHere(
    new GatewayClient({
      transport: new Transport(config.gatewayBaseUrl, { connectTimeoutMs: CONNECT_TIMEOUT_MS }),
      credentials: provider,
      limiter: new SlidingWindowLimiter(config.rateLimit),
    }),
  );
}

function credentialsFor(config: Config): CredentialsProvider {
  if (config.credentials.source === 'env') return environmentCredentials(config.credentials.value);
  throw new Error('GATEWAY_SECRET_ID is not supported yet: set GATEWAY_APP_ID and GATEWAY_APP_SECRET.');
}

/** The container's PayHere client, built from the environment at start-up (a bad variable fails here). */
export function payHereFromEnvironment(): PayHere {
  return createPayHere(loadConfig(process.env));
}
