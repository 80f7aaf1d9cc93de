/** The light DynamoDB layer every table's store uses (see ./client.ts for why it exists). */
export {
  DynamoDBClient,
  type DynamoDbClientOptions,
  environmentCredentials,
  type SendOptions,
} from './client.ts';
export * from './commands.ts';
export { DynamoDbAbortError, DynamoDbError, DynamoDbTimeoutError } from './errors.ts';
