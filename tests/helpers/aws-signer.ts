import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { SignableRequest, SigningScope } from '../../lib/aws/sign.ts';

export type { AwsCredentials } from '../../lib/aws/sign.ts';

/**
 * lib/aws/sign.ts's signRequest done by AWS's own signer, set up as the SDK sets it up (its Node
 * SHA-256): what tests/aws/sign.test.ts holds ours to, and what the bench builds lib/aws/client.ts
 * with in place of ours to weigh the two (bench/candidates.ts). Asynchronous, as AWS's
 * signer is. The query's names and values are read by the platform's URLSearchParams, not by our
 * signer's own reading.
 */
export async function signRequest(
  request: SignableRequest,
  scope: SigningScope,
): Promise<Record<string, string>> {
  const { url } = request;
  const query: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) {
    query[name] = [...(query[name] ?? []), value];
  }
  // applyChecksum off: the signer would add x-amz-content-sha256, which only S3 requires.
  const signer = new SignatureV4({
    credentials: scope.credentials,
    region: scope.region,
    service: scope.service,
    sha256: Sha256,
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
  const { host: _host, ...headers } = signed.headers;
  return headers;
}
