import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { amzDate, signRequest } from '../../lib/aws/sign.ts';

/** node:crypto under the hash interface the SDK's signer takes (an HMAC when given a key). */
class NodeSha256 {
  readonly #hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    const key = secret === undefined ? undefined : toBuffer(secret);
    this.#hash = key ? createHmac('sha256', key) : createHash('sha256');
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#hash.update(toBuffer(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
}

function toBuffer(data: string | ArrayBuffer | ArrayBufferView): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

const HEADERS = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.PutItem' };
const BODY = JSON.stringify({
  TableName: 'payhere-payments-api-prod-ledger',
  Item: { pk: { S: 'order#Order-1' }, amount: { N: '34567' }, note: { S: 'Ünïcödé  two  spaces' } },
  ConditionExpression: 'attribute_not_exists(pk)',
});

/** What the AWS SDK's own signer sends for the same request. */
async function sdkSignature(
  url: URL,
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
  region: string,
  now: Date,
) {
  // applyChecksum off: the signer would add x-amz-content-sha256, which only S3 requires.
  const signer = new SignatureV4({
    credentials,
    region,
    service: 'dynamodb',
    sha256: NodeSha256,
    applyChecksum: false,
  });
  const signed = await signer.sign(
    {
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: '/',
      query: {},
      headers: { ...HEADERS, host: url.host },
      body: BODY,
    },
    { signingDate: now },
  );
  return signed.headers as Record<string, string>;
}

describe('SigV4 signing of a DynamoDB request', () => {
  const now = new Date('2026-11-23T09:15:42.123Z');

  it.each([
    [
      'long-term credentials on the regional endpoint',
      'https://dynamodb.ap-south-1.amazonaws.com/',
      undefined,
    ],
    [
      'a session token (Lambda role credentials)',
      'https://dynamodb.ap-south-1.amazonaws.com/',
      'FwoGZXIvYXdzEXAMPLE//token==',
    ],
    ['a local endpoint with a port', 'http://127.0.0.1:4567', undefined],
  ])('agrees with the AWS SDK signer: %s', async (_case, endpoint, sessionToken) => {
    // Prepare
    const url = new URL(endpoint);
    const credentials = {
      accessKeyId: 'AKIDEXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
      ...(sessionToken ? { sessionToken } : {}),
    };

    // Act
    const ours = signRequest(
      { url, headers: HEADERS, body: BODY },
      {
        region: 'ap-south-1',
        service: 'dynamodb',
        credentials,
        now,
      },
    );
    const sdk = await sdkSignature(url, credentials, 'ap-south-1', now);

    // Assess
    expect(ours.authorization).toBe(sdk.authorization);
    expect(ours['x-amz-date']).toBe(sdk['x-amz-date']);
    expect(ours['x-amz-security-token']).toBe(sdk['x-amz-security-token']);
  });

  it('changes the signature with the body, the region, the secret and the day', () => {
    const url = new URL('https://dynamodb.ap-south-1.amazonaws.com/');
    const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret-1' };
    const sign = (changes: { body?: string; region?: string; secret?: string; now?: Date }) =>
      signRequest(
        { url, headers: HEADERS, body: changes.body ?? BODY },
        {
          region: changes.region ?? 'ap-south-1',
          service: 'dynamodb',
          credentials: { ...credentials, secretAccessKey: changes.secret ?? credentials.secretAccessKey },
          now: changes.now ?? now,
        },
      ).authorization;

    const base = sign({});
    const others = [
      sign({ body: `${BODY} ` }),
      sign({ region: 'eu-west-1' }),
      sign({ secret: 'secret-2' }),
      sign({ now: new Date('2026-11-24T09:15:42.123Z') }),
    ];

    expect(new Set([base, ...others]).size).toBe(5);
    // The key cached for one day and secret is not used for another.
    expect(sign({})).toBe(base);
  });

  it('writes the date in the basic format SigV4 wants', () => {
    expect(amzDate(new Date('2015-08-30T12:36:00.000Z'))).toBe('20150830T123600Z');
  });
});
