import { type AttributeValue, batchGet, QueryCommand } from '../dynamodb/index.ts';
import { fromOrderItem, LISTED, timeKey } from './order-item.ts';
import { type ListedOrder, ORDER_LIST_INDEXES } from './order-lists.ts';
import {
  LedgerRefunds,
  type PayHereStatus,
  type PaymentRefunds,
  refundsKey,
  refundsOfItem,
} from './refunds.ts';
import { type LedgerStoreOptions, LedgerTable } from './table.ts';

/** The orders of a time range, as the reconciliation report reads them. */
export interface OrdersInRange {
  /** Oldest first; at most the `max` asked for. */
  orders: ListedOrder[];
  /** The range holds more than `max` orders. */
  more: boolean;
}

/**
 * What the reconciliation report (lib/orders/reconciliation.ts) reads of the ledger, and nothing
 * else: the orders created in a range, from the order list of every order (the `orders` index, by
 * creation time: never a scan), and the refund items of their payments, 100 to a BatchGetItem;
 * and PayHere's status of the refunded payments its searches read, kept on their refund items.
 */
export class LedgerReconciliationReads extends LedgerTable {
  readonly #refunds: LedgerRefunds;

  constructor(options: LedgerStoreOptions) {
    super(options);
    this.#refunds = new LedgerRefunds(options);
  }

  /** lib/ledger/refunds.ts keepPayHereStatus. */
  keepPayHereStatus(paymentId: string, seen: PayHereStatus): Promise<boolean> {
    return this.#refunds.keepPayHereStatus(paymentId, seen);
  }

  /** The orders created at or after `from` and before `before` (epoch ms), oldest first: at most `max`. */
  async ordersCreated(from: number, before: number, max: number): Promise<OrdersInRange> {
    const items: Record<string, AttributeValue>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const answer = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: ORDER_LIST_INDEXES.all,
          // A time key is shorter than any position of its millisecond: BETWEEN's upper bound, the
          // time key of `before`, sorts before every order created at `before`.
          KeyConditionExpression: '#listed = :listed AND #listedAt BETWEEN :from AND :before',
          ExpressionAttributeNames: { '#listed': 'listed', '#listedAt': 'listedAt' },
          ExpressionAttributeValues: {
            ':listed': { S: LISTED },
            ':from': { S: timeKey(from) },
            ':before': { S: timeKey(before) },
          },
          ScanIndexForward: true,
          Limit: max + 1 - items.length,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      items.push(...(answer.Items ?? []));
      start = answer.LastEvaluatedKey;
    } while (start !== undefined && items.length <= max);
    return {
      orders: items
        .slice(0, max)
        .map((item) => ({ ...fromOrderItem(item), chargeInFlight: item.inflight !== undefined })),
      more: items.length > max,
    };
  }

  /** What the ledger knows of each payment's refunds through the service (a payment never refunded: none). */
  async refundsOf(paymentIds: readonly string[]): Promise<Map<string, PaymentRefunds>> {
    const items = await batchGet(this.client, this.table, paymentIds.map(refundsKey), { consistent: true });
    const byKey = new Map(items.map((item) => [item.pk?.S ?? '', item]));
    return new Map(paymentIds.map((id) => [id, refundsOfItem(id, byKey.get(refundsKey(id)))]));
  }
}
