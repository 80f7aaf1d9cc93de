import { createHash, createHmac } from 'node:crypto';

/**
 * AWS Signature Version 4 for one POST, over node:crypto. Ours, not AWS's own signer
 * (`@smithy/signature-v4`): built as the functions are built, its import and first signature cost a
 * cold start tens of milliseconds more than these lines, where 5 would have been worth paying for
 * AWS's code ("The candidates" in bench/RESULTS.md, docs/performance.md "Performance"). Not `aws4fetch`: it
 * signs through WebCrypto's async API, with a retry policy of its own to switch off.
 * tests/aws/sign.test.ts holds every signature to AWS's signer: session tokens, a path and a query
 * that need encoding, a body with non-ASCII characters.
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials' token (Lambda's role credentials always have one). */
  sessionToken?: string | undefined;
}

export interface SignableRequest {
  /** Sent as it is: its path and query are signed as they go on the wire. */
  url: URL;
  /** Header names in lower case; `host` is added from the URL (lib/aws/client.ts sends the same). */
  headers: Record<string, string>;
  body: string;
}

export interface SigningScope {
  region: string;
  service: string;
  credentials: AwsCredentials;
  /** When the request is signed; AWS refuses a signature more than 5 minutes off. */
  now: Date;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';

const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text, 'utf8').digest();

/** SigV4's UriEncode: every byte but RFC 3986's unreserved characters (A-Z a-z 0-9 - . _ ~) as %XX. */
const uriEncode = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The path as it goes on the wire (the URL has resolved `.` and `..`), empty segments dropped,
 * each segment encoded once more: AWS signs a path encoded twice, S3's alone excepted.
 */
function canonicalPath(url: URL): string {
  const segments = url.pathname.split('/').filter((segment) => segment !== '');
  if (segments.length === 0) return '/';
  return `/${segments.map(uriEncode).join('/')}${url.pathname.endsWith('/') ? '/' : ''}`;
}

/**
 * Each name and value of the query as it goes on the wire, decoded and encoded again by UriEncode,
 * sorted by name, then by value (`a` before `a-b`, whatever their values).
 */
function canonicalQuery(url: URL): string {
  const pairs: Array<[name: string, value: string]> = [];
  for (const pair of url.search.slice(1).split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const [name, value] = at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
    pairs.push([uriEncode(decodeURIComponent(name)), uriEncode(decodeURIComponent(value))]);
  }
  const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  pairs.sort(([nameA, valueA], [nameB, valueB]) => byCodeUnit(nameA, nameB) || byCodeUnit(valueA, valueB));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

/** 20150830T123600Z: ISO 8601 basic format, as SigV4 wants it. */
export function amzDate(now: Date): string {
  return now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/**
 * The signing key depends only on the secret, the day, the region and the service: derived again
 * when one of them changes (a DynamoDB request after a Secrets Manager one), not per request.
 */
let cachedKey: { secret: string; scope: string; key: Buffer } | undefined;

function signingKey(secret: string, day: string, region: string, service: string): Buffer {
  const scope = `${day}/${region}/${service}`;
  if (cachedKey?.secret !== secret || cachedKey.scope !== scope) {
    const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, day), region), service), 'aws4_request');
    cachedKey = { secret, scope, key };
  }
  return cachedKey.key;
}

/**
 * The headers to send: the request's own, `x-amz-date`, the session token if any, and
 * `authorization`. Every header sent is signed, so none can be changed on the way.
 */
export function signRequest(request: SignableRequest, scope: SigningScope): Record<string, string> {
  const date = amzDate(scope.now);
  const day = date.slice(0, 8);
  const headers: Record<string, string> = { ...request.headers, 'x-amz-date': date };
  if (scope.credentials.sessionToken) headers['x-amz-security-token'] = scope.credentials.sessionToken;
  const signed: Record<string, string> = { ...headers, host: request.url.host };
  const names = Object.keys(signed).sort();
  const canonicalHeaders = names
    .map((name) => `${name}:${signed[name]!.trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    'POST',
    canonicalPath(request.url),
    canonicalQuery(request.url),
    canonicalHeaders,
    signedHeaders,
    sha256Hex(request.body),
  ].join('\n');
  const credentialScope = `${day}/${scope.region}/${scope.service}/aws4_request`;
  const stringToSign = [ALGORITHM, date, credentialScope, sha256Hex(canonicalRequest)].join('\n');
  const key = signingKey(scope.credentials.secretAccessKey, day, scope.region, scope.service);
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  headers.authorization =
    `${ALGORITHM} Credential=${scope.credentials.accessKeyId}/${credentialScope}, ` +
    `SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return headers;
}
