import { describe, expect, it } from 'vitest';
import { amzDate, signRequest } from '../../lib/aws/sign.ts';
import { signRequest as awsSignRequest } from '../helpers/aws-signer.ts';

const HEADERS = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.PutItem' };
const BODY = JSON.stringify({
  TableName: 'payhere-payments-api-prod-ledger',
  Item: { pk: { S: 'order#Order-1' }, amount: { N: '34567' }, note: { S: 'Ünïcödé  two  spaces' } },
  ConditionExpression: 'attribute_not_exists(pk)',
});

/** A query as a client puts it on the wire: each name and value URI-encoded (a space as %20, never +). */
const onTheWire = (query: Record<string, string | string[]>) =>
  Object.entries(query)
    .flatMap(([name, values]) =>
      [values].flat().map((value) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`),
    )
    .join('&');

describe('SigV4 signing of a DynamoDB request', () => {
  const now = new Date('2026-11-23T09:15:42.123Z');

  it.each([
    {
      case: 'long-term credentials on the regional endpoint',
      endpoint: 'https://dynamodb.ap-south-1.amazonaws.com/',
    },
    {
      case: 'a session token (Lambda role credentials)',
      endpoint: 'https://dynamodb.ap-south-1.amazonaws.com/',
      sessionToken: 'FwoGZXIvYXdzEXAMPLE//token==',
    },
    { case: 'a local endpoint with a port', endpoint: 'http://127.0.0.1:4567' },
    {
      // Spaces, reserved and non-ASCII characters in the path (an empty segment, a trailing slash)
      // and in the query; `a` sorts before `a-b` (by name, not by `name=value`), `a%3A` before `a0`
      // (once encoded).
      case: 'a path and a query that need encoding, with a session token',
      endpoint: "https://dynamodb.ap-south-1.amazonaws.com/tables//ledger 2026/ünï:cödé/it's(*)/",
      query: {
        'b name': 'two words',
        a: ['x/y*', '(é)', ''],
        'a-b': '1',
        'a:': '~ok-_.',
        a0: 'plus+sign',
        é: '=&?',
      },
      sessionToken: 'FwoGZXIvYXdzEXAMPLE//token==',
    },
  ] as Array<{
    case: string;
    endpoint: string;
    query?: Record<string, string | string[]>;
    sessionToken?: string;
  }>)(
    "agrees with AWS's signer, set up as the SDK sets it up: $case",
    async ({ endpoint, query = {}, sessionToken }) => {
      // Prepare
      const url = new URL(endpoint);
      url.search = onTheWire(query);
      const credentials = {
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
        ...(sessionToken ? { sessionToken } : {}),
      };

      // Act
      const request = { url, headers: HEADERS, body: BODY };
      const scope = { region: 'ap-south-1', service: 'dynamodb', credentials, now };
      const ours = signRequest(request, scope);
      const aws = await awsSignRequest(request, scope);

      // Assess
      expect(ours.authorization).toBe(aws.authorization);
      expect(ours['x-amz-date']).toBe(aws['x-amz-date']);
      expect(ours['x-amz-security-token']).toBe(aws['x-amz-security-token']);
    },
  );

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
