import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const slsBin = createRequire(import.meta.url).resolve('osls/bin/serverless.js');

export interface Offline {
  baseUrl: string;
  process: ChildProcess;
  /** The last 20,000 characters serverless-offline wrote (a handler's failure is logged there). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Run the API through serverless-offline (`sls offline start`) on the project's own Node, with
 * `env` added to the environment, and resolve once it answers HTTP on `port`.
 */
export async function startOffline(options: {
  port: number;
  lambdaPort: number;
  env: Record<string, string>;
  stdio?: 'inherit' | 'pipe';
  readyTimeoutMs?: number;
}): Promise<Offline> {
  const child = spawn(process.execPath, [slsBin, 'offline', 'start', '--stage', 'local'], {
    cwd: root,
    env: {
      ...process.env,
      ...options.env,
      PORT: String(options.port),
      OFFLINE_LAMBDA_PORT: String(options.lambdaPort),
    },
    stdio: ['ignore', options.stdio ?? 'pipe', options.stdio ?? 'pipe'],
    detached: process.platform !== 'win32',
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output = (output + chunk).slice(-20_000);
  });
  child.stderr?.on('data', (chunk) => {
    output = (output + chunk).slice(-20_000);
  });
  const baseUrl = `http://127.0.0.1:${options.port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    killTree(child, 'SIGTERM');
    const timer = setTimeout(() => killTree(child, 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const giveUpAt = Date.now() + (options.readyTimeoutMs ?? 60_000);
  while (Date.now() < giveUpAt) {
    if (child.exitCode !== null) throw new Error(`serverless-offline exited early:\n${output}`);
    try {
      await fetch(`${baseUrl}/__ready`, { signal: AbortSignal.timeout(1_000) });
      return { baseUrl, process: child, output: () => output, stop };
    } catch {
      await delay(250);
    }
  }
  await stop();
  throw new Error(`serverless-offline did not answer within the time limit:\n${output}`);
}

/** serverless-offline starts workers of its own: signal the whole process group. */
function killTree(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // already gone
  }
}
