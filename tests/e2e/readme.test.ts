import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.ts';

/**
 * What a newcomer does: `npm start`, then the README's curls as written. The README block is run
 * by bash with only the port changed; curl's own status code is appended to each answer.
 */
const root = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

let start: ChildProcess;
let output = '';
let port: number;
let sandboxPort: number;
let scratch: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  port = await freePort();
  scratch = await mkdtemp(path.join(tmpdir(), 'readme-'));
  sandboxPort = await freePort();
  env = {
    ...process.env,
    PORT: String(port),
    SANDBOX_PORT: String(sandboxPort),
    OFFLINE_LAMBDA_PORT: String(await freePort()),
    LOCAL_ISSUER_FILE: path.join(scratch, 'issuer.json'),
    ESBUILD_WORK_FOLDER: '.esbuild-readme-test',
    LOG_LEVEL: 'warn',
    // As "Every unknown resolves" says its block is run: no settle delay.
    SETTLE_DELAY_SECONDS: '0',
  };
  start = spawn(process.execPath, ['scripts/start.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  start.stdout!.on('data', (chunk) => {
    output += chunk;
  });
  start.stderr!.on('data', (chunk) => {
    output += chunk;
  });
  const giveUpAt = Date.now() + 90_000;
  while (!output.includes('Ctrl-C stops everything')) {
    if (start.exitCode !== null || Date.now() > giveUpAt)
      throw new Error(`npm start did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}, 120_000);

afterAll(async () => {
  if (start?.pid !== undefined && start.exitCode === null) {
    const exited = once(start, 'exit');
    process.kill(-start.pid, 'SIGINT');
    await exited;
  }
  await rm(scratch, { recursive: true, force: true });
});

/** The front door and the docs it maps: every file whose curls a newcomer may run as written. */
const DOCUMENTS = [
  'README.md',
  'docs/app.md',
  'docs/budget.md',
  'docs/operator.md',
  'docs/performance.md',
  'docs/maintainer.md',
];

/** Every sh block of `file` that calls the local API, under its section's heading. */
async function localCurlBlocks(file: string): Promise<Array<{ heading: string; block: string }>> {
  const text = await readFile(path.join(root, file), 'utf8');
  const blocks: Array<{ heading: string; block: string }> = [];
  for (const match of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    if (!/^curl |\$\(curl /m.test(match[1]!)) continue;
    const heading = text
      .slice(0, match.index)
      .split('\n')
      .filter((line) => line.startsWith('#'))
      .at(-1)!;
    blocks.push({ heading, block: match[1]! });
  }
  return blocks;
}

/** The sh block of a section of `file`, with the documented ports replaced by the test's. */
async function readmeBlock(heading: string, file = 'docs/app.md'): Promise<string> {
  const text = await readFile(path.join(root, file), 'utf8');
  const section = text.slice(text.indexOf(heading));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error(`no sh block under ${heading} in ${file}`);
  return block
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1:3001', `127.0.0.1:${sandboxPort}`);
}

/** The sections whose curls the tests below run, by file: any other block of curls fails the first test. */
const RUN = {
  'README.md': ['## Run it'],
  'docs/app.md': [
    '## The routes, with the seeded sandbox data',
    '## Customers and the merchant',
    '## Notifications: saving a card, holds, payments in the app, subscriptions',
    '## Every unknown resolves',
  ],
} as Record<string, string[]>;

describe('the README and docs/, as written', () => {
  it('has no block of curls against npm start that no test runs', async () => {
    for (const file of DOCUMENTS) {
      const headings = (await localCurlBlocks(file)).map((found) => found.heading);
      expect(headings, file).toEqual(RUN[file] ?? []);
    }
  });

  it('the README’s first curl answers 200 with status 1', async () => {
    const readme = await readFile(path.join(root, 'README.md'), 'utf8');
    const first = (await localCurlBlocks('README.md'))[0]!.block;

    const answers = await runCurls(first.replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`));

    expect(readme.indexOf(first)).toBeLessThan(readme.indexOf('## The app'));
    expect(answers).toHaveLength(1);
    expect({ status: answers[0]!.status, envelope: JSON.parse(answers[0]!.body).status }).toEqual({
      status: 200,
      envelope: 1,
    });
  });

  it('npm start prints the base URL, a token and a first curl that works', async () => {
    const curl = /curl -s -H "Authorization: Bearer (\S+)" (\S+)/.exec(output);

    expect(output).toContain(`API ready at http://127.0.0.1:${port}/gateway/api`);
    expect(curl).not.toBeNull();
    const answer = await fetch(curl![2]!, { headers: { authorization: `Bearer ${curl![1]}` } });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { status: number }).status).toBe(1);
  });

  it('every curl of "The routes" answers 200 with status 1', async () => {
    const block = await readmeBlock('## The routes');

    const answers = await runCurls(block);

    for (const { body, status } of answers) {
      expect({ status, envelope: JSON.parse(body).status }, body.slice(0, 300)).toEqual({
        status: 200,
        envelope: 1,
      });
    }
  });

  it('the curls of "Customers and the merchant" answer as their comments say', async () => {
    const block = await readmeBlock('## Customers and the merchant');

    const answers = await runCurls(block);

    expect(answers.map((answer) => answer.status)).toEqual([201, 200, 404, 201, 200, 403]);
    expect(JSON.parse(answers[4]!.body).msg).toBe('Found 0 subscriptions');
  });
});

describe('the pre-approval flow of "Notifications", as written', () => {
  it('saves Alice’s card through the sandbox’s checkout and notification, and charges it', async () => {
    const block = await readmeBlock('## Notifications');

    // curl prints no newline after a body: one is added, so that each answer is a line.
    const script = `set -euo pipefail\ncurl() { command curl "$@"; echo; }\n${block}`;
    const { stdout } = await run('bash', ['-c', script], {
      cwd: root,
      env,
      timeout: 60_000,
    });

    const answers = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(answers.at(-1)).toMatchObject({ status: 1, data: { order_id: 'Order-3001', status_code: 2 } });
    expect(answers[0]).toMatchObject({
      status: 1,
      data: { outcome: 'success', customer_token: expect.any(String) },
    });
    expect(answers[0].data.deliveries).toEqual([expect.objectContaining({ status: 200 })]);
  });
});

describe('the settlement and the unverified hold of "Every unknown resolves", as written', () => {
  it('settles a lost charge as not processed, and shows a notified hold unverified', async () => {
    const block = await readmeBlock('## Every unknown resolves');

    const script = `set -euo pipefail\ncurl() { command curl "$@"; echo; }\n${block}`;
    const { stdout } = await run('bash', ['-c', script], { cwd: root, env, timeout: 90_000 });

    const [fault, lost, repeat, order, hold] = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(fault).toMatchObject({ status: 1 });
    expect(lost).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    expect(repeat).toMatchObject({ status: -1, data: { status_code: -2, payment_id: null } });
    expect(repeat.msg).toMatch(/not processed/);
    expect(order).toMatchObject({ data: { order_id: 'Order-4001', status: 'failed' } });
    expect(hold).toMatchObject({ data: { order_id: 'Hold-4002', status: 'succeeded', verified: false } });
  }, 120_000);
});

/** Run a README block with bash, curl's HTTP status appended to each answer; one answer per curl. */
async function runCurls(block: string): Promise<Array<{ body: string; status: number }>> {
  const script = `set -e\ncurl() { command curl -w '\\n@@%{http_code}\\n' "$@"; }\n${block}`;
  const { stdout } = await run('bash', ['-c', script], { cwd: root, env, timeout: 60_000 });
  const answers = stdout
    .split(/\n@@(\d{3})\n/)
    .reduce<Array<{ body: string; status: number }>>((all, part, i, parts) => {
      if (i % 2 === 0 && i + 1 < parts.length) all.push({ body: part, status: Number(parts[i + 1]) });
      return all;
    }, []);
  expect(answers).toHaveLength((block.match(/^curl /gm) ?? []).length);
  return answers;
}

describe('npm start against an outside gateway', () => {
  it.each([
    ['an address that is not a URL', { GATEWAY_BASE_URL: 'notaurl' }, /GATEWAY_BASE_URL must be an absolute/],
    ['a gateway without credentials', { GATEWAY_BASE_URL: 'http://127.0.0.1:9' }, /set GATEWAY_APP_ID/],
  ])('refuses %s before starting anything, naming the variable', async (_, gateway, message) => {
    const outside: NodeJS.ProcessEnv = { ...process.env, ...gateway };
    for (const name of ['GATEWAY_APP_ID', 'GATEWAY_APP_SECRET', 'GATEWAY_SECRET_ID']) delete outside[name];

    const failure = await run(process.execPath, ['scripts/start.ts'], { cwd: root, env: outside }).then(
      () => undefined,
      (error: { stderr: string }) => error,
    );

    expect(failure, 'npm start ran with a gateway it cannot use').toBeDefined();
    expect(failure!.stderr).toMatch(message);
  });
});
