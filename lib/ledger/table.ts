import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  type PutItemCommand,
  sendConditional,
  type UpdateItemCommand,
} from '../dynamodb/index.ts';

/**
 * The ledger's one DynamoDB table (lib/ledger/store.ts says what it holds), as its stores by kind of
 * item share it: strongly consistent reads, conditional writes, and the attribute values they use.
 */
export interface LedgerStoreOptions {
  client: DynamoDBClient;
  table: string;
  now?: () => number;
}

export abstract class LedgerTable {
  readonly now: () => number;
  protected readonly client: DynamoDBClient;
  protected readonly table: string;

  constructor(options: LedgerStoreOptions) {
    this.client = options.client;
    this.table = options.table;
    this.now = options.now ?? Date.now;
  }

  protected async get(pk: string): Promise<Record<string, AttributeValue> | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.table, Key: { pk: { S: pk } }, ConsistentRead: true }),
    );
    return Item;
  }

  /** Send a conditional write: false when its condition failed, any other error thrown. */
  protected async conditional(command: PutItemCommand | UpdateItemCommand): Promise<boolean> {
    return (await sendConditional(this.client, command)) !== undefined;
  }
}

export function number(value: number): AttributeValue {
  return { N: String(value) };
}

export function nullableNumber(value: number | null): AttributeValue {
  return value === null ? { NULL: true } : number(value);
}

export function nullableString(value: string | null): AttributeValue {
  return value === null ? { NULL: true } : { S: value };
}

export function text(item: Record<string, AttributeValue>, name: string): string {
  const value = item[name]?.S;
  if (value === undefined) throw new Error(`ledger item without ${name}`);
  return value;
}

export function optionalText(item: Record<string, AttributeValue>, name: string): string | null {
  return item[name]?.S ?? null;
}

export function optionalNumber(item: Record<string, AttributeValue>, name: string): number | null {
  const value = item[name]?.N;
  return value === undefined ? null : Number(value);
}
