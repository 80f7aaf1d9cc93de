// /__sandbox/*: the test controls over HTTP, for a sandbox running in another process. Not rate
// limited and not counted, so driving the sandbox does not disturb what a test measures.
import { type FaultController, parseInjection } from './faults.ts';
import { jsonReply, notFound, type Reply } from './replies.ts';

export const CONTROL_PREFIX = '/__sandbox/';

export interface Controls {
  faults: FaultController;
  counters(): Record<string, number>;
  resetCounters(): void;
  resetState(): void;
  reset(): void;
  expireTokens(): void;
}

function done(msg: string, data: unknown = null): Reply {
  return jsonReply(200, { status: 1, msg, data });
}

// Infinity does not survive JSON.stringify; say it in words.
function pendingOf(faults: FaultController): number | string {
  const pending = faults.pending();
  return Number.isFinite(pending) ? pending : 'Infinity';
}

export function handleControl(method: string, pathname: string, body: Buffer, controls: Controls): Reply {
  const action = `${method} ${pathname.slice(CONTROL_PREFIX.length)}`;
  switch (action) {
    case 'POST faults': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      const injection = parseInjection(parsed);
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
    default:
      return notFound();
  }
}
