import { randomUUID } from 'node:crypto';
import { type AttributeValue, PutItemCommand, ScanCommand } from '../dynamodb/index.ts';
import type { UnmatchedNotification } from './model.ts';
import { LedgerTable, number, optionalNumber, optionalText, text } from './table.ts';

/** A notification kept apart, as the operator reads it; `expiresAt` in epoch seconds (null: kept before it expired). */
export type KeptNotification = UnmatchedNotification & { receivedAt: number; expiresAt: number | null };

const notificationKey = (identity: string) => `notification#${identity}`;

/**
 * What the ledger keeps of PayHere's notifications: the identities of those received
 * (`notification#<identity>`, a replay is answered from them) and those kept apart for the operator
 * (`unmatched#<time>#<uuid>`), both until their TTL.
 */
export class LedgerNotifications extends LedgerTable {
  /**
   * Keep a notification that matched nothing apart, for the operator (docs/operator.md "Operating it"), until
   * `expiresAt` (epoch seconds: the table's TTL).
   */
  async recordUnmatched(notification: UnmatchedNotification, expiresAt: number): Promise<boolean> {
    const now = this.now();
    return this.conditional(
      new PutItemCommand({
        TableName: this.table,
        Item: {
          pk: { S: `unmatched#${new Date(now).toISOString()}#${randomUUID()}` },
          reason: { S: notification.reason },
          orderId: { S: notification.orderId },
          statusCode: { S: notification.statusCode },
          amount: { S: notification.amount },
          currency: { S: notification.currency },
          fields: { S: JSON.stringify(notification.fields) },
          receivedAt: number(now),
          expiresAt: number(expiresAt),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  /** What the notification with this identity did when it was received, if it was (and is not expired). */
  async notificationOutcome(identity: string): Promise<string | undefined> {
    const item = await this.get(notificationKey(identity));
    if (!item || Number(item.expiresAt?.N ?? 0) * 1000 <= this.now()) return undefined;
    return optionalText(item, 'outcome') ?? undefined;
  }

  /** Remember that the notification with this identity was received, and what it did, until `expiresAt` (epoch seconds). */
  async noteNotification(identity: string, outcome: string, expiresAt: number): Promise<void> {
    await this.client.send(
      new PutItemCommand({
        TableName: this.table,
        Item: {
          pk: { S: notificationKey(identity) },
          outcome: { S: outcome },
          receivedAt: number(this.now()),
          expiresAt: number(expiresAt),
        },
      }),
    );
  }

  /**
   * The notifications kept apart, for the operator (a scan: no function's role may send one; the
   * operator runs it with their own credentials, docs/operator.md "Operating it"), optionally of one order.
   */
  async unmatched(orderId?: string): Promise<KeptNotification[]> {
    const found: KeptNotification[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.table,
          FilterExpression: `begins_with(pk, :prefix)${orderId === undefined ? '' : ' AND #orderId = :orderId'}`,
          ...(orderId === undefined ? {} : { ExpressionAttributeNames: { '#orderId': 'orderId' } }),
          ExpressionAttributeValues: {
            ':prefix': { S: 'unmatched#' },
            ...(orderId === undefined ? {} : { ':orderId': { S: orderId } }),
          },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        // DynamoDB deletes expired items up to days late.
        const expiresAt = optionalNumber(item, 'expiresAt');
        if (expiresAt !== null && expiresAt * 1000 <= this.now()) continue;
        found.push({
          expiresAt,
          reason: text(item, 'reason') as UnmatchedNotification['reason'],
          orderId: text(item, 'orderId'),
          statusCode: text(item, 'statusCode'),
          amount: text(item, 'amount'),
          currency: text(item, 'currency'),
          fields: JSON.parse(text(item, 'fields')) as Record<string, string>,
          receivedAt: optionalNumber(item, 'receivedAt') ?? 0,
        });
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return found.sort((a, b) => a.receivedAt - b.receivedAt);
  }
}
