/**
 * A DynamoDB-compatible server (dynalite, in memory) on loopback for `npm start` and the tests,
 * with the service's tables created. No AWS account, no Docker, no mock.
 */
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';

/**
 * The table name serverless.yml gives the functions for `--stage local`
 * (`${self:service}-${sls:stage}-idempotency`); tests/e2e checks that the two agree.
 */
export const LOCAL_IDEMPOTENCY_TABLE = 'payhere-payments-api-local-idempotency';
/** The ledger's table for `--stage local` (`${self:service}-${sls:stage}-ledger`). */
export const LOCAL_LEDGER_TABLE = 'payhere-payments-api-local-ledger';

/** The shared budget's and token's table for `--stage local` (`${self:service}-${sls:stage}-state`). */
export const LOCAL_STATE_TABLE = 'payhere-payments-api-local-state';

/** What the functions read to find the local tables (serverless.yml gives the same names for `--stage local`). */
export const LOCAL_TABLES_ENVIRONMENT = {
  IDEMPOTENCY_TABLE: LOCAL_IDEMPOTENCY_TABLE,
  LEDGER_TABLE: LOCAL_LEDGER_TABLE,
  STATE_TABLE: LOCAL_STATE_TABLE,
} as const;

/**
 * Credentials and region for talking to dynalite, which checks neither. Fake on purpose: they keep
 * the SDK from looking for real credentials (files, the instance metadata service) on this machine.
 */
export const LOCAL_AWS_ENVIRONMENT = {
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_REGION: 'ap-south-1',
} as const;

export interface LocalDynamoDB {
  endpoint: string;
  close(): Promise<void>;
}

export async function startLocalDynamoDB(options: { port?: number } = {}): Promise<LocalDynamoDB> {
  // Tables are ACTIVE at once: nothing local should wait for a simulated creation.
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections?.();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * A table as serverless.yml declares the service's tables (key `pk`). dynalite has no TTL deletion;
 * the stores treat expired items as absent anyway, as they must with DynamoDB's lazy deletion
 * (the state table's items only carry `expiresAt` so that an idle table empties itself).
 */
export async function createTable(
  endpoint: string,
  table: string,
  options: { settleIndex?: boolean } = {},
): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: LOCAL_AWS_ENVIRONMENT.AWS_REGION,
    credentials: {
      accessKeyId: LOCAL_AWS_ENVIRONMENT.AWS_ACCESS_KEY_ID,
      secretAccessKey: LOCAL_AWS_ENVIRONMENT.AWS_SECRET_ACCESS_KEY,
    },
  });
  try {
    await client.send(
      new CreateTableCommand({
        TableName: table,
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          ...(options.settleIndex
            ? [
                { AttributeName: 'settleQueue', AttributeType: 'S' as const },
                { AttributeName: 'settleAt', AttributeType: 'N' as const },
              ]
            : []),
        ],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
        // The settle job's index, as serverless.yml declares it on the idempotency table and the ledger.
        ...(options.settleIndex
          ? {
              GlobalSecondaryIndexes: [
                {
                  IndexName: 'settle',
                  KeySchema: [
                    { AttributeName: 'settleQueue', KeyType: 'HASH' as const },
                    { AttributeName: 'settleAt', KeyType: 'RANGE' as const },
                  ],
                  Projection: { ProjectionType: 'KEYS_ONLY' as const },
                },
              ],
            }
          : {}),
      }),
    );
    // dynalite answers CreateTable with CREATING and turns the table ACTIVE on its next tick; a
    // request in between gets ResourceNotFoundException, so a fast first write could miss it.
    for (let waited = 0; ; waited += 5) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
      if (Table?.TableStatus === 'ACTIVE') break;
      if (waited >= 5_000) throw new Error(`table ${table} is still ${Table?.TableStatus} after 5 s`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    client.destroy();
  }
}

/** Every table the functions use, under the names `--stage local` gives them. */
export async function createLocalTables(endpoint: string): Promise<void> {
  await Promise.all([
    createTable(endpoint, LOCAL_IDEMPOTENCY_TABLE, { settleIndex: true }),
    createTable(endpoint, LOCAL_LEDGER_TABLE, { settleIndex: true }),
    createTable(endpoint, LOCAL_STATE_TABLE),
  ]);
}
