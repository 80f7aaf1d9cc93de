/**
 * `node bench/first-answer-run.ts [runs]`: the comparison of bench/first-answer.ts alone, printed,
 * for working on it; `npm run bench` runs it with everything else and keeps its figures.
 */
import path from 'node:path';
import { bundle, ROOT, USUAL_RESOLUTION } from './build.ts';
import { firstAnswerSection, measureFirstAnswer } from './first-answer.ts';

const runs = Number(process.argv[2]) || 9;
const service = await bundle('retrievePayments', {
  file: path.join(ROOT, 'functions', 'retrievePayments.ts'),
});
const naive = await bundle(
  'naive',
  { file: path.join(ROOT, 'bench', 'naive', 'handler.ts') },
  USUAL_RESOLUTION,
);
const { lines, failures } = firstAnswerSection(
  await measureFirstAnswer(
    { service: service.bundle, naive: naive.bundle },
    runs,
    process.env.SERVICE_ENV ? JSON.parse(process.env.SERVICE_ENV) : {},
  ),
);
console.log(lines.join('\n'));
console.log(failures.length ? failures.join('\n') : 'All budgets met.');
