import { type AwsClientOptions, type AwsJsonApi, AwsJsonClient, type SendOptions } from './client.ts';

/**
 * Secrets Manager's one operation the service uses, through the light AWS JSON client: the SDK's
 * client stayed in every function bundle even when imported lazily, and its
 * code was parsed at every cold start (docs/performance.md "Performance").
 */

const SECRETS_MANAGER: AwsJsonApi = {
  signingName: 'secretsmanager',
  label: 'SecretsManager',
  contentType: 'application/x-amz-json-1.1',
  targetPrefix: 'secretsmanager',
};

export interface GetSecretValueInput {
  /** The secret's name or ARN. */
  SecretId: string;
}

/** The fields of the answer the service reads (Secrets Manager sends more: ARN, dates, stages). */
export interface GetSecretValueOutput {
  SecretString?: string | undefined;
  Name?: string | undefined;
  VersionId?: string | undefined;
}

export class SecretsManagerClient {
  readonly #client: AwsJsonClient;

  constructor(options: AwsClientOptions) {
    this.#client = new AwsJsonClient(SECRETS_MANAGER, options);
  }

  /** The secret's current value; a refusal as Secrets Manager names it (`ResourceNotFoundException`). */
  async getSecretValue(input: GetSecretValueInput, options: SendOptions = {}): Promise<GetSecretValueOutput> {
    return (await this.#client.send('GetSecretValue', input, options)) as GetSecretValueOutput;
  }
}
