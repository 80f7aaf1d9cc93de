import { type AwsClientOptions, type AwsJsonApi, AwsJsonClient, type SendOptions } from '../aws/client.ts';
import type { DynamoDbCommand } from './commands.ts';

/**
 * DynamoDB through the light AWS JSON client (lib/aws/), under the SDK's names: it replaces
 * `@aws-sdk/client-dynamodb` in the functions, whose minified client was the largest share of a
 * cold start's imports (docs/performance.md "Performance"). It sends what the stores send
 * (./commands.ts), the SDK's input shapes as they are.
 */

const DYNAMODB: AwsJsonApi = {
  signingName: 'dynamodb',
  label: 'DynamoDB',
  contentType: 'application/x-amz-json-1.0',
  targetPrefix: 'DynamoDB_20120810',
};

export type DynamoDbClientOptions = AwsClientOptions;

export class DynamoDBClient {
  readonly #client: AwsJsonClient;

  constructor(options: DynamoDbClientOptions) {
    this.#client = new AwsJsonClient(DYNAMODB, options);
  }

  /** Send `command`; its answer in the SDK's output shape, or DynamoDB's refusal as a named error. */
  async send<Output>(command: DynamoDbCommand<unknown, Output>, options: SendOptions = {}): Promise<Output> {
    return (await this.#client.send(command.operation, command.input, options)) as Output;
  }
}

/**
 * Send a conditional write through `client`: its answer, or undefined when its condition failed
 * (another writer was first); any other failure (a timeout, throttling, no table) throws.
 */
export async function sendConditional<Output>(
  client: Pick<DynamoDBClient, 'send'>,
  command: DynamoDbCommand<unknown, Output>,
  options: SendOptions = {},
): Promise<Output | undefined> {
  try {
    return await client.send(command, options);
  } catch (error) {
    // Matched by name, as the SDK documents, not by class identity.
    if ((error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException') return undefined;
    throw error;
  }
}
