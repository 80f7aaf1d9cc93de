import type { DynamoDbCommand } from './commands.ts';
import { DynamoDbAbortError, DynamoDbError, DynamoDbTimeoutError, errorFromAnswer } from './errors.ts';
import { backoffMs, isRetryable } from './retry.ts';
import { type AwsCredentials, signRequest } from './sign.ts';

/**
 * A DynamoDB client that speaks DynamoDB's JSON API itself, over the fetch built into Node, signed
 * with SigV4 (./sign.ts). It replaces `@aws-sdk/client-dynamodb` in the functions: the SDK's
 * minified client is 526 KB and cost a cold start 127-150 ms of imports; this layer is 4 KB and
 * imports in the time node:crypto takes (about 12 ms in a fresh process on a loaded machine),
 * which every function loads anyway (README "Performance"). It sends what the stores send
 * (./commands.ts) with the SDK's standard retry rules (./retry.ts), and nothing else: no
 * pagination helpers, no marshalling, no endpoint discovery, no clock-skew correction (Lambda's
 * clock is synchronised).
 */

export interface DynamoDbClientOptions {
  region: string;
  /** A local DynamoDB-compatible server; by default DynamoDB's regional endpoint. */
  endpoint?: string;
  /** Tries per request, the first included. */
  maxAttempts?: number;
  /** Each try is abandoned after this long (ms), from sending to the last byte of the answer. */
  attemptTimeoutMs?: number;
  /** Where the signing credentials come from; by default the environment, as Lambda provides them. */
  credentials?: () => AwsCredentials;
}

export interface SendOptions {
  /** The caller's own end: an abort stops the try under way and every try after it (AbortError). */
  abortSignal?: AbortSignal;
}

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_ATTEMPT_TIMEOUT_MS = 1_500;

/**
 * Lambda gives a function its role's credentials in these variables (local runs give dynalite
 * fake ones). Read at every request, as cheap as a lookup, so nothing stale is kept.
 */
export function environmentCredentials(env: NodeJS.ProcessEnv = process.env): AwsCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    const error = new Error(
      'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set to sign DynamoDB requests',
    );
    error.name = 'CredentialsError';
    throw error;
  }
  return { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined };
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new DynamoDbAbortError(signal.reason));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new DynamoDbAbortError(signal?.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export class DynamoDBClient {
  readonly #url: URL;
  readonly #region: string;
  readonly #maxAttempts: number;
  readonly #attemptTimeoutMs: number;
  readonly #credentials: () => AwsCredentials;

  constructor(options: DynamoDbClientOptions) {
    this.#region = options.region;
    this.#url = new URL(options.endpoint ?? `https://dynamodb.${options.region}.amazonaws.com/`);
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULT_ATTEMPTS);
    this.#attemptTimeoutMs = options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
    this.#credentials = options.credentials ?? (() => environmentCredentials());
  }

  /** Send `command`; its answer in the SDK's output shape, or DynamoDB's refusal as a named error. */
  async send<Output>(command: DynamoDbCommand<unknown, Output>, options: SendOptions = {}): Promise<Output> {
    const signal = options.abortSignal;
    for (let attempt = 1; ; attempt++) {
      try {
        return (await this.#try(command, signal)) as Output;
      } catch (error) {
        if (attempt >= this.#maxAttempts || !isRetryable(error)) throw error;
        await pause(backoffMs(attempt), signal);
      }
    }
  }

  async #try(command: DynamoDbCommand<unknown, unknown>, signal: AbortSignal | undefined): Promise<unknown> {
    if (signal?.aborted) throw new DynamoDbAbortError(signal.reason);
    const body = JSON.stringify(command.input);
    const headers = signRequest(
      {
        url: this.#url,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': `DynamoDB_20120810.${command.operation}`,
        },
        body,
      },
      { region: this.#region, service: 'dynamodb', credentials: this.#credentials(), now: new Date() },
    );
    const timeout = AbortSignal.timeout(this.#attemptTimeoutMs);
    try {
      const response = await fetch(this.#url, {
        method: 'POST',
        headers,
        body,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      const text = await response.text();
      if (response.status !== 200) throw errorFromAnswer(response.status, text);
      return text ? JSON.parse(text) : {};
    } catch (error) {
      if (error instanceof DynamoDbError) throw error;
      if (signal?.aborted) throw new DynamoDbAbortError(signal.reason);
      if (timeout.aborted) throw new DynamoDbTimeoutError(this.#attemptTimeoutMs);
      throw error;
    }
  }
}
