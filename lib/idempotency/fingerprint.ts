import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth and no whitespace, so two requests that parse to
 * the same value have the same text whatever the client's key order or spacing. Array order is
 * meaning (item lines), so it is kept. Properties whose value is undefined are left out, as
 * JSON.stringify does: a validated body never holds one, and an absent field is the same request.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (value === undefined) return 'null';
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new TypeError('canonicalJson: a non-finite number has no JSON form');
    }
    if (typeof value === 'bigint' || typeof value === 'function' || typeof value === 'symbol') {
      throw new TypeError(`canonicalJson: a ${typeof value} has no JSON form`);
    }
    // -0 and 0 are the same amount; JSON.stringify already writes both as 0.
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/**
 * What a repeat must match to be "the same request": the validated body and path parameters
 * (not the raw text), and the customer a merchant acts for. The route and the caller are part of
 * the record's key, not of this.
 */
export function requestFingerprint(request: { body: unknown; path: unknown; onBehalfOf?: string }): string {
  const canonical = canonicalJson({
    body: request.body ?? null,
    path: request.path ?? null,
    // Only when present, so that every other request keeps the fingerprint it always had.
    ...(request.onBehalfOf === undefined ? {} : { onBehalfOf: request.onBehalfOf }),
  });
  return createHash('sha256').update(canonical).digest('hex');
}
