/**
 * What the shared budget adds to one PayHere call, in a process of its own: the same read
 * (listSubscriptions, a warm token) through two clients, one counting a budget of its own in
 * memory, the other taking a slot of the shared budget in DynamoDB (lib/budget/), taking turns
 * at going first; and one DynamoDB round trip, the very write a slot's take is (lib/budget/
 * state-table.ts's takeSlot, on a budget item of the same size in a table of its own), timed
 * alone. Then each caller's share (lib/budget/caller-shares.ts): the shared client with the
 * shares counting a customer's calls, beside the very write a share's take sends, timed alone.
 * Prints one JSON line of samples in ms.
 * Usage: node bench/limiter-child.ts <plan.json>
 */
import { readFileSync } from 'node:fs';
import { callers, loadSharesConfig, shareWrite } from '../lib/budget/caller-shares.ts';
import { callerSharesFromEnvironment, sharedStateFromEnvironment } from '../lib/budget/from-environment.ts';
import { SharedStateTable } from '../lib/budget/state-table.ts';
import { loadConfig } from '../lib/config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../lib/config/dynamodb.ts';
import { UpdateItemCommand } from '../lib/dynamodb/index.ts';
import { createPayHere } from '../lib/gateway/index.ts';
import { FLOOR_STATE_TABLE } from './environment.ts';

export interface LimiterPlan {
  count: number;
  warmUp: number;
}

export interface LimiterSamples {
  localMs: number[];
  sharedMs: number[];
  roundTripMs: number[];
  /** The shared client with a customer's share counted, and the share's write alone. */
  sharedWithShareMs: number[];
  shareWriteMs: number[];
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as LimiterPlan;
const config = loadConfig(process.env);
const local = createPayHere(config);
const shared = createPayHere(config, { sharedState: sharedStateFromEnvironment(process.env) });
const withShare = createPayHere(config, {
  sharedState: sharedStateFromEnvironment(process.env),
  shares: callerSharesFromEnvironment(process.env),
});
const samples: LimiterSamples = {
  localMs: [],
  sharedMs: [],
  roundTripMs: [],
  sharedWithShareMs: [],
  shareWriteMs: [],
};

async function time(call: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await call();
  return performance.now() - started;
}

/** The table's own time for one take: the same conditional write, each slot of the item in turn. */
const floorBudget = new SharedStateTable({
  client: dynamoDbClient(loadDynamoDbConfig(process.env)),
  table: FLOOR_STATE_TABLE,
  timeoutMs: 500,
});
const roundTrip = (i: number) => {
  const now = Date.now();
  return floorBudget.takeSlot(i % config.rateLimit.limit, now, now, now, `floor-${i}`);
};

/** A customer of its own: the bench's shares are generous, so no call is refused. */
const customer = { id: 'bench-customer', kind: 'customer' } as const;
const share = loadSharesConfig(process.env).customer;
const stateClient = dynamoDbClient(loadDynamoDbConfig(process.env));
const shareWriteAlone = () =>
  stateClient.send(
    new UpdateItemCommand(
      shareWrite(process.env.STATE_TABLE!, { ...customer, id: 'bench-write' }, share, false, Date.now()),
    ),
  );

for (let i = 0; i < plan.warmUp + plan.count; i++) {
  const deadline = Date.now() + 10_000;
  const pair: Array<[number[], () => Promise<unknown>]> = [
    [samples.localMs, () => local.listSubscriptions(deadline)],
    [samples.sharedMs, () => shared.listSubscriptions(deadline)],
    [samples.roundTripMs, () => roundTrip(i)],
    [samples.sharedWithShareMs, () => callers.run(customer, () => withShare.listSubscriptions(deadline))],
    [samples.shareWriteMs, shareWriteAlone],
  ];
  if (i % 2 === 1) pair.reverse();
  for (const [into, call] of pair) {
    const ms = await time(call);
    if (i >= plan.warmUp) into.push(ms);
  }
}

process.stdout.write(`${JSON.stringify(samples)}\n`, () => process.exit(0));
