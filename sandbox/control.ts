// /__sandbox/*: the test controls over HTTP, for a sandbox running in another process. Not rate
// limited and not counted, so driving the sandbox does not disturb what a test measures.
import { verifyClockOffset } from './control-requests.ts';
import type { Delivery } from './deliveries.ts';
import { type FaultController, parseInjection } from './faults.ts';
import { type NotifyingControls, SandboxRefusal } from './notifying.ts';
import type { PaymentRefunds } from './refunds.ts';
import { failureReply, jsonReply, notFound, type Reply } from './replies.ts';

/** A Merchant API request as it arrived: when (the sandbox's clock) and at which endpoint. */
export interface Arrival {
  at: number;
  endpoint: string;
}

/** The sandbox's time and PayHere's: `payhereDate` is what PayHere would write on a record now. */
export interface Clock {
  now: number;
  clockOffsetMs: number;
  payhereDate: string;
}

export const CONTROL_PREFIX = '/__sandbox/';

export interface Controls extends NotifyingControls {
  faults: FaultController;
  counters(): Record<string, number>;
  arrivals(): Arrival[];
  resetCounters(): void;
  resetState(): void;
  reset(): void;
  expireTokens(): void;
  clock(): Clock;
  setClockOffset(ms: number): void;
  refunds(paymentId: number): PaymentRefunds;
  advanceRefunds(paymentId: number, input?: unknown): PaymentRefunds;
  deliveries(): Delivery[];
  pendingDeliveries(): number;
  clearDeliveries(): void;
}

function done(msg: string, data: unknown = null): Reply {
  return jsonReply(200, { status: 1, msg, data });
}

/** The JSON body; none reads as {} (every field optional). */
function jsonBody(body: Buffer): unknown {
  if (body.length === 0) return {};
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new SandboxRefusal(400, 'Malformed request body');
  }
}

const SUBSCRIPTION_EVENT = /^POST subscriptions\/(\d{1,15})\/(installment|complete|stop)$/;
const REPLAY = /^POST notifications\/(\d{1,9})\/replay$/;
const PENDING_DECISION = /^POST pending\/([^/]+)$/;
const REFUNDS = /^GET payments\/(\d{1,15})\/refunds$/;
const REFUNDS_ADVANCE = /^POST payments\/(\d{1,15})\/refunds\/advance$/;

/** A path segment as sent, percent-decoded (order ids are the merchant's own strings). */
function pathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new SandboxRefusal(400, 'Malformed path');
  }
}

/**
 * The control calls that play PayHere's customer and scheduler (they notify), finish or decide its
 * charges, and show or advance refunds: those at paths with ids, and those that may notify.
 */
async function notifyingAction(action: string, body: Buffer, controls: Controls): Promise<Reply | undefined> {
  if (action === 'POST checkouts') {
    return done('Checkout completed', await controls.completeCheckout(jsonBody(body)));
  }
  const event = SUBSCRIPTION_EVENT.exec(action);
  if (event) {
    const id = Number(event[1]);
    const input = jsonBody(body);
    if (event[2] === 'installment') {
      const charged = await controls.chargeInstallment(id, input);
      const paid = charged.message_type === 'RECURRING_INSTALLMENT_SUCCESS';
      return done(paid ? 'Installment paid' : 'Installment declined', charged);
    }
    if (event[2] === 'complete') {
      return done('Subscription completed', await controls.completeSubscription(id, input));
    }
    return done('Subscription stopped', await controls.stopSubscription(id, input));
  }
  if (action === 'POST process-due') return done('Due work processed', await controls.processDue());
  if (action === 'GET pending') return done('Pending charges', controls.pendingCharges());
  const refunds = REFUNDS.exec(action);
  if (refunds) return done('Refunds', controls.refunds(Number(refunds[1])));
  const advance = REFUNDS_ADVANCE.exec(action);
  if (advance) return done('Refunds advanced', controls.advanceRefunds(Number(advance[1]), jsonBody(body)));
  const decision = PENDING_DECISION.exec(action);
  if (decision) {
    const decided = await controls.decidePending(pathSegment(decision[1] ?? ''), jsonBody(body));
    return done(
      decided.outcome === 'success' ? 'Pending charge succeeded' : 'Pending charge failed',
      decided,
    );
  }
  const replay = REPLAY.exec(action);
  if (replay) {
    return done('Notification replayed', {
      deliveries: await controls.replayNotification(Number(replay[1])),
    });
  }
  return undefined;
}

/** The JSON body, or undefined when it is none, so that the schema names what is missing. */
function parsedJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

// Infinity does not survive JSON.stringify; say it in words.
function pendingOf(faults: FaultController): number | string {
  const pending = faults.pending();
  return Number.isFinite(pending) ? pending : 'Infinity';
}

export async function handleControl(
  method: string,
  pathname: string,
  body: Buffer,
  controls: Controls,
): Promise<Reply> {
  const action = `${method} ${pathname.slice(CONTROL_PREFIX.length)}`;
  try {
    return (await notifyingAction(action, body, controls)) ?? fixedAction(action, body, controls);
  } catch (error) {
    if (error instanceof SandboxRefusal) return failureReply(error.status, error.message);
    throw error;
  }
}

/** The control calls at fixed paths. */
function fixedAction(action: string, body: Buffer, controls: Controls): Reply {
  switch (action) {
    case 'POST faults': {
      const injection = parseInjection(parsedJson(body));
      if (!injection) return jsonReply(400, { status: -1, msg: 'Invalid fault injection', data: null });
      controls.faults.inject(injection.endpoint, injection.fault, injection.times);
      return done('Fault injected', { pending: pendingOf(controls.faults) });
    }
    case 'GET faults':
      return done('Pending faults', { pending: pendingOf(controls.faults) });
    case 'DELETE faults':
      controls.faults.clear();
      return done('Faults cleared');
    case 'GET counters':
      return done('Counters', controls.counters());
    case 'GET arrivals':
      return done('Arrivals', controls.arrivals());
    case 'DELETE counters':
      controls.resetCounters();
      return done('Counters cleared');
    case 'POST reset':
      controls.reset();
      return done('Sandbox reset');
    case 'POST reset-state':
      controls.resetState();
      return done('Seeded data restored');
    case 'POST expire-tokens':
      controls.expireTokens();
      return done('Tokens expired');
    case 'GET clock':
      return done('Clock', controls.clock());
    case 'POST clock': {
      const offset = verifyClockOffset(jsonBody(body));
      if (!offset.ok) throw new SandboxRefusal(offset.status, offset.msg);
      controls.setClockOffset(offset.value.clockOffsetMs);
      return done('Clock set', controls.clock());
    }
    case 'GET notifications':
      return done('Notification deliveries', {
        pending: controls.pendingDeliveries(),
        deliveries: controls.deliveries(),
      });
    case 'DELETE notifications':
      controls.clearDeliveries();
      return done('Notification deliveries cleared');
    default:
      return notFound();
  }
}
