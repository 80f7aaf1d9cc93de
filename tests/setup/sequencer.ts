import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take 15 s to a minute on their own (a 30 s load, a 500-case property, osls runs),
 * started first so that none is left to start last and be the run's tail: vitest starts the
 * longest first only when it has the last run's durations (node_modules/.vite), and CI installs
 * afresh. The 30 s load test leads beside reach-property and evidence-property's first half (with
 * readme third instead, a core sat idle for the first minute); its second half follows as
 * reach-property, the shortest of the three, ends.
 */
const LONG = [
  'tests/e2e/fairness-offline.test.ts',
  'tests/idempotency/reach-property.test.ts',
  'tests/orders/evidence-property-1.test.ts',
  'tests/orders/evidence-property-2.test.ts',
  'tests/e2e/readme.test.ts',
  'tests/e2e/invoke-local.test.ts',
  'tests/e2e/package-production.test.ts',
  'tests/e2e/package-security.test.ts',
  'tests/e2e/package.test.ts',
  'tests/resilience/faults.test.ts',
  'tests/budget/containers.test.ts',
  'tests/security/fuzz.test.ts',
];

function rank(file: TestSpecification): number {
  const index = LONG.findIndex((name) => file.moduleId.endsWith(name));
  return index === -1 ? LONG.length : index;
}

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array sort is stable: files not listed stay in vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
