import type { JSONWebKeySet } from 'jose';
import { ConfigError, type Env, httpsUrl, required } from '../../config/config.ts';

/** Who issues the tokens the service accepts, and where their public keys are. */
export interface AuthConfig {
  issuer: string;
  audience: string;
  /** An inline JWKS saves a fetch on every cold start; a URL follows the issuer's key rotation. */
  keys: { source: 'inline'; jwks: JSONWebKeySet } | { source: 'url'; url: URL };
}

/** Public asymmetric keys only: a private or shared-secret key has no business in configuration. */
function inlineJwks(value: string): JSONWebKeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError('Invalid configuration: AUTH_JWKS must be a JSON Web Key Set ({"keys":[...]}).');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((key) => typeof key === 'object' && key)) {
    throw new ConfigError('Invalid configuration: AUTH_JWKS must be a JSON Web Key Set ({"keys":[...]}).');
  }
  for (const key of keys as Record<string, unknown>[]) {
    if (!['RSA', 'EC', 'OKP'].includes(String(key.kty)) || 'd' in key || 'k' in key) {
      throw new ConfigError('Invalid configuration: AUTH_JWKS must hold public RSA, EC or OKP keys only.');
    }
  }
  return parsed as JSONWebKeySet;
}

export function loadAuthConfig(env: Env): AuthConfig {
  const issuer = required(env, 'AUTH_ISSUER');
  const audience = required(env, 'AUTH_AUDIENCE');
  const inline = env.AUTH_JWKS?.trim();
  const url = env.AUTH_JWKS_URL?.trim();
  if (inline && url)
    throw new ConfigError('Invalid configuration: set AUTH_JWKS_URL or AUTH_JWKS, not both.');
  if (!inline && !url) throw new ConfigError('Missing configuration: set AUTH_JWKS_URL or AUTH_JWKS.');
  return {
    issuer,
    audience,
    // Keys fetched over plain HTTP could be swapped on the way: only a local issuer may use http.
    keys: inline
      ? { source: 'inline', jwks: inlineJwks(inline) }
      : { source: 'url', url: httpsUrl('AUTH_JWKS_URL', url!) },
  };
}
