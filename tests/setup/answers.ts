/**
 * vitest setupFiles: every answer the API gives in a test file is held to the API description after
 * the file's tests (openapi/openapi.json): answers to fetch() calls on loopback under /gateway/
 * (serverless-offline, the client) and in-process handler calls (tests/helpers/gateway.ts). A file
 * whose answers do not match fails; the operations and statuses reached are kept for the run's
 * report of documented answers no test reached (tests/setup/contract-report.ts).
 */
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, inject } from 'vitest';
import { documentContract, recordAnswer, recordedAnswers } from '../helpers/contract.ts';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const WRAPPED = Symbol.for('payhere.recordingFetch');

function requestOf(input: Parameters<typeof fetch>[0], init?: RequestInit): { method: string; url: URL } {
  if (input instanceof Request) return { method: input.method, url: new URL(input.url) };
  return { method: init?.method ?? 'GET', url: new URL(String(input)) };
}

/**
 * Where the fetch wrapper records: this file's own recordAnswer. The wrapper is installed once per
 * worker, and a worker runs file after file (vitest.config.ts), each with its own module of
 * tests/helpers/contract.ts; a wrapper holding the first file's would check the answers of every
 * later file against nothing.
 */
const RECORDER = Symbol.for('payhere.recordAnswer');
const worker = globalThis as typeof globalThis & { [RECORDER]?: typeof recordAnswer };
worker[RECORDER] = recordAnswer;

const original = globalThis.fetch as typeof fetch & { [WRAPPED]?: true };
if (!original[WRAPPED]) {
  const recording = async (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
    const response = await original(input, init);
    const { method, url } = requestOf(input, init);
    if (LOOPBACK.has(url.hostname) && url.pathname.startsWith('/gateway/')) {
      const copy = response.clone();
      worker[RECORDER]!(
        copy.text().then((body) => ({
          method: method.toUpperCase(),
          path: url.pathname,
          status: copy.status,
          headers: Object.fromEntries(copy.headers),
          body,
        })),
      );
    }
    return response;
  };
  globalThis.fetch = Object.assign(recording, { [WRAPPED]: true as const });
}

afterAll(async () => {
  const answers = await recordedAnswers();
  if (answers.length === 0) return;
  const contract = documentContract();
  const reached = answers.flatMap((answer) => {
    const operation = contract.operationOf(answer);
    return operation ? [`${operation.operationId} ${answer.status}`] : [];
  });
  await writeFile(path.join(inject('contractDir'), `${randomUUID()}.json`), JSON.stringify(reached));
  const problems = [...new Set(answers.flatMap((answer) => contract.problems(answer)))];
  if (problems.length > 0) {
    throw new Error(`Answers that do not match openapi/openapi.json:\n${problems.join('\n')}`);
  }
});
