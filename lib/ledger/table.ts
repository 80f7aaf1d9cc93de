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
  /**
   * Told the item of each write that recorded events, with the outbox as the write left it when
   * its answer came (lib/events/relay.ts publishes them; without it, the relay reads the item).
   */
  onEvents?: (pk: string, written?: Record<string, AttributeValue>) => void;
}

export abstract class LedgerTable {
  readonly now: () => number;
  protected readonly client: DynamoDBClient;
  protected readonly table: string;
  protected readonly onEvents: (pk: string, written?: Record<string, AttributeValue>) => void;

  constructor(options: LedgerStoreOptions) {
    this.client = options.client;
    this.table = options.table;
    this.now = options.now ?? Date.now;
    this.onEvents = options.onEvents ?? (() => {});
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

  /**
   * Send a conditional update that appends events to the item `pk`'s outbox (lib/ledger/outbox.ts),
   * asking for what it updated: the relay is told, with the outbox as written, so that it needs no
   * read of its own. False when its condition failed.
   */
  protected async recording(pk: string, command: UpdateItemCommand): Promise<boolean> {
    command.input.ReturnValues = 'UPDATED_NEW';
    const written = await sendConditional(this.client, command);
    if (written === undefined) return false;
    this.onEvents(pk, written.Attributes);
    return true;
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
