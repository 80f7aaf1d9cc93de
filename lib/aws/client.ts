import { errorCode, networkFailureKind } from '../net/failure.ts';
import { timeLimit } from '../net/time-limit.ts';
import {
  AwsAbortError,
  AwsConnectionError,
  AwsServiceError,
  AwsTimeoutError,
  errorFromAnswer,
} from './errors.ts';
import { post } from './http.ts';
import { backoffMs, isRetryableAwsError } from './retry.ts';
import { type AwsCredentials, signRequest } from './sign.ts';

/**
 * A client for one AWS service's JSON API (`POST /`, the operation in `X-Amz-Target`, the input as
 * the body, SigV4-signed), written here instead of using the AWS SDK: the SDK's clients are
 * large bundles of minified code that every cold start parsed (docs/performance.md "Performance");
 * this is a small client over Node's own `node:http`/`node:https` (./http.ts), signed by AWS's own
 * signer (./sign.ts). It keeps the SDK's
 * standard retry rules (./retry.ts) and nothing else: no pagination, no marshalling, no endpoint
 * discovery, no clock-skew correction (Lambda's clock is synchronised).
 *
 * Not undici, although PayHere's calls go through it: undici is the heaviest load of a cold
 * start, and a container whose requests are answered from the tables (a shared read, a replay)
 * never needs it. Not the `fetch` built into Node either: it loads Node's own copy of undici at its
 * first use, and has no connect timeout.
 */

export interface AwsJsonApi {
  /** The service's signing name (`dynamodb`, `secretsmanager`). */
  signingName: string;
  /** The service as messages and fallback error names call it (`DynamoDB`). */
  label: string;
  /** `application/x-amz-json-1.0` or `-1.1`, as the service speaks it. */
  contentType: string;
  /** What precedes the operation in `X-Amz-Target` (`DynamoDB_20120810`, `secretsmanager`). */
  targetPrefix: string;
}

export interface AwsClientOptions {
  region: string;
  /** A local stand-in for the service; by default its regional endpoint. */
  endpoint?: string | undefined;
  /** Tries per request, the first included. */
  maxAttempts?: number;
  /** Each try waits at most this long (ms) for a connection, when it needs a new one. */
  connectTimeoutMs?: number;
  /** Each try waits at most this long (ms) for the answer's headers, and as long between its bytes. */
  requestTimeoutMs?: number;
  /** Where the signing credentials come from; by default the environment, as Lambda provides them. */
  credentials?: () => AwsCredentials;
}

export interface SendOptions {
  /** The caller's own end: an abort stops the try under way and every try after it (AbortError). */
  abortSignal?: AbortSignal;
  /**
   * The whole request, retries and their waits included, ends after this long (ms) as if
   * `abortSignal` were `AbortSignal.timeout(timeoutMs)`; its timer stops once the answer is in
   * (lib/net/time-limit.ts).
   */
  timeoutMs?: number;
}

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_CONNECT_TIMEOUT_MS = 500;
const DEFAULT_REQUEST_TIMEOUT_MS = 1_000;

/**
 * Lambda gives a function its role's credentials in these variables (local runs give the local
 * stand-ins fake ones). Read at every request, as cheap as a lookup, so nothing stale is kept.
 */
export function awsCredentialsFromEnvironment(env: NodeJS.ProcessEnv = process.env): AwsCredentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    const error = new Error('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set to sign AWS requests');
    error.name = 'CredentialsError';
    throw error;
  }
  return { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined };
}

/** The first of `signals` that aborted, if any. */
const abortedOf = (signals: readonly AbortSignal[]) => signals.find((signal) => signal.aborted);

function pause(ms: number, service: string, signals: readonly AbortSignal[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const already = abortedOf(signals);
    if (already) return reject(new AwsAbortError(service, already.reason));
    const onAbort = (event: Event) => {
      settle();
      reject(new AwsAbortError(service, (event.target as AbortSignal).reason));
    };
    const settle = () => {
      clearTimeout(timer);
      for (const signal of signals) signal.removeEventListener('abort', onAbort);
    };
    const timer = setTimeout(() => {
      settle();
      resolve();
    }, ms);
    for (const signal of signals) signal.addEventListener('abort', onAbort, { once: true });
  });
}

export class AwsJsonClient {
  readonly #api: AwsJsonApi;
  readonly #url: URL;
  readonly #region: string;
  readonly #maxAttempts: number;
  readonly #connectTimeoutMs: number;
  readonly #requestTimeoutMs: number;
  readonly #credentials: () => AwsCredentials;

  constructor(api: AwsJsonApi, options: AwsClientOptions) {
    this.#api = api;
    this.#region = options.region;
    this.#url = new URL(options.endpoint ?? `https://${api.signingName}.${options.region}.amazonaws.com/`);
    this.#maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULT_ATTEMPTS);
    this.#connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#credentials = options.credentials ?? (() => awsCredentialsFromEnvironment());
  }

  /** Send `operation` with `input`; the parsed answer, or the service's refusal as a named error. */
  async send(operation: string, input: unknown, options: SendOptions = {}): Promise<unknown> {
    const limit = options.timeoutMs === undefined ? undefined : timeLimit(options.timeoutMs);
    const signals = [options.abortSignal, limit?.signal].filter((signal) => signal !== undefined);
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.#try(operation, input, signals);
        } catch (error) {
          if (attempt >= this.#maxAttempts || !isRetryableAwsError(error)) throw error;
          await pause(backoffMs(attempt), this.#api.label, signals);
        }
      }
    } finally {
      limit?.end();
    }
  }

  async #try(operation: string, input: unknown, signals: readonly AbortSignal[]): Promise<unknown> {
    const { label } = this.#api;
    const already = abortedOf(signals);
    if (already) throw new AwsAbortError(label, already.reason);
    const body = JSON.stringify(input);
    const headers = await signRequest(
      {
        url: this.#url,
        headers: {
          'content-type': this.#api.contentType,
          'x-amz-target': `${this.#api.targetPrefix}.${operation}`,
        },
        body,
      },
      {
        region: this.#region,
        service: this.#api.signingName,
        credentials: this.#credentials(),
        now: new Date(),
      },
    );
    // No try outlasts its two limits together, however slowly an answer trickles in.
    const deadline = timeLimit(this.#connectTimeoutMs + this.#requestTimeoutMs);
    try {
      const { status, text } = await post({
        url: this.#url,
        headers: { ...headers, host: this.#url.host },
        body,
        connectTimeoutMs: this.#connectTimeoutMs,
        requestTimeoutMs: this.#requestTimeoutMs,
        signals: [...signals, deadline.signal],
      });
      if (status !== 200) throw errorFromAnswer(label, status, text);
      return text ? JSON.parse(text) : {};
    } catch (error) {
      throw this.#noAnswer(error, signals, deadline.signal);
    } finally {
      deadline.end();
    }
  }

  /** What a try that got no usable answer throws: the caller's abort first, then by the failure's code. */
  #noAnswer(error: unknown, signals: readonly AbortSignal[], deadline: AbortSignal): unknown {
    const { label } = this.#api;
    if (error instanceof AwsServiceError) return error;
    const aborted = abortedOf(signals);
    if (aborted) return new AwsAbortError(label, aborted.reason);
    if (deadline.aborted) {
      return new AwsTimeoutError(label, 'answer', this.#connectTimeoutMs + this.#requestTimeoutMs, error);
    }
    const code = errorCode(error);
    if (code === 'CONNECT_TIMEOUT') {
      return new AwsTimeoutError(label, 'connect', this.#connectTimeoutMs, error);
    }
    const kind = networkFailureKind(code);
    if (kind === 'timeout') return new AwsTimeoutError(label, 'answer', this.#requestTimeoutMs, error);
    if (kind !== undefined && code !== undefined) return new AwsConnectionError(label, code, error);
    return error;
  }
}
