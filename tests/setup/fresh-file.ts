/**
 * vitest setupFiles, first of the integration tier's: each test file of a worker starts as it would
 * in a process of its own, though the worker (and the libraries in node_modules it loaded) serves
 * several files in turn (vitest.config.ts, `isolate: false`). The environment is put back to what
 * the worker started with, whatever the last file set; real timers are back; and the service's
 * modules are evaluated again on first import, so that each file's handlers read its own tables,
 * its own sandbox's address and its own settings at start-up, with no cache, limiter or token
 * another file filled.
 */
import { vi } from 'vitest';

const FIRST_ENVIRONMENT = Symbol.for('payhere.test.firstEnvironment');
const worker = globalThis as typeof globalThis & { [FIRST_ENVIRONMENT]?: Record<string, string | undefined> };

worker[FIRST_ENVIRONMENT] ??= { ...process.env };
const first = worker[FIRST_ENVIRONMENT];
for (const name of Object.keys(process.env)) if (!(name in first)) delete process.env[name];
Object.assign(process.env, first);

vi.useRealTimers();
vi.resetModules();
