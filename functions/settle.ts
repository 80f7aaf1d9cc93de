import type { Context } from 'aws-lambda';
import { setLogContext } from '#lib/log/log.ts';
import { publishMetrics } from '#lib/log/metrics.ts';
import { settleJobFromEnvironment } from '#lib/settle/from-environment.ts';
import type { SettleRun } from '#lib/settle/job.ts';

const settle = settleJobFromEnvironment();

/** A run that has no Lambda clock (invoke local without one) gets this long. */
const DEFAULT_RUN_MS = 20_000;

/**
 * The settle job, on a schedule (serverless.yml: EventBridge, every two minutes; under `npm start`
 * the same, or `npm run settle` on demand): every money request whose outcome is unknown and every
 * reported success PayHere's records did not show, once due, settled from PayHere's records, within
 * the run's limits (lib/settle/job.ts).
 */
export async function handler(_event: unknown, context: Context): Promise<SettleRun> {
  setLogContext({ requestId: context.awsRequestId, route: 'settle' });
  const deadline = Date.now() + (context.getRemainingTimeInMillis?.() ?? DEFAULT_RUN_MS);
  settle.transport.reset();
  try {
    return await settle.job.run(deadline);
  } finally {
    publishMetrics('settle');
  }
}
