import { vi } from 'vitest';
import { DynamoDBClient } from '../../lib/dynamodb/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';

/**
 * Each ledger request `work` sends (what it started in the background included): its operation and
 * the kind of item it names, in order sent. The relay's publication of the events, after the
 * answer, is no part of the request and is left out.
 */
export async function ledgerRequests(work: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const send = DynamoDBClient.prototype.send;
  const spy = vi.spyOn(DynamoDBClient.prototype, 'send').mockImplementation(function (
    this: DynamoDBClient,
    command,
    options,
  ) {
    const input = command.input as {
      TableName?: string;
      Key?: { pk?: { S?: string } };
      Item?: { pk?: { S?: string } };
      UpdateExpression?: string;
    };
    const relay = input.UpdateExpression?.startsWith('REMOVE #outbox') === true;
    if (input.TableName === process.env.LEDGER_TABLE && !relay) {
      const pk = input.Key?.pk?.S ?? input.Item?.pk?.S ?? '';
      sent.push(`${command.operation} ${pk.slice(0, pk.indexOf('#') + 1)}`);
    }
    return send.call(this, command, options);
  });
  try {
    await work();
    await backgroundSettled();
  } finally {
    // Only this spy: a failing `work` leaves no client patched for the tests after it.
    spy.mockRestore();
  }
  return sent;
}
