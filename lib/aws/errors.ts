/**
 * What can go wrong with a request to an AWS JSON API (DynamoDB, Secrets Manager), as named errors:
 * the service's refusal under the name the SDK gives it (callers match `error.name`, never the
 * class, as they did with the SDK), no answer (a lost connection or a timeout, worth another try),
 * or the caller's own abort (never retried).
 */

/**
 * The service's refusal: the part of `__type` after `#` (`ConditionalCheckFailedException`,
 * `ResourceNotFoundException`, ...), or `<service>Http<status>` when the body names nothing.
 */
export class AwsServiceError extends Error {
  readonly statusCode: number;
  /** DynamoDB's item as it was, when a write asked `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`. */
  readonly Item?: Record<string, unknown>;

  constructor(name: string, message: string, statusCode: number, item?: Record<string, unknown>) {
    super(message);
    this.name = name;
    this.statusCode = statusCode;
    if (item) this.Item = item;
  }
}

/** The error an answer other than 200 stands for; its body is the service's `{ __type, message }`. */
export function errorFromAnswer(service: string, statusCode: number, body: string): AwsServiceError {
  let parsed: { __type?: unknown; message?: unknown; Message?: unknown; Item?: unknown } = {};
  try {
    const json: unknown = JSON.parse(body);
    if (typeof json === 'object' && json !== null) parsed = json;
  } catch {
    // Not JSON (a proxy's error page): the status says enough.
  }
  const type = typeof parsed.__type === 'string' ? parsed.__type : '';
  const name = type.slice(type.indexOf('#') + 1) || `${service}Http${statusCode}`;
  const text = parsed.message ?? parsed.Message;
  const message = typeof text === 'string' ? text : `${service} answered ${statusCode}`;
  const item =
    typeof parsed.Item === 'object' && parsed.Item !== null
      ? (parsed.Item as Record<string, unknown>)
      : undefined;
  return new AwsServiceError(name, message, statusCode, item);
}

/** The caller's own signal ended the request: no retry, whatever was left. */
export class AwsAbortError extends Error {
  constructor(service: string, cause: unknown) {
    super(`The request to ${service} was aborted`, { cause });
    this.name = 'AbortError';
  }
}

/**
 * One try got no connection within the connect timeout, or no answer within the request timeout
 * (`phase` says which); retried like a lost connection.
 */
export class AwsTimeoutError extends Error {
  readonly phase: 'connect' | 'answer';

  constructor(service: string, phase: 'connect' | 'answer', timeoutMs: number, cause?: unknown) {
    super(
      phase === 'connect'
        ? `No connection to ${service} within ${timeoutMs} ms`
        : `${service} did not answer within ${timeoutMs} ms`,
      { cause },
    );
    this.name = 'TimeoutError';
    this.phase = phase;
  }
}

/** The connection could not be opened or was lost before the answer (`code`: the socket's, or the limit's: lib/aws/http.ts). */
export class AwsConnectionError extends Error {
  readonly code: string;

  constructor(service: string, code: string, cause: unknown) {
    super(`The connection to ${service} failed (${code})`, { cause });
    this.name = 'ConnectionError';
    this.code = code;
  }
}
