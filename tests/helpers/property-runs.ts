/**
 * How many cases a property test over live fakes (the sandbox, dynalite) runs: `full` in CI
 * (CI=true, as .ci/run runs), a tenth of it (at least 20) elsewhere, so that a local `npm test`
 * gives a quick first answer; PROPERTY_RUNS overrides both (`PROPERTY_RUNS=500 npm test` runs the
 * full count locally, say to replay a failure CI found).
 */
export function propertyRuns(full: number): number {
  const asked = Number(process.env.PROPERTY_RUNS);
  if (Number.isInteger(asked) && asked > 0) return asked;
  const ci = process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI);
  return ci ? full : Math.max(20, Math.ceil(full / 10));
}
