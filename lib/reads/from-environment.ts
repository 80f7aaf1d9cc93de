import { stateTableFromEnvironment } from '../budget/from-environment.ts';
import type { Env } from '../config/config.ts';
import type { PayHere } from '../gateway/payhere.ts';
import { SharedReads } from './shared-reads.ts';
import { PaymentSnapshots } from './snapshots.ts';
import { SharedReadStore } from './store.ts';

/** The shared reads' items in the state table (STATE_TABLE), with the table's own timeout. */
export function sharedReadStoreFromEnvironment(env: Env = process.env): SharedReadStore {
  return new SharedReadStore(stateTableFromEnvironment(env));
}

/** The read routes' PayHere reads, shared through the state table. */
export function sharedReadsFromEnvironment(payhere: PayHere, env: Env = process.env): SharedReads {
  return new SharedReads({ payhere, store: sharedReadStoreFromEnvironment(env) });
}

/** The reconciliation report's snapshots of PayHere's records, in the state table. */
export function paymentSnapshotsFromEnvironment(env: Env = process.env): PaymentSnapshots {
  return new PaymentSnapshots(stateTableFromEnvironment(env));
}
