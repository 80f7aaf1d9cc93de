import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { inject } from 'vitest';
import { SharedStateTable } from '../../lib/budget/state-table.ts';
import {
  type AttributeValue,
  DeleteItemCommand,
  DynamoDBClient,
  ScanCommand,
} from '../../lib/dynamodb/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { createTable, LOCAL_AWS_ENVIRONMENT } from '../../scripts/local-dynamodb.ts';

/**
 * A DynamoDB client for `endpoint` with one attempt per request, as fault tests want to see them
 * (or `maxAttempts`, as the functions' clients retry).
 */
export function dynamoDbAt(endpoint: string, maxAttempts = 1): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: LOCAL_AWS_ENVIRONMENT.AWS_REGION,
    credentials: () => ({
      accessKeyId: LOCAL_AWS_ENVIRONMENT.AWS_ACCESS_KEY_ID,
      secretAccessKey: LOCAL_AWS_ENVIRONMENT.AWS_SECRET_ACCESS_KEY,
    }),
    maxAttempts,
  });
}

/**
 * Forget every answer the test file's functions shared (items `read#...` of its STATE_TABLE): a
 * sandbox given its seeded data back no longer says what they hold. Answers still being written
 * after their caller's answer (lib/net/background.ts) land first.
 */
export async function forgetSharedReads(table = process.env.STATE_TABLE!): Promise<void> {
  await backgroundSettled();
  const client = dynamoDbAt(inject('dynamodbEndpoint'));
  let from: Record<string, AttributeValue> | undefined;
  do {
    // A scan reads at most 1 MB a call, and a subscription list's snapshot is larger.
    const { Items = [], LastEvaluatedKey } = await client.send(
      new ScanCommand({
        TableName: table,
        FilterExpression: 'begins_with(pk, :read)',
        ExpressionAttributeValues: { ':read': { S: 'read#' } },
        ...(from ? { ExclusiveStartKey: from } : {}),
      }),
    );
    await Promise.all(
      Items.map((item) => client.send(new DeleteItemCommand({ TableName: table, Key: { pk: item.pk! } }))),
    );
    from = LastEvaluatedKey;
  } while (from);
}

/** A new, empty state table in the test run's dynalite, and the name it has. */
export async function freshStateTable(
  options: { endpoint?: string; timeoutMs?: number; attempts?: number } = {},
): Promise<{ table: SharedStateTable; name: string }> {
  const name = `state-${randomUUID()}`;
  await createTable(inject('dynamodbEndpoint'), name);
  const client = dynamoDbAt(options.endpoint ?? inject('dynamodbEndpoint'), options.attempts);
  return {
    table: new SharedStateTable({ client, table: name, timeoutMs: options.timeoutMs ?? 2_000 }),
    name,
  };
}

/**
 * A TCP relay to the test run's dynalite that holds every connection's bytes for `delayMs` while
 * `slow` is set: a table that answers, but too late.
 */
export async function slowRelay(
  delayMs: number,
): Promise<{ endpoint: string; slow: boolean; close(): Promise<void> }> {
  const target = new URL(inject('dynamodbEndpoint'));
  const sockets = new Set<Socket>();
  const state = { slow: true };
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => sockets.delete(socket));
    }
    const relay = (from: Socket, to: Socket) =>
      from.on('data', (chunk) => {
        if (state.slow) setTimeout(() => to.writable && to.write(chunk), delayMs);
        else to.write(chunk);
      });
    relay(client, upstream);
    relay(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get slow() {
      return state.slow;
    },
    set slow(value: boolean) {
      state.slow = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
