import { type AttributeValue, QueryCommand } from '../dynamodb/index.ts';
import type { Order, OrderKind, OrderState } from './model.ts';
import { fromOrderItem, LISTED, timeKey } from './order-item.ts';
import { LedgerTable } from './table.ts';

/**
 * The ledger's order lists (serverless.yml declares the indexes, scripts/local-dynamodb.ts makes
 * them locally): three indexes over the order items, each sorted by `listedAt`, the order's creation
 * time then its id (order-item.ts listedAt).
 *
 *   orders        every order (`listed` = `order`)
 *   owner-orders  one customer's orders (`owner`)
 *   state-orders  the orders in one state (`state`)
 *
 * Only order items carry `listedAt`: references, refunds and notifications are in none of them.
 * Each projects what a list shows, not the whole order (no copy of PayHere's payments).
 */
export const ORDER_LIST_INDEXES = {
  all: 'orders',
  owner: 'owner-orders',
  state: 'state-orders',
} as const;

/** Each list index's partition key (its sort key is `listedAt`). */
export const ORDER_LIST_HASH_KEYS = {
  [ORDER_LIST_INDEXES.all]: 'listed',
  [ORDER_LIST_INDEXES.owner]: 'owner',
  [ORDER_LIST_INDEXES.state]: 'state',
} as const;

/** What each list index projects besides its keys. */
export const LISTED_ATTRIBUTES = [
  'orderId',
  'owner',
  'kind',
  'state',
  'items',
  'currency',
  'amount',
  'paymentId',
  'subscriptionId',
  'inflight',
  'createdAt',
  'updatedAt',
  // What a back office reads of each order, but its line items (up to 100 lines: getCheckout shows them).
  'custom1',
  'custom2',
  'customerDetails',
  'metadata',
  'startupFee',
  'nextInstallment',
] as const;

/** Where a list is read from: one partition of one index. */
export type OrderListSource = { all: true } | { owner: string } | { state: OrderState };

export interface OrderListQuery {
  source: OrderListSource;
  /** What the source's partition does not already narrow to, checked on each order read. */
  state?: OrderState;
  kind?: OrderKind;
  /** Epoch ms: created at or after, and before. */
  createdFrom?: number;
  createdBefore?: number;
  /** A position (`listedAt`) the last page ended at: the page starts after it. */
  after?: string;
  limit: number;
}

/** An order as a list reads it: what the index projects, and whether a charge of it is in flight. */
export type ListedOrder = Order & { chargeInFlight: boolean };

export interface OrderListPage {
  /** Newest first; at most `limit`. Orders as far as the index projects them (no charge slot). */
  orders: ListedOrder[];
  /** The position to read on from, or null when nothing is left. */
  next: string | null;
}

/** How many orders the second read may look at beyond the first (a filter that matches few). */
const SECOND_READ = 1_000;

export class LedgerOrderLists extends LedgerTable {
  /**
   * One page of a list, newest first, in at most two Query calls: the first reads `limit` + 1
   * orders (one more tells whether there is a next page); only when filters dropped some and the
   * partition goes on does a second read look further.
   */
  async listOrders(query: OrderListQuery): Promise<OrderListPage> {
    const { source } = query;
    const [index, hashName, hashValue] =
      'owner' in source
        ? [ORDER_LIST_INDEXES.owner, 'owner', source.owner]
        : 'state' in source
          ? [ORDER_LIST_INDEXES.state, 'state', source.state]
          : [ORDER_LIST_INDEXES.all, 'listed', LISTED];
    const names: Record<string, string> = { '#hash': hashName };
    const values: Record<string, AttributeValue> = { ':hash': { S: hashValue } };
    let keyCondition = '#hash = :hash';
    if (query.createdFrom !== undefined || query.createdBefore !== undefined) names['#listedAt'] = 'listedAt';
    const from = query.createdFrom === undefined ? undefined : timeKey(query.createdFrom);
    const before = query.createdBefore === undefined ? undefined : timeKey(query.createdBefore);
    // A position is longer than its time key: the lowest position of a millisecond is its time key.
    if (from !== undefined && before !== undefined) {
      keyCondition += ' AND #listedAt BETWEEN :from AND :before';
      Object.assign(values, { ':from': { S: from }, ':before': { S: before } });
    } else if (from !== undefined) {
      keyCondition += ' AND #listedAt >= :from';
      values[':from'] = { S: from };
    } else if (before !== undefined) {
      keyCondition += ' AND #listedAt < :before';
      values[':before'] = { S: before };
    }
    const filters: string[] = [];
    if (query.state !== undefined) {
      names['#state'] = 'state';
      values[':state'] = { S: query.state };
      filters.push('#state = :state');
    }
    if (query.kind !== undefined) {
      names['#kind'] = 'kind';
      values[':kind'] = { S: query.kind };
      filters.push('#kind = :kind');
    }
    // BETWEEN includes its upper bound; a position at exactly `before` is a time key, never an order's.
    const startKey = (position: string): Record<string, AttributeValue> => ({
      pk: { S: `order#${position.slice(position.indexOf('#') + 1)}` },
      [hashName]: { S: hashValue },
      listedAt: { S: position },
    });
    const read = async (after: string | undefined, limit: number) => {
      const answer = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          IndexName: index,
          KeyConditionExpression: keyCondition,
          ...(filters.length > 0 ? { FilterExpression: filters.join(' AND ') } : {}),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ScanIndexForward: false,
          Limit: limit,
          ...(after === undefined ? {} : { ExclusiveStartKey: startKey(after) }),
        }),
      );
      const last = answer.LastEvaluatedKey?.listedAt?.S;
      return { items: answer.Items ?? [], last };
    };
    const first = await read(query.after, query.limit + 1);
    const items = [...first.items];
    let last = first.last;
    if (items.length <= query.limit && last !== undefined && filters.length > 0) {
      const second = await read(last, SECOND_READ);
      items.push(...second.items);
      last = second.last;
    }
    const orders = items
      .slice(0, query.limit)
      .map((item) => ({ ...fromOrderItem(item), chargeInFlight: item.inflight !== undefined }));
    const more = items.length > query.limit || last !== undefined;
    const lastShown = items[orders.length - 1]?.listedAt?.S;
    return { orders, next: more ? (items.length > query.limit ? lastShown! : last!) : null };
  }
}
