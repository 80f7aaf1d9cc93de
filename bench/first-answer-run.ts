/**
 * `node bench/first-answer-run.ts [pairs] [--rtt ms] [--work ms] [--handshakes n] [--dynamodb ms] [--freeze ms]`:
 * the comparison of bench/first-answer.ts alone, printed, for working on it, over the network
 * model the flags change (bench/network.ts DEFAULT_MODEL otherwise); exits 1 when a budget is
 * missed. `npm run bench` runs it with everything else and keeps its figures; `npm run bench --
 * --first-answer` runs it alone and writes bench/out/FIRST-ANSWER.md.
 */
import { loadavg } from 'node:os';
import { FIRST_ANSWER_BUDGET, firstAnswerSection, measureFirstAnswer } from './first-answer.ts';
import { firstAnswerBundles, modelFromArgs } from './first-answer-cli.ts';
import { round } from './stats.ts';

const args = process.argv.slice(2);
const pairs = Number(args[0]) || FIRST_ANSWER_BUDGET.pairs;
const model = modelFromArgs(args);
const load = () =>
  loadavg()
    .map((average) => round(average, 2))
    .join(', ');
const loadBefore = load();
const bundles = await firstAnswerBundles();
const { lines, failures } = firstAnswerSection(
  await measureFirstAnswer(
    bundles,
    pairs,
    model,
    process.env.SERVICE_ENV ? JSON.parse(process.env.SERVICE_ENV) : {},
  ),
  model,
);
console.log(`Node ${process.version}; load average ${loadBefore} before, ${load()} after.`);
console.log();
console.log(lines.join('\n'));
console.log(
  failures.length ? failures.map((failure) => `- missed: ${failure}`).join('\n') : 'All budgets met.',
);
process.exit(failures.length ? 1 : 0);
