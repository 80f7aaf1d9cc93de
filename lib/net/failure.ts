/**
 * How a request failed below HTTP, read from the error's stable `code` (undici's `UND_ERR_*`, the
 * socket's `E*`, or lib/aws/http.ts's own names for its limits), never from its class or message:
 * both the PayHere transport (lib/gateway/transport.ts, over undici) and the AWS JSON client
 * (lib/aws/client.ts, over node:http) decide by it whether a request may have been sent and
 * whether it is worth another try.
 */

/** `connect`: no connection, nothing sent; `timeout`: no answer in time; `reset`: the connection was lost. */
export type NetworkFailureKind = 'connect' | 'timeout' | 'reset';

const KINDS: Record<string, NetworkFailureKind> = {
  ECONNREFUSED: 'connect',
  ENOTFOUND: 'connect',
  EAI_AGAIN: 'connect',
  EHOSTUNREACH: 'connect',
  ENETUNREACH: 'connect',
  UND_ERR_CONNECT_TIMEOUT: 'connect',
  CONNECT_TIMEOUT: 'connect',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  UND_ERR_ABORTED: 'timeout',
  ETIMEDOUT: 'timeout',
  HEADERS_TIMEOUT: 'timeout',
  BODY_TIMEOUT: 'timeout',
  ECONNRESET: 'reset',
  EPIPE: 'reset',
  UND_ERR_SOCKET: 'reset',
  UND_ERR_CLOSED: 'reset',
  UND_ERR_DESTROYED: 'reset',
};

/** The failure's code: the error's own, or the first one down its chain of causes. */
export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error ? errorCode(cause) : undefined;
}

/** What a code says about the request, or undefined for a code that is no network failure. */
export function networkFailureKind(code: string | undefined): NetworkFailureKind | undefined {
  return code !== undefined && Object.hasOwn(KINDS, code) ? KINDS[code] : undefined;
}
