/**
 * The DynamoDB operations the service sends, under the AWS SDK's names and shapes
 * (`new GetItemCommand(input)`, `{ Item }` back), so that a store moved from the SDK to this layer
 * changes only its import line. The input is sent as it is: DynamoDB's JSON API takes exactly the
 * SDK's input shape. The types cover what the stores use, structurally compatible with the SDK's.
 */

/**
 * One attribute's value in DynamoDB's JSON form. Binary types are left out: no table stores any.
 * The stores type their items by hand (`{ S: ... }`, `{ N: String(...) }`): @aws-sdk/util-dynamodb's
 * `marshall` was weighed and costs a cold container's first item more (docs/performance.md).
 */
export interface AttributeValue {
  S?: string;
  N?: string;
  SS?: string[];
  NS?: string[];
  BOOL?: boolean;
  NULL?: boolean;
  M?: Record<string, AttributeValue>;
  L?: AttributeValue[];
}

export type Item = Record<string, AttributeValue>;

type ReturnValue = 'NONE' | 'ALL_OLD' | 'UPDATED_OLD' | 'ALL_NEW' | 'UPDATED_NEW';

interface ConditionalInput {
  TableName: string;
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
  /** DynamoDB then puts the item as it was into the ConditionalCheckFailedException. */
  ReturnValuesOnConditionCheckFailure?: 'ALL_OLD' | 'NONE';
}

export interface GetItemCommandInput {
  TableName: string;
  Key: Item;
  ConsistentRead?: boolean;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
}
export interface GetItemCommandOutput {
  Item?: Item;
}

export interface PutItemCommandInput extends ConditionalInput {
  Item: Item;
  ReturnValues?: ReturnValue;
}
export interface UpdateItemCommandInput extends ConditionalInput {
  Key: Item;
  UpdateExpression?: string;
  ReturnValues?: ReturnValue;
}
export interface DeleteItemCommandInput extends ConditionalInput {
  Key: Item;
  ReturnValues?: ReturnValue;
}
/** What a write answers: the item's attributes when `ReturnValues` asked for them. */
export interface WriteItemCommandOutput {
  Attributes?: Item;
}
export type PutItemCommandOutput = WriteItemCommandOutput;
export type UpdateItemCommandOutput = WriteItemCommandOutput;
export type DeleteItemCommandOutput = WriteItemCommandOutput;

export interface ScanCommandInput {
  TableName: string;
  FilterExpression?: string;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
  ExclusiveStartKey?: Item;
  Limit?: number;
  ConsistentRead?: boolean;
}
export interface ScanCommandOutput {
  Items?: Item[];
  LastEvaluatedKey?: Item;
  Count?: number;
  ScannedCount?: number;
}

export interface QueryCommandInput {
  TableName: string;
  IndexName?: string;
  KeyConditionExpression: string;
  FilterExpression?: string;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
  ExclusiveStartKey?: Item;
  Limit?: number;
  ScanIndexForward?: boolean;
  ConsistentRead?: boolean;
}
export type QueryCommandOutput = ScanCommandOutput;

/** Up to 100 items by key, of one or more tables; what DynamoDB did not get to comes back in `UnprocessedKeys`. */
export interface BatchGetItemCommandInput {
  RequestItems: Record<
    string,
    {
      Keys: Item[];
      ConsistentRead?: boolean;
      ProjectionExpression?: string;
      ExpressionAttributeNames?: Record<string, string>;
    }
  >;
}
export interface BatchGetItemCommandOutput {
  Responses?: Record<string, Item[]>;
  UnprocessedKeys?: BatchGetItemCommandInput['RequestItems'];
}

export type Operation =
  | 'GetItem'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'Scan'
  | 'Query'
  | 'BatchGetItem';

/** One request: the operation (`X-Amz-Target`) and its input (the body). */
export abstract class DynamoDbCommand<Input, Output> {
  abstract readonly operation: Operation;
  readonly input: Input;
  /** Never set: carries the answer's type to `DynamoDBClient.send`. */
  declare readonly output?: Output;

  constructor(input: Input) {
    this.input = input;
  }
}

export class GetItemCommand extends DynamoDbCommand<GetItemCommandInput, GetItemCommandOutput> {
  readonly operation = 'GetItem';
}
export class PutItemCommand extends DynamoDbCommand<PutItemCommandInput, PutItemCommandOutput> {
  readonly operation = 'PutItem';
}
export class UpdateItemCommand extends DynamoDbCommand<UpdateItemCommandInput, UpdateItemCommandOutput> {
  readonly operation = 'UpdateItem';
}
export class DeleteItemCommand extends DynamoDbCommand<DeleteItemCommandInput, DeleteItemCommandOutput> {
  readonly operation = 'DeleteItem';
}
export class ScanCommand extends DynamoDbCommand<ScanCommandInput, ScanCommandOutput> {
  readonly operation = 'Scan';
}
export class QueryCommand extends DynamoDbCommand<QueryCommandInput, QueryCommandOutput> {
  readonly operation = 'Query';
}
export class BatchGetItemCommand extends DynamoDbCommand<
  BatchGetItemCommandInput,
  BatchGetItemCommandOutput
> {
  readonly operation = 'BatchGetItem';
}
