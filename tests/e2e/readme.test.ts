import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../scripts/issuer.ts';
import { documentedShBlocks, root } from '../helpers/doc-blocks.ts';
import { freePort } from '../helpers/ports.ts';

/**
 * What a newcomer does: `npm start`, then the curls of README.md and docs/ as written. Each block is
 * run by bash with only the ports (and the stack file's place) changed.
 */
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
    // As "Every unknown resolves" says its block is run: no settle delay, no wait between looks.
    SETTLE_DELAY_SECONDS: '0',
    SETTLE_SECOND_LOOK_SECONDS: '0',
    UNKNOWN_LOOK_AGAIN_SECONDS: '0',
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
  await unknowns?.stop();
  if (start?.pid !== undefined && start.exitCode === null) {
    const exited = once(start, 'exit');
    process.kill(-start.pid, 'SIGINT');
    await exited;
  }
  await rm(scratch, { recursive: true, force: true });
});

/**
 * Every sh block of README.md and docs/*.md, by `<file> "<section>"`: run against the stack above
 * and held to what its text says, or named below with why it cannot run here. A block that is
 * neither fails the first test, so a new curl in the documentation cannot go unchecked.
 */
const blocks = await documentedShBlocks();

const notRunHere: Record<string, string> = {
  'README.md "Run it"': 'the commands that start this stack and run this suite',
  'README.md "Run it" #2': "PayHere's own sandbox is on the internet, beyond what tests may reach",
  'README.md "Deploy"': 'a deploy needs an AWS account (tests/e2e/package*.test.ts package the stage)',
  'docs/operator.md "Deploy"': 'a deploy needs an AWS account (tests/e2e/package*.test.ts package the stage)',
  'docs/operator.md "The live network path"':
    'a deploy needs an AWS account (package-production.test.ts packages it)',
  'docs/operator.md "AWS WAF, on in every deployed stage"':
    'a deploy needs an AWS account (package-production.test.ts packages it)',
  'docs/performance.md "Checks"': 'the checks this suite is part of',
};

/** The sh block under `key`, with the documented ports and stack file replaced by the test's. */
function documented(key: string): string {
  const block = blocks.find((candidate) => candidate.key === key);
  if (!block) throw new Error(`no sh block ${key}`);
  return block.text
    .replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1:3001', `127.0.0.1:${sandboxPort}`)
    .replaceAll('.local/stack.env', path.join(scratch, 'stack.env'));
}

/** Run a block with bash, one answer per line: curl prints no newline after a body, one is added. */
async function runLines(block: string, timeout: number): Promise<string[]> {
  const script = `set -euo pipefail\ncurl() { command curl "$@"; echo; }\n${block}`;
  const { stdout } = await run('bash', ['-c', script], { cwd: root, env, timeout });
  return stdout.trim().split('\n');
}

/**
 * "Every unknown resolves" waits out a request's own time (its Lambda's 25 s) before the settle job
 * may look at it: it runs beside other blocks rather than holding the file that long. It starts
 * alone, until the curls before its wait have answered (its fault is the sandbox's next charge,
 * which another block's charge could take), after the blocks its orders would change (`ALONE`). The
 * blocks it runs beside inject no faults (checked in its test), and the settle job it runs is one
 * the schedule could run at any time.
 */
const UNKNOWNS = 'docs/app.md "Every unknown resolves"';
/** Blocks run before it starts: "order lists" lists the merchant's newest order. */
const ALONE = ['docs/app.md "The back office: order lists"'];
let unknowns: ReturnType<typeof inBackground> | undefined;

/** Starts "Every unknown resolves" once, and waits until it waits. */
async function startUnknowns(): Promise<void> {
  unknowns ??= inBackground(documented(UNKNOWNS), 90_000);
  await unknowns.waiting;
}

/**
 * runLines's run of `block`, started now: `waiting` once the curls before its first `sleep` have
 * answered, `lines` at its end.
 */
function inBackground(block: string, timeout: number) {
  const script = `set -euo pipefail\ncurl() { command curl "$@"; echo; }\n${block}`;
  const before = block.slice(0, block.search(/^sleep /m)).match(/^curl /gm)?.length ?? 0;
  const child = spawn('bash', ['-c', script], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  let reached: () => void = () => {};
  const waiting = new Promise<void>((resolve) => {
    reached = resolve;
  });
  child.stdout!.on('data', (chunk) => {
    stdout += chunk;
    if (stdout.split('\n').length > before) reached();
  });
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeout);
  const ended = once(child, 'exit').then(([code, signal]) => {
    clearTimeout(timer);
    reached();
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  return {
    waiting,
    lines: async (): Promise<string[]> => {
      const { code, signal } = await ended;
      if (code !== 0) throw new Error(`the block exited ${code ?? signal}:\n${stderr}\n${stdout}`);
      return stdout.trim().split('\n');
    },
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      process.kill(-child.pid!, 'SIGKILL');
      await ended;
    },
  };
}

const runHere: Record<string, () => Promise<void>> = {
  'README.md "Run it" #4': async () => {
    const block = documented('README.md "Run it" #4');
    // "it prints the same with a token filled in"
    const printed = /curl -s -H "Authorization: Bearer \S+" (\S+)/.exec(output)?.[1];
    expect(block.trim()).toBe(`curl -s -H "Authorization: Bearer $(npm run -s token)" ${printed}`);

    const answers = await runCurls(block);

    expect(answers.map(({ status }) => status)).toEqual([200]);
    expect(JSON.parse(answers[0]!.body)).toMatchObject({
      status: 1,
      msg: 'Payments with order_id:LP8006126139',
    });
  },

  'README.md "Run it" #3': async () => {
    const [merchant, customer] = (await runLines(documented('README.md "Run it" #3'), 30_000)).map(claims);

    // "the merchant: every scope, one hour"
    expect(merchant!.scope.split(' ').sort()).toEqual([...ALL_SCOPES.split(' ')].sort());
    expect(merchant!.exp - merchant!.iat).toBe(3600);
    // "a customer": the scopes, lifetime and subject asked for, no merchant scope.
    expect(customer).toMatchObject({ sub: 'alice', scope: 'payments:read payments:charge' });
    expect(customer!.exp - customer!.iat).toBe(600);
  },

  'docs/app.md "The routes, with the seeded sandbox data"': async () => {
    const answers = await runCurls(documented('docs/app.md "The routes, with the seeded sandbox data"'));

    for (const { body, status } of answers) {
      expect({ status, envelope: JSON.parse(body).status }, body.slice(0, 300)).toEqual({
        status: 200,
        envelope: 1,
      });
    }
  },

  'docs/app.md "Customers and the merchant"': async () => {
    const answers = await runCurls(documented('docs/app.md "Customers and the merchant"'));

    expect(answers.map((answer) => answer.status)).toEqual([201, 200, 404, 201, 200, 403]);
    expect(JSON.parse(answers[4]!.body).msg).toBe('Found 0 subscriptions');
  },

  'docs/app.md "The back office: order lists"': async () => {
    const answers = await runCurls(documented('docs/app.md "The back office: order lists"'));
    const [newest, carols, others] = answers.slice(3).map((answer) => JSON.parse(answer.body));

    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 200, 200, 200]);
    expect(newest.data.orders.map((order: { order_id: string }) => order.order_id)).toEqual(['Order-4003']);
    expect(newest.data.next_cursor).toEqual(expect.any(String));
    expect(carols.msg).toBe('Found 2 orders');
    expect(carols.data.orders.map((order: { order_id: string }) => order.order_id)).toEqual([
      'Order-4002',
      'Order-4001',
    ]);
    expect(others.msg).toBe('Found 0 orders');
  },

  'docs/app.md "The back office: refund records"': async () => {
    const answers = await runCurls(documented('docs/app.md "The back office: refund records"'));
    const [merchant, dave] = answers.slice(4).map((answer) => JSON.parse(answer.body));

    expect(answers.map((answer) => answer.status)).toEqual([200, 409, 200, 409, 200, 200]);
    expect(JSON.parse(answers[1]!.body).msg).toMatch(/has 750.00 LKR left to refund, less than 800.00 LKR/);
    expect(merchant.data).toMatchObject({ amount: 1000, refunded: 1000, left: 0, order_id: 'Order-5001' });
    expect(merchant.data.refunds.map((refund: { amount: number }) => refund.amount)).toEqual([250, 750]);
    expect(dave.data.refunds.map((refund: { by: string }) => refund.by)).toEqual(['merchant', 'merchant']);
  },

  'docs/app.md "The back office: reconciliation"': async () => {
    // One line per answer: the charge, the sandbox's checkout, the report as JSON, then its CSV lines.
    const [charge, checkout, json, ...csv] = await runLines(
      documented('docs/app.md "The back office: reconciliation"'),
      120_000,
    );

    expect(JSON.parse(charge!)).toMatchObject({ status: 1, data: { status_code: 2 } });
    expect(JSON.parse(checkout!)).toMatchObject({ status: 1, msg: 'Checkout completed' });
    const answer = JSON.parse(json!);
    expect(answer.status).toBe(1);
    const report = answer.data;
    const today = new Date().toISOString().slice(0, 10);
    expect(report).toMatchObject({ from: today, to: today, time_zone: 'UTC' });
    const day = report.days.find((d: { date: string }) => d.date === today);
    expect(day.payments).toContainEqual(
      expect.objectContaining({ order_id: 'Order-6001', gross: 700, fee: 20.3, net: 679.7, in_ledger: true }),
    );
    expect(day.differences).toContainEqual(
      expect.objectContaining({
        kind: 'payment_not_in_ledger',
        order_id: 'Order-6002',
        ledger_status: 'created',
        payhere_amount: 900,
        action: expect.stringContaining('GET /gateway/api/checkouts/Order-6002 looks it up'),
      }),
    );
    expect(day.differences.filter((d: { order_id: string }) => d.order_id === 'Order-6001')).toEqual([]);
    expect(csv[0]).toMatch(/^date,line,kind,order_id,payment_id,.*\r$/);
    expect(csv.some((line) => line.startsWith(`${today},difference,payment_not_in_ledger,Order-6002,`))).toBe(
      true,
    );
  },

  'docs/app.md "The back office: what an order keeps"': async () => {
    const lines = await runLines(documented('docs/app.md "The back office: what an order keeps"'), 60_000);
    const [created, erins, merchants, refused, subscription] = lines.map((line) => JSON.parse(line));

    expect(created).toMatchObject({ status: 1, data: { order_id: 'Order-7001' } });
    const kept = {
      item_list: [{ name: 'Door bell', number: 'DB-1', quantity: 1, unit_amount: 1500 }],
      customer_details: { first_name: 'Erin', email: 'erin@example.com' },
    };
    expect(erins.data).toMatchObject({ ...kept, metadata: null });
    expect(merchants.data).toMatchObject({ ...kept, metadata: { crm_id: 'C-7001' } });
    expect(refused).toMatchObject({ status: -1, data: { code: 'invalid_request' } });
    expect(JSON.stringify(refused.data.errors)).toContain('a_key_of_forty_one_characters_is_too_long');
    expect(subscription.data, JSON.stringify(subscription.data)).toMatchObject({
      status: 'succeeded',
      startup_fee: 1000,
      next_installment: expect.stringMatching(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/),
    });
  },

  // The pre-approval flow: saves Alice's card through the sandbox's checkout and notification, and charges it.
  'docs/app.md "Notifications: saving a card, holds, payments in the app, subscriptions"': async () => {
    const lines = await runLines(
      documented('docs/app.md "Notifications: saving a card, holds, payments in the app, subscriptions"'),
      60_000,
    );

    const answers = lines.map((line) => JSON.parse(line));
    expect(answers.at(-1)).toMatchObject({ status: 1, data: { order_id: 'Order-3001', status_code: 2 } });
    expect(answers[0]).toMatchObject({
      status: 1,
      data: { outcome: 'success', customer_token: expect.any(String) },
    });
    expect(answers[0].data.deliveries).toEqual([expect.objectContaining({ status: 200 })]);
  },

  // The settlement of a lost charge, as not processed, and a notified hold shown unverified.
  'docs/app.md "Every unknown resolves"': async () => {
    // Started before the blocks that run before it, but for ALONE's: none of them injects a fault.
    const beside = RUN_ORDER.slice(ALONE.length, RUN_ORDER.indexOf(UNKNOWNS));
    for (const key of beside)
      expect(blocks.find((block) => block.key === key)!.text, key).not.toMatch(/\/faults/);
    await startUnknowns();
    const lines = await unknowns!.lines();

    const [fault, lost, repeat, order, hold] = lines.map((line) => JSON.parse(line));
    expect(fault).toMatchObject({ status: 1 });
    expect(lost).toMatchObject({ status: 0, data: { code: 'outcome_unknown' } });
    expect(repeat).toMatchObject({ status: -1, data: { status_code: -2, payment_id: null } });
    expect(repeat.msg).toMatch(/not processed/);
    expect(order).toMatchObject({ data: { order_id: 'Order-8001', status: 'failed' } });
    expect(hold).toMatchObject({ data: { order_id: 'Hold-8002', status: 'succeeded', verified: false } });
  },

  // The local DynamoDB's fault controls, at the address npm start wrote.
  'docs/operator.md "Faults in the local DynamoDB"': async () => {
    const answers = await runCurls(documented('docs/operator.md "Faults in the local DynamoDB"'));

    expect(answers.map(({ status }) => status)).toEqual([200, 200, 200]);
    const [injected, counted, cleared] = answers.map(({ body }) => JSON.parse(body));
    expect(injected).toEqual({ pending: 1 });
    // The settle job may change an order in between, and take the fault.
    expect([{ pending: 1 }, { pending: 0 }]).toContainEqual(counted);
    expect(cleared).toEqual({ pending: 0 });
  },

  // sls invoke local of one function, with the addresses npm start wrote and a fresh token.
  'docs/operator.md "Invoke a function locally"': async () => {
    const { stdout } = await run(
      'bash',
      ['-c', `set -euo pipefail\n${documented('docs/operator.md "Invoke a function locally"')}`],
      {
        cwd: root,
        env,
        timeout: 90_000,
      },
    );

    const printed = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { statusCode: number; body: unknown };
    expect(printed.statusCode).toBe(200);
    expect(printed.body).toMatchObject({
      status: 1,
      msg: expect.stringMatching(/^Found \d+ subscriptions$/),
    });
  },
};

describe('npm start, as the README says', () => {
  it('prints the base URL, a token and a first curl that works', async () => {
    const curl = /curl -s -H "Authorization: Bearer (\S+)" (\S+)/.exec(output);

    expect(output).toContain(`API ready at http://127.0.0.1:${port}/gateway/api`);
    expect(curl).not.toBeNull();
    const answer = await fetch(curl![2]!, { headers: { authorization: `Bearer ${curl![1]}` } });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { status: number }).status).toBe(1);
  });
});

/** The blocks run here, in the documentation's order, but ALONE's first. */
const RUN_ORDER = [
  ...ALONE,
  ...blocks.map((block) => block.key).filter((key) => key in runHere && !ALONE.includes(key)),
];

describe('the documentation, as written', () => {
  it('runs every sh block of README.md and docs/, or says why it cannot', () => {
    const named = [...Object.keys(runHere), ...Object.keys(notRunHere)].sort();

    expect(blocks.map((block) => block.key).sort()).toEqual(named);
  });

  it.each(RUN_ORDER)(
    '%s answers as its text says',
    async (key) => {
      if (!ALONE.includes(key)) await startUnknowns();
      await runHere[key]!();
    },
    150_000,
  );
});

/** A token's claims, read without checking its signature: what npm run token put in it. */
function claims(token: string): { sub: string; scope: string; iat: number; exp: number } {
  expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

/** Run a block with bash, curl's HTTP status appended to each answer; one answer per curl. */
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
