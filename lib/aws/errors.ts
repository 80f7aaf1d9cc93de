import type { Item } from './commands.ts';

/**
 * DynamoDB's refusal, named as the SDK names it: the part of `__type` after `#`
 * (`ConditionalCheckFailedException`, `ValidationException`, ...). Callers match `error.name`,
 * never the class, as they did with the SDK.
 */
export class DynamoDbError extends Error {
  readonly statusCode: number;
  /** The item as it was, when the write asked `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`. */
  readonly Item?: Item;

  constructor(name: string, message: string, statusCode: number, item?: Item) {
    super(message);
    this.name = name;
    this.statusCode = statusCode;
    if (item) this.Item = item;
  }
}

/** The error an answer other than 200 stands for; its body is DynamoDB's `{ __type, message }`. */
export function errorFromAnswer(statusCode: number, body: string): DynamoDbError {
  let parsed: { __type?: unknown; message?: unknown; Message?: unknown; Item?: unknown } = {};
  try {
    const json: unknown = JSON.parse(body);
    if (typeof json === 'object' && json !== null) parsed = json;
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  const type = typeof parsed.__type === 'string' ? parsed.__type : '';
  const name = type.slice(type.indexOf('#') + 1) || `DynamoDbHttp${statusCode}`;
  const text = parsed.message ?? parsed.Message;
  const message = typeof text === 'string' ? text : `DynamoDB answered ${statusCode}`;
  const item = typeof parsed.Item === 'object' && parsed.Item !== null ? (parsed.Item as Item) : undefined;
  return new DynamoDbError(name, message, statusCode, item);
}

/** The caller's own signal ended the request: no retry, whatever was left. */
export class DynamoDbAbortError extends Error {
  constructor(cause: unknown) {
    super('The request to DynamoDB was aborted', { cause });
    this.name = 'AbortError';
  }
}

/** One try had no answer within its time (DYNAMODB_ATTEMPT_TIMEOUT_MS); retried like a lost connection. */
export class DynamoDbTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`DynamoDB did not answer within ${timeoutMs} ms`);
    this.name = 'TimeoutError';
  }
}
