/**
 * The bench's candidate for lib/log/log.ts (bench/candidates.ts, decision `logger`): the same
 * interface and the same redacted line over Powertools Logger, with the Lambda context's keys and
 * X-Ray's trace id. Written as lib/log/log.ts would be and checked against the same tests before it
 * was measured; kept here to measure again. Not used by any function: its cold import and first
 * line cost more than the 3 ms allowed (docs/performance.md).
 */
import { fileURLToPath } from 'node:url';
import { LogFormatter, Logger, LogItem } from '@aws-lambda-powertools/logger';
import type { LogAttributes, LogLevel, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import type { Context } from 'aws-lambda';
import { redact, redactText } from '../lib/log/redact.ts';
import { mapStackTraces } from '../lib/log/stack.ts';

// As lib/log/log.ts does, so that the two load the same.
mapStackTraces(fileURLToPath(import.meta.url));

/**
 * One JSON line per event, written by Powertools Logger (the family of lib/log/metrics.ts): with every
 * line of an invocation its Lambda context (cold start, function name and version, request id) and
 * X-Ray's trace id. Only what the call site passes is written besides, and every line goes
 * through `redact` on the way out, so secrets, tokens, card numbers and bodies passed by mistake
 * are removed and emails and phone numbers masked. The line keeps the shape the audit trail
 * (lib/log/audit.ts) and its readers rely on: `level` in lower case, `time`, `message`, the fields.
 */
class RedactedLine extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, fields: LogAttributes): LogItem {
    const invocation = attributes.lambdaContext;
    // Written as one object, not merged key by key: the fields are already a redacted copy.
    return new LogItem({
      attributes: {
        level: attributes.logLevel.toLowerCase(),
        time: attributes.timestamp.toISOString(),
        message: redactText(attributes.message),
        cold_start: invocation?.coldStart,
        function_name: invocation?.functionName,
        function_version: invocation?.functionVersion,
        function_request_id: invocation?.awsRequestId,
        xray_trace_id: attributes.xRayTraceId,
        ...(redact(fields) as LogAttributes),
      },
    });
  }
}

const logger = new Logger({ logFormatter: new RedactedLine() });

/**
 * LOG_LEVEL as it is when a line is written (the bench and the tests change it in a running
 * process); Powertools reads it once. Anything but these four and `silent` means info, as before.
 */
const LEVELS = new Set(['debug', 'info', 'warn', 'error', 'silent']);
let levelFollowed: string | undefined;
function followLogLevel(): void {
  const wanted = process.env.LOG_LEVEL ?? 'info';
  if (wanted === levelFollowed) return;
  levelFollowed = wanted;
  logger.setLogLevel((LEVELS.has(wanted) ? wanted : 'info').toUpperCase() as LogLevel);
}

/** The invocation's Lambda context, on every line until the next invocation's. */
export function setLambdaContext(context: Context): void {
  logger.addContext(context);
}

/** Fields added to every line until the next call (request id, caller). */
export function setLogContext(fields: Record<string, unknown>): void {
  logger.resetKeys();
  logger.appendKeys(fields);
}

type Level = 'debug' | 'info' | 'warn' | 'error';

function write(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  followLogLevel();
  logger[level](message, fields);
}

export const log = {
  debug: (message: string, fields?: Record<string, unknown>) => write('debug', message, fields),
  info: (message: string, fields?: Record<string, unknown>) => write('info', message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write('warn', message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write('error', message, fields),
};

/** What may be logged of an error: its class, code and message, and the same of its causes. */
export function describeError(error: unknown, depth = 0): Record<string, unknown> {
  if (!(error instanceof Error) || depth > 3) return { value: typeof error };
  const code = (error as { code?: unknown }).code;
  const described: Record<string, unknown> = {
    name: error.name,
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(error.cause === undefined ? {} : { cause: describeError(error.cause, depth + 1) }),
  };
  // Read when the line is written, not when it is described: a line below the log level never
  // formats the stack (a container's first stack reads the bundle's source map: ./stack.ts).
  if (depth === 0) {
    Object.defineProperty(described, 'stack', {
      enumerable: true,
      get: () => error.stack?.split('\n').slice(1, 6).join('\n') || undefined,
    });
  }
  return described;
}
