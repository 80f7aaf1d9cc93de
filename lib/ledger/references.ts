import { type AttributeValue, PutItemCommand, UpdateItemCommand } from '../dynamodb/index.ts';
import type { Reference, ReferenceKind } from './model.ts';
import { namesIn } from './order-item.ts';
import { LedgerTable, optionalText, text } from './table.ts';

const referenceKey = (kind: ReferenceKind, id: string) => `${kind}#${id}`;
const ownerKey = (owner: string) => `owner#${owner}`;
/** The owner item's set of failed pre-approvals in one window of ORDER_FAILED_ATTEMPTS. */
const failedKey = (window: number) => `failedPreapprovals${window}`;

/**
 * The ledger's index from the ids PayHere hands out to their order and owner (`payment#<id>`,
 * `authorization#<token>`, `subscription#<id>`, `customer_token#<token>`), and each customer's
 * subscriptions and failed pre-approvals (`owner#<sub>`).
 */
export class LedgerReferences extends LedgerTable {
  /**
   * Point `kind`/`id` at its order. An id already pointing at the same order is fine; one pointing
   * elsewhere is refused (false). With `chargeKey`, the id is also bound to that charge: a payment
   * id is adopted by at most one charge.
   */
  async link(kind: ReferenceKind, id: string, reference: Reference, chargeKey?: string): Promise<boolean> {
    const item: Record<string, AttributeValue> = {
      pk: { S: referenceKey(kind, id) },
      orderId: { S: reference.orderId },
      owner: { S: reference.owner },
      ...(chargeKey ? { chargeKey: { S: chargeKey } } : {}),
    };
    const condition = chargeKey
      ? 'attribute_not_exists(pk) OR (#orderId = :orderId AND #chargeKey = :chargeKey)'
      : 'attribute_not_exists(pk) OR (#orderId = :orderId AND #owner = :owner)';
    return this.conditional(
      new PutItemCommand({
        TableName: this.table,
        Item: item,
        ConditionExpression: condition,
        ExpressionAttributeNames: namesIn(condition),
        ExpressionAttributeValues: {
          ':orderId': { S: reference.orderId },
          ...(chargeKey ? { ':chargeKey': { S: chargeKey } } : { ':owner': { S: reference.owner } }),
        },
      }),
    );
  }

  /**
   * The order and owner `kind`/`id` belongs to, if the ledger knows it (and a subscription's last
   * known state, a payment's adopting charge).
   */
  async lookup(kind: ReferenceKind, id: string): Promise<Reference | undefined> {
    const item = await this.get(referenceKey(kind, id));
    if (!item) return undefined;
    const status = optionalText(item, 'status');
    const chargeKey = optionalText(item, 'chargeKey');
    return {
      orderId: text(item, 'orderId'),
      owner: text(item, 'owner'),
      ...(status ? { status } : {}),
      ...(chargeKey ? { chargeKey } : {}),
    };
  }

  /**
   * What PayHere said of a subscription the service cancelled (CANCELLED, or COMPLETED when it
   * refused as already completed): a later cancel of it is answered without PayHere.
   */
  async setSubscriptionStatus(subscriptionId: string, status: string): Promise<boolean> {
    return this.conditional(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: referenceKey('subscription', subscriptionId) } },
        UpdateExpression: 'SET #status = :status',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': { S: status } },
      }),
    );
  }

  /** Add a subscription to its owner's list (idempotent: the list is a set). */
  async addSubscription(owner: string, subscriptionId: string): Promise<boolean> {
    return this.conditional(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: ownerKey(owner) } },
        UpdateExpression: 'SET #owner = :owner ADD #subscriptions :ids',
        ConditionExpression: 'attribute_not_exists(pk) OR #owner = :owner',
        ExpressionAttributeNames: { '#owner': 'owner', '#subscriptions': 'subscriptions' },
        ExpressionAttributeValues: { ':owner': { S: owner }, ':ids': { SS: [subscriptionId] } },
      }),
    );
  }

  /**
   * A pre-approval of `owner` failed at PayHere (a declined card saved through the SDK): `attempt`
   * (its order and payment) joins the set of the owner's failed pre-approvals in each of `windows`,
   * and the sets of `staleWindows` are removed. A set, so that a write retried after its answer was
   * lost, or the same notification acted on again, counts once. What the count means, and which
   * windows are stale, is decided elsewhere (lib/orders/attempts.ts).
   */
  async addFailedPreapproval(
    owner: string,
    attempt: string,
    windows: readonly number[],
    staleWindows: readonly number[] = [],
  ): Promise<boolean> {
    const names = Object.fromEntries(windows.map((window, i) => [`#failed${i}`, failedKey(window)]));
    const stale = Object.fromEntries(staleWindows.map((window, i) => [`#stale${i}`, failedKey(window)]));
    const remove = staleWindows.length > 0 ? ` REMOVE ${Object.keys(stale).join(', ')}` : '';
    return this.conditional(
      new UpdateItemCommand({
        TableName: this.table,
        Key: { pk: { S: ownerKey(owner) } },
        UpdateExpression: `SET #owner = :owner${remove} ADD ${Object.keys(names)
          .map((name) => `${name} :attempt`)
          .join(', ')}`,
        ConditionExpression: 'attribute_not_exists(pk) OR #owner = :owner',
        ExpressionAttributeNames: { '#owner': 'owner', ...names, ...stale },
        ExpressionAttributeValues: { ':owner': { S: owner }, ':attempt': { SS: [attempt] } },
      }),
    );
  }

  /** How many failed pre-approvals of `owner` the ledger counts in each window it has a count for. */
  async failedPreapprovals(owner: string): Promise<Record<number, number>> {
    const item = (await this.get(ownerKey(owner))) ?? {};
    return Object.fromEntries(
      Object.entries(item).flatMap(([name, value]) => {
        const window = /^failedPreapprovals(\d+)$/.exec(name)?.[1];
        return window !== undefined && value.SS ? [[Number(window), value.SS.length]] : [];
      }),
    );
  }

  /** The subscription ids `owner` holds. */
  async subscriptionsOf(owner: string): Promise<string[]> {
    const item = await this.get(ownerKey(owner));
    return item?.subscriptions?.SS ?? [];
  }
}
