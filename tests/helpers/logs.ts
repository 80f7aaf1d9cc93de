import { vi } from 'vitest';

export interface LogLine {
  level: string;
  message: string;
  [field: string]: unknown;
}

/**
 * The service's JSON log lines from now on, parsed, at `level` (vitest runs with LOG_LEVEL=silent).
 * The spies end with the test (restoreMocks); the caller undoes the level with vi.unstubAllEnvs.
 */
export function captureLogs(level = 'info'): LogLine[] {
  const lines: LogLine[] = [];
  const capture = (chunk: string | Uint8Array): boolean => {
    for (const line of String(chunk).split('\n')) {
      if (line.startsWith('{')) lines.push(JSON.parse(line) as LogLine);
    }
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture as typeof process.stdout.write);
  vi.spyOn(process.stderr, 'write').mockImplementation(capture as typeof process.stderr.write);
  vi.stubEnv('LOG_LEVEL', level);
  return lines;
}
