/**
 * A Secrets Manager on loopback that speaks the real wire protocol (AWS JSON 1.1: POST / with
 * X-Amz-Target: secretsmanager.GetSecretValue, SigV4-signed for the service `secretsmanager`), so
 * the service's own client (lib/aws/secrets-manager.ts) talks to it over HTTP. It checks the
 * signature's scope, not the signature itself (tests/aws/sign.test.ts holds our signing to AWS's
 * published signatures). It stores secret strings, counts the reads, and can hold answers back to test
 * sharing.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SANDBOX_CREDENTIALS } from '../../sandbox/server.ts';

export interface FakeSecretsManager {
  endpoint: string;
  /** Secret id (name or ARN) → SecretString. */
  secrets: Map<string, string>;
  /** How many GetSecretValue requests arrived. */
  reads(): number;
  /** Hold every answer until the returned function is called. */
  hold(): () => void;
  close(): Promise<void>;
}

function error(type: string, message: string) {
  return { status: 400, headers: { 'x-amzn-errortype': type }, body: { __type: type, message } };
}

export async function startFakeSecretsManager(): Promise<FakeSecretsManager> {
  const secrets = new Map<string, string>();
  let reads = 0;
  let gate: Promise<void> | undefined;

  const server: Server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    const target = req.headers['x-amz-target'];
    let answer: { status: number; headers?: Record<string, string>; body: unknown };
    const signedFor = /^AWS4-HMAC-SHA256 Credential=[^/]+\/\d{8}\/[a-z0-9-]+\/([a-z]+)\/aws4_request, /.exec(
      req.headers.authorization ?? '',
    )?.[1];
    if (req.method !== 'POST' || target !== 'secretsmanager.GetSecretValue') {
      answer = error('UnknownOperationException', `Unsupported ${req.method} ${String(target)}`);
    } else if (signedFor !== 'secretsmanager') {
      answer = error('IncompleteSignatureException', 'The request is not signed for secretsmanager.');
    } else {
      reads++;
      const { SecretId } = JSON.parse(text) as { SecretId: string };
      const value = secrets.get(SecretId);
      answer =
        value === undefined
          ? error('ResourceNotFoundException', "Secrets Manager can't find the specified secret.")
          : {
              status: 200,
              body: {
                ARN: `arn:aws:secretsmanager:ap-south-1:123456789012:secret:${SecretId}-AbCdEf`,
                Name: SecretId,
                SecretString: value,
                VersionId: '00000000-0000-0000-0000-000000000001',
                VersionStages: ['AWSCURRENT'],
                CreatedDate: 1_763_700_000,
              },
            };
    }
    await gate;
    res
      .writeHead(answer.status, { 'content-type': 'application/x-amz-json-1.1', ...answer.headers })
      .end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    secrets,
    reads: () => reads,
    hold: () => {
      let release!: () => void;
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      return () => {
        gate = undefined;
        release();
      };
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The gateway secret's JSON as an operator stores it (the fields lib/config/secrets.ts reads). */
export function gatewaySecret(
  credentials: { appId: string; appSecret: string },
  merchantSecret: string = SANDBOX_CREDENTIALS.merchantSecret,
): string {
  return JSON.stringify({
    app_id: credentials.appId,
    app_secret: credentials.appSecret,
    merchant_id: SANDBOX_CREDENTIALS.merchantId,
    merchant_secret: merchantSecret,
  });
}

/**
 * Configure the functions of this test process as deployed: no gateway credentials in the
 * environment, only GATEWAY_SECRET_ID, read through the loopback Secrets Manager.
 */
export function useSecretCredentials(secrets: FakeSecretsManager, secretId: string): void {
  for (const name of [
    'GATEWAY_APP_ID',
    'GATEWAY_APP_SECRET',
    'GATEWAY_MERCHANT_ID',
    'GATEWAY_MERCHANT_SECRET',
  ]) {
    delete process.env[name];
  }
  Object.assign(process.env, {
    GATEWAY_SECRET_ID: secretId,
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.endpoint,
  });
}
