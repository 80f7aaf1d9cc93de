/** What bench/first-answer-run.ts and `npm run bench -- --first-answer` share: the bundles, the model's flags. */
import path from 'node:path';
import { bundle, ROOT, USUAL_RESOLUTION } from './build.ts';
import { DEFAULT_MODEL, type NetworkModel } from './network.ts';

const FLAGS: Record<string, keyof NetworkModel> = {
  '--rtt': 'payhereRttMs',
  '--work': 'payhereWorkMs',
  '--handshakes': 'handshakeRoundTrips',
  '--dynamodb': 'dynamodbRttMs',
  '--freeze': 'freezeMs',
};

/** The network model, DEFAULT_MODEL with what `--rtt`, `--work`, `--handshakes`, `--dynamodb`, `--freeze` say. */
export function modelFromArgs(args: readonly string[]): NetworkModel {
  const model = { ...DEFAULT_MODEL };
  for (const [flag, key] of Object.entries(FLAGS)) {
    const at = args.indexOf(flag);
    if (at < 0) continue;
    const value = Number(args[at + 1]);
    if (!Number.isFinite(value) || value < 0) throw new Error(`${flag} wants a number, got ${args[at + 1]}`);
    model[key] = value;
  }
  return model;
}

/** retrievePayments as the functions are built, and the naive intermediary built the usual way. */
export async function firstAnswerBundles(): Promise<{ service: string; naive: string }> {
  const service = await bundle('retrievePayments', {
    file: path.join(ROOT, 'functions', 'retrievePayments.ts'),
  });
  const naive = await bundle(
    'naive',
    { file: path.join(ROOT, 'bench', 'naive', 'handler.ts') },
    USUAL_RESOLUTION,
  );
  return { service: service.bundle, naive: naive.bundle };
}
