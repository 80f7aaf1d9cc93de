import type { StateTableOptions } from '../budget/state-table.ts';
import {
  type AttributeValue,
  batchGet,
  type DynamoDBClient,
  PutItemCommand,
  sendConditional,
} from '../dynamodb/index.ts';

/**
 * One payment of an order as PayHere's records showed it to the reconciliation report: its identity,
 * status and amount, and what `amount_detail` says PayHere took (gross, fee, net; null when absent).
 */
export interface CheckedPayment {
  payment_id: string;
  status: string;
  currency: string;
  amount: number;
  gross: number | null;
  fee: number | null;
  net: number | null;
  /**
   * The currency of gross, fee and net: `amount_detail`'s own, which for a payment in another
   * currency is the one PayHere settles in (its exchange fields say so); null when absent (and in
   * snapshots kept before it was read), when they are in the payment's currency.
   */
  settlement_currency?: string | null;
  /** PayHere's date of the payment, as it wrote it (its own clock, Sri Lanka time); null when absent. */
  date: string | null;
}

/** What PayHere's records showed of an order's payments when it was last asked. */
export interface PaymentSnapshot {
  orderId: string;
  /** Epoch ms when the search that answered was sent: the snapshot is at least this fresh. */
  checkedAt: number;
  /** The order as the ledger had it when the search was sent (the report's own mark, compared as it is). */
  ledgerVersion: string;
  /** PayHere's payments of the order; empty when it answered "No payments found". */
  payments: CheckedPayment[];
}

/** A snapshot outlives any report that would use it: reports span at most a month, and an old one is asked again. */
const SNAPSHOT_DAYS = 40;
const snapshotKey = (orderId: string) => `recon#${orderId}`;

/**
 * The reconciliation report's snapshots of PayHere's records, one item per order in the shared
 * state table, `recon#<order_id>`: what PayHere's search showed and when. They are what the report
 * compares the ledger with, so that a report over hundreds of orders is filled in over as many
 * requests as its budget needs and is never one request making hundreds of PayHere calls. Like
 * everything in that table, they can be rebuilt (by asking PayHere again) and expire by TTL.
 */
export class PaymentSnapshots {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #timeoutMs: number;
  readonly #now: () => number;

  constructor(options: StateTableOptions & { now?: () => number }) {
    this.#client = options.client;
    this.#table = options.table;
    this.#timeoutMs = options.timeoutMs;
    this.#now = options.now ?? Date.now;
  }

  /** The snapshots there are of these orders (an order never checked has none). */
  async get(orderIds: readonly string[]): Promise<Map<string, PaymentSnapshot>> {
    const items = await batchGet(this.#client, this.#table, orderIds.map(snapshotKey), {
      send: () => ({ timeoutMs: this.#timeoutMs * 4 }),
    });
    const snapshots = new Map<string, PaymentSnapshot>();
    for (const item of items) {
      const snapshot = snapshotOf(item);
      if (snapshot) snapshots.set(snapshot.orderId, snapshot);
    }
    return snapshots;
  }

  /**
   * Keep `snapshot` unless a newer one is there already (two reports checking one order at once):
   * a write repeated after its answer was lost finds its own and changes nothing.
   */
  async put(snapshot: PaymentSnapshot): Promise<void> {
    await sendConditional(
      this.#client,
      new PutItemCommand({
        TableName: this.#table,
        Item: {
          pk: { S: snapshotKey(snapshot.orderId) },
          orderId: { S: snapshot.orderId },
          checkedAt: number(snapshot.checkedAt),
          ledgerVersion: { S: snapshot.ledgerVersion },
          payments: { S: JSON.stringify(snapshot.payments) },
          expiresAt: number(Math.floor(this.#now() / 1000) + SNAPSHOT_DAYS * 86_400),
        },
        ConditionExpression: 'attribute_not_exists(checkedAt) OR checkedAt <= :checkedAt',
        ExpressionAttributeValues: { ':checkedAt': number(snapshot.checkedAt) },
      }),
      { timeoutMs: this.#timeoutMs * 4 },
    );
  }
}

const number = (value: number): AttributeValue => ({ N: String(Math.round(value)) });

function snapshotOf(item: Record<string, AttributeValue>): PaymentSnapshot | undefined {
  const orderId = item.orderId?.S;
  const checkedAt = Number(item.checkedAt?.N);
  const ledgerVersion = item.ledgerVersion?.S;
  if (orderId === undefined || ledgerVersion === undefined || !Number.isFinite(checkedAt)) return undefined;
  try {
    const payments = JSON.parse(item.payments?.S ?? '[]') as CheckedPayment[];
    return Array.isArray(payments) ? { orderId, checkedAt, ledgerVersion, payments } : undefined;
  } catch {
    return undefined;
  }
}
