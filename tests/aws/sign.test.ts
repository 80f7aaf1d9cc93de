import { describe, expect, it } from 'vitest';
import { signRequest } from '../../lib/aws/sign.ts';

/**
 * AWS's own signer signs, so what is tested here is our use of it: what lib/aws/sign.ts hands it
 * (the URL as it goes on the wire, the headers, the body, the session token, the date) and what it
 * gives back to send. Held to signatures AWS published: the POST cases of the Signature Version 4
 * test suite (AKIDEXAMPLE, 2015-08-30T12:36:00Z, us-east-1, the service `service`).
 */
const SUITE = {
  region: 'us-east-1',
  service: 'service',
  now: new Date('2015-08-30T12:36:00Z'),
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
};
const SUITE_TOKEN =
  'AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==';
const authorization = (signedHeaders: string, signature: string) =>
  `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=${signedHeaders}, Signature=${signature}`;

describe("SigV4 signing, held to AWS's test suite", () => {
  it.each([
    {
      case: 'post-vanilla',
      url: 'https://example.amazonaws.com/',
      expected: authorization(
        'host;x-amz-date',
        '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b',
      ),
    },
    {
      case: 'post-vanilla-query',
      url: 'https://example.amazonaws.com/?Param1=value1',
      expected: authorization(
        'host;x-amz-date',
        '28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11',
      ),
    },
    {
      case: 'post-x-www-form-urlencoded',
      url: 'https://example.amazonaws.com/',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Param1=value1',
      expected: authorization(
        'content-type;host;x-amz-date',
        'ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a',
      ),
    },
    {
      // Lambda's role credentials: the token is sent and signed.
      case: 'post-sts-header-before',
      url: 'https://example.amazonaws.com/',
      sessionToken: SUITE_TOKEN,
      expected: authorization(
        'host;x-amz-date;x-amz-security-token',
        '85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead',
      ),
    },
  ] as Array<{
    case: string;
    url: string;
    headers?: Record<string, string>;
    body?: string;
    sessionToken?: string;
    expected: string;
  }>)('$case', async ({ url, headers = {}, body = '', sessionToken, expected }) => {
    // Act
    const signed = await signRequest(
      { url: new URL(url), headers, body },
      { ...SUITE, credentials: { ...SUITE.credentials, ...(sessionToken ? { sessionToken } : {}) } },
    );

    // Assess: what the client sends besides `host` (it adds that from the same URL).
    expect(signed).toEqual({
      ...headers,
      'x-amz-date': '20150830T123600Z',
      ...(sessionToken ? { 'x-amz-security-token': sessionToken } : {}),
      authorization: expected,
    });
  });
});

describe('SigV4 signing of a DynamoDB request', () => {
  const HEADERS = {
    'content-type': 'application/x-amz-json-1.0',
    'x-amz-target': 'DynamoDB_20120810.PutItem',
  };
  const BODY = JSON.stringify({
    TableName: 'payhere-payments-api-prod-ledger',
    Item: { pk: { S: 'order#Order-1' }, amount: { N: '34567' }, note: { S: 'Ünïcödé  two  spaces' } },
  });
  const now = new Date('2026-11-23T09:15:42.123Z');
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret-1' };
  const sign = (changes: { body?: string; region?: string; secret?: string; now?: Date; url?: string }) =>
    signRequest(
      {
        url: new URL(changes.url ?? 'https://dynamodb.ap-south-1.amazonaws.com/'),
        headers: HEADERS,
        body: changes.body ?? BODY,
      },
      {
        region: changes.region ?? 'ap-south-1',
        service: 'dynamodb',
        credentials: { ...credentials, secretAccessKey: changes.secret ?? credentials.secretAccessKey },
        now: changes.now ?? now,
      },
    );

  it('signs every header it sends, in the scope of the day, region and service', async () => {
    const signed = await sign({});

    expect(signed['x-amz-date']).toBe('20261123T091542Z');
    expect(signed.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20261123\/ap-south-1\/dynamodb\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=[0-9a-f]{64}$/,
    );
  });

  it('changes the signature with the body, the region, the secret, the day and the endpoint', async () => {
    const signatures = await Promise.all([
      sign({}),
      sign({ body: `${BODY} ` }),
      sign({ region: 'eu-west-1' }),
      sign({ secret: 'secret-2' }),
      sign({ now: new Date('2026-11-24T09:15:42.123Z') }),
      // The local endpoint's port is part of the signed host.
      sign({ url: 'http://127.0.0.1:4567' }),
      sign({ url: 'http://127.0.0.1:4568' }),
    ]);

    expect(new Set(signatures.map((headers) => headers.authorization)).size).toBe(7);
    // The same request signed again, the day's key kept: the same signature.
    expect((await sign({})).authorization).toBe(signatures[0]!.authorization);
  });
});
