import { fileURLToPath } from 'node:url';
import { redact, redactText } from './redact.ts';
import { mapStackTraces } from './stack.ts';

// Every function logs through here, so every bundle maps its stack traces (./stack.ts): in a
// bundle, this module's URL is the bundle's.
mapStackTraces(fileURLToPath(import.meta.url));

/**
 * One JSON line per event. Only what the call site passes is written, and every line goes through
 * `redact` on the way out, so secrets, tokens, card numbers and bodies passed by mistake are
 * removed and emails and phone numbers masked.
 */
type Level = 'debug' | 'info' | 'warn' | 'error';

const LEVELS: Record<string, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };
const threshold = () => LEVELS[process.env.LOG_LEVEL ?? 'info'] ?? LEVELS.info!;

let context: Record<string, unknown> = {};

/** Fields added to every line until the next call (request id, caller). */
export function setLogContext(fields: Record<string, unknown>): void {
  context = fields;
}

function write(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  if (LEVELS[level]! < threshold()) return;
  const record = redact({ ...context, ...fields }) as Record<string, unknown>;
  const line = JSON.stringify({
    level,
    time: new Date().toISOString(),
    message: redactText(message),
    ...record,
  });
  (level === 'error' || level === 'warn' ? process.stderr : process.stdout).write(`${line}\n`);
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
