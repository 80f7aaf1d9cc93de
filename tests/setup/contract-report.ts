/**
 * vitest globalSetup: a folder where each test file leaves the operations and statuses its answers
 * reached (tests/setup/answers.ts); at the end, the documented answers that no test reached are
 * listed. Not a failure: API Gateway's own answers, for one, cannot be reached locally.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { Contract } from '../helpers/contract.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    contractDir: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = await mkdtemp(path.join(tmpdir(), 'payhere-contract-'));
  project.provide('contractDir', dir);
  return async () => {
    const files = await readdir(dir);
    const reached = new Set<string>();
    for (const file of files) {
      for (const status of JSON.parse(await readFile(path.join(dir, file), 'utf8')) as string[])
        reached.add(status);
    }
    await rm(dir, { recursive: true, force: true });
    if (files.length === 0) return;
    const unreached = Contract.fromFile()
      .documentedStatuses()
      .filter((status) => !reached.has(status));
    const byOperation = new Map<string, string[]>();
    for (const entry of unreached) {
      const [operation, status] = entry.split(' ') as [string, string];
      byOperation.set(operation, [...(byOperation.get(operation) ?? []), status]);
    }
    console.log(
      `\nDocumented answers no test reached (${unreached.length} of ${reached.size + unreached.length}):\n` +
        [...byOperation].map(([operation, statuses]) => `  ${operation}: ${statuses.join(', ')}`).join('\n'),
    );
  };
}
