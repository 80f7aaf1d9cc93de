// The CLI as `npm run sandbox` starts it: one line with the URL, a clean stop on SIGTERM.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const main = fileURLToPath(new URL('../../sandbox/main.ts', import.meta.url));

describe('sandbox/main.ts', () => {
  it('serves on SANDBOX_HOST:SANDBOX_PORT, prints its URL and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [main], {
      env: { ...process.env, SANDBOX_PORT: '0', SANDBOX_HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const [line] = (await once(child.stdout, 'data')) as [Buffer];
      const url = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line.toString())?.[1];
      const answer = await fetch(`${url}/merchant/v1/subscription`);
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');

      expect(line.toString()).toMatch(/^PayHere sandbox listening on http:\/\/127\.0\.0\.1:\d+\n$/);
      expect(answer.status).toBe(401);
      expect(code).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('refuses a SANDBOX_PORT that is not a port', async () => {
    const child = spawn(process.execPath, [main], {
      env: { ...process.env, SANDBOX_PORT: 'eighty' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const [code] = await once(child, 'exit');

    expect(code).toBe(1);
  });
});
