import { describe, expect, it, vi } from 'vitest';
import { refundBookkeeping } from '../../bench/warm.ts';
import { DynamoDBClient } from '../../lib/dynamodb/index.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import { call, useTestGateway } from '../helpers/gateway.ts';
import { testLedger } from '../helpers/orders.ts';
import { chargeBody } from '../resilience/fixtures.ts';

/**
 * The bench's refund floor (bench/warm.ts refundBookkeeping) stands for what the refund route itself
 * asks of the ledger, so that the bench's "our code over the floor" counts none of those round trips
 * as the service's own: the same ledger requests, item for item, as a merchant's refund through the
 * handler sends (less the events' relay, which runs after the answer).
 */
useTestGateway({ beforeEachTest: 'keepTokens' });
const ledger = testLedger();

/** Each ledger request `work` sends: its operation and the kind of item it names, in order sent. */
async function ledgerRequests(work: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const send = DynamoDBClient.prototype.send;
  vi.spyOn(DynamoDBClient.prototype, 'send').mockImplementation(function (
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
    // The relay's publication of the events, after the answer, is no part of the request.
    const relay = input.UpdateExpression?.startsWith('REMOVE #outbox') === true;
    if (input.TableName === process.env.LEDGER_TABLE && !relay) {
      const pk = input.Key?.pk?.S ?? input.Item?.pk?.S ?? '';
      sent.push(`${command.operation} ${pk.slice(0, pk.indexOf('#') + 1)}`);
    }
    return send.call(this, command, options);
  });
  await work();
  vi.restoreAllMocks();
  return sent;
}

async function chargedPayment(): Promise<string> {
  const charged = await call('charge', { body: chargeBody() });
  expect(charged.statusCode).toBe(200);
  await backgroundSettled();
  return String(charged.body.data.payment_id);
}

describe('the bench’s refund floor', () => {
  it('asks the ledger for what a merchant’s refund through the route asks it', async () => {
    const routePayment = await chargedPayment();
    const floorPayment = await chargedPayment();
    const body = { payment_id: routePayment, amount: 20, description: 'Broken' };

    const route = await ledgerRequests(async () => {
      const refunded = await call('refund', { body });
      expect(refunded.statusCode).toBe(200);
    });
    const floor = await ledgerRequests(() =>
      refundBookkeeping(ledger, JSON.stringify({ ...body, payment_id: floorPayment }), async () =>
        JSON.stringify({ status: 1, msg: 'Refund accepted', data: { refund_id: 1 } }),
      ),
    );

    expect(route.length).toBeGreaterThan(0);
    // Requests sent together may leave in either order: the same requests, counted.
    expect([...floor].sort()).toEqual([...route].sort());
  });
});
