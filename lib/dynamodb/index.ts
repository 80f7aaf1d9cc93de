/**
 * The light DynamoDB layer every table's store uses (see ./client.ts for why it exists); its
 * errors are lib/aws/errors.ts's, matched by name.
 */
export { awsCredentialsFromEnvironment, type SendOptions } from '../aws/client.ts';
export { BATCH_GET_KEYS, batchGet } from './batch.ts';
export { DynamoDBClient, type DynamoDbClientOptions, sendConditional } from './client.ts';
export * from './commands.ts';
