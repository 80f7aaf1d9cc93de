import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AwsServiceError } from '../../lib/aws/errors.ts';
import { SecretsManagerClient } from '../../lib/aws/secrets-manager.ts';

/**
 * Secrets Manager's GetSecretValue as the light client sends it, seen from the wire: what AWS
 * documents for the JSON 1.1 protocol, and its refusals named by `__type` as the SDK names them.
 */
type Answer = { status: number; body: unknown };
const closers: Array<() => Promise<void>> = [];

async function secretsManager(answers: Answer[]) {
  const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
  const server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
    const answer = answers.shift() ?? { status: 200, body: {} };
    response.writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.1' });
    response.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const clientFor = (endpoint: string, maxAttempts = 2) =>
  new SecretsManagerClient({
    region: 'eu-west-1',
    endpoint,
    maxAttempts,
    credentials: () => ({ accessKeyId: 'AKIDTEST', secretAccessKey: 'secret', sessionToken: 'session' }),
  });

describe('GetSecretValue through the light client', () => {
  it('is POST / in JSON 1.1, the operation in X-Amz-Target, {SecretId} as the body, signed for secretsmanager', async () => {
    // Prepare
    const service = await secretsManager([
      {
        status: 200,
        body: { Name: 'gateway', SecretString: '{"app_id":"a"}', VersionId: 'v1', CreatedDate: 1 },
      },
    ]);

    // Act
    const answer = await clientFor(service.endpoint).getSecretValue({ SecretId: 'gateway' });

    // Assess
    expect(answer).toMatchObject({ SecretString: '{"app_id":"a"}', Name: 'gateway', VersionId: 'v1' });
    const [request] = service.seen;
    expect(request).toMatchObject({ method: 'POST', url: '/' });
    expect(JSON.parse(request!.body)).toEqual({ SecretId: 'gateway' });
    expect(request!.headers['content-type']).toBe('application/x-amz-json-1.1');
    expect(request!.headers['x-amz-target']).toBe('secretsmanager.GetSecretValue');
    expect(request!.headers['x-amz-security-token']).toBe('session');
    expect(request!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/eu-west-1\/secretsmanager\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token;x-amz-target, Signature=[0-9a-f]{64}$/,
    );
  });

  it.each([
    ['ResourceNotFoundException', "Secrets Manager can't find the specified secret."],
    ['AccessDeniedException', 'User is not authorized to perform: secretsmanager:GetSecretValue'],
    ['DecryptionFailure', 'Secrets Manager cannot decrypt the protected secret text'],
  ])('names a refusal %s by its __type and does not repeat it', async (type, message) => {
    const service = await secretsManager([{ status: 400, body: { __type: type, message } }]);

    const error = await clientFor(service.endpoint)
      .getSecretValue({ SecretId: 'gateway' })
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(AwsServiceError);
    expect(error).toMatchObject({ name: type, message, statusCode: 400 });
    expect(service.seen).toHaveLength(1);
  });

  it("tries again after Secrets Manager's own failure", async () => {
    const service = await secretsManager([
      { status: 500, body: { __type: 'InternalServiceError', message: 'oops' } },
      { status: 200, body: { SecretString: 'value' } },
    ]);

    const answer = await clientFor(service.endpoint).getSecretValue({ SecretId: 'gateway' });

    expect(answer.SecretString).toBe('value');
    expect(service.seen).toHaveLength(2);
  });
});
