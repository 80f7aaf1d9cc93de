import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * AWS Signature Version 4 for one POST, by AWS's own signer (`@smithy/signature-v4`, what the SDK
 * signs with) over node:crypto's SHA-256 (`@smithy/core/checksum` in Node), rather than a signer
 * of our own. The functions' build resolves it to its ES modules (serverless.yml's `mainFields`):
 * its CommonJS files bring @smithy/core's parts whole. What it costs a cold container's first
 * DynamoDB request is in docs/performance.md. tests/aws/sign.test.ts holds what this sends to
 * AWS's documented signatures.
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

/**
 * The headers to send: the request's own, `x-amz-date`, the session token if any, and
 * `authorization`. Every header sent is signed, so none can be changed on the way.
 */
export async function signRequest(
  request: SignableRequest,
  scope: SigningScope,
): Promise<Record<string, string>> {
  const { url } = request;
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of url.searchParams) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [seen, value].flat();
  }
  // Cheap to build: the signer keeps the keys it derives (per day, region, service and
  // credentials) in a cache of its own, shared by every instance.
  const signer = new SignatureV4({
    credentials: scope.credentials,
    region: scope.region,
    service: scope.service,
    sha256: Sha256,
    // x-amz-content-sha256 is S3's; the other services sign the body's hash without sending it.
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query,
      headers: { ...request.headers, host: url.host },
      body: request.body,
    },
    { signingDate: scope.now },
  );
  // The client sends `host` itself, from the same URL.
  const { host: _host, ...headers } = signed.headers;
  return headers;
}
