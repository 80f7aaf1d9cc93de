/**
 * One local DynamoDB (scripts/local-dynamodb.ts, on loopback) in a process of its own, for
 * tests/setup/dynamodb.ts: it prints its endpoint as one JSON line once its tables exist, and stops
 * when its parent closes its stdin (or goes away).
 */
import { createLocalTables, startLocalDynamoDB } from '../../scripts/local-dynamodb.ts';

const dynamodb = await startLocalDynamoDB();
await createLocalTables(dynamodb.endpoint);
process.stdout.write(`${JSON.stringify({ endpoint: dynamodb.endpoint })}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void dynamodb.close().finally(() => process.exit(0));
});
