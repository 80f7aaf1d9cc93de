import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { REPLAYED_HEADER } from '../idempotency/idempotent.ts';
import { type AuditSubject, audit, type Outcome } from '../log/audit.ts';
import { type CountMetric, countMetric, publishMetrics, stampMetrics } from '../log/metrics.ts';
import { inBackground } from '../net/background.ts';
import type { CallerContext } from './caller.ts';

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

const OUTCOME_METRIC: Record<Outcome, CountMetric> = {
  done: 'OutcomeDone',
  pending: 'OutcomePending',
  declined: 'OutcomeDeclined',
  unknown: 'OutcomeUnknown',
  rejected: 'OutcomeRejected',
  failed: 'OutcomeFailed',
};

/** What an answer says happened, from its HTTP status and, for a failure, its `data.code`. */
export function outcomeOf(statusCode: number, code: string | undefined): Outcome {
  if (code === 'outcome_unknown') return 'unknown';
  if (statusCode === 202) return 'pending';
  if (statusCode === 402) return 'declined';
  if (statusCode < 400) return 'done';
  return statusCode < 500 ? 'rejected' : 'failed';
}

interface Answer {
  data?: unknown;
  code?: string;
}

/**
 * The answer's `data` and failure code (`outcome_unknown` comes with 202, the others with 4xx and
 * 5xx); never throws (an unreadable body names neither).
 */
function readAnswer(response: Result, wantData: boolean): Answer {
  const mayFail = response.statusCode === 202 || response.statusCode >= 400;
  if (!mayFail && !wantData) return {};
  try {
    const { data } = JSON.parse(response.body) as { data?: unknown };
    const code = (data as { code?: unknown } | null)?.code;
    return { data, ...(mayFail && typeof code === 'string' ? { code } : {}) };
  } catch {
    return {};
  }
}

/** The Lambda context, once the route has validated the request (lib/http/route.ts sets it). */
export type ObservedContext<Request> = CallerContext & { validRequest?: Request };

export interface ObserveOptions<Request> {
  /** The function's name: the `route` dimension of its metrics and the `route` of its audit lines. */
  name: string;
  /**
   * Routes that move money or create orders: one audit line per answer to an authenticated caller,
   * naming what the request acted on (from the validated request, when it was valid, and the answer).
   */
  audit?: (request: Request, data: unknown) => AuditSubject;
}

/** The route of the request whose metrics line waits to be written, after its answer (none: none waits). */
let unwritten: string | undefined;

/** The line a request left for after its answer, if it still waits: written now. */
function writeUnwritten(): void {
  if (unwritten === undefined) return;
  const route = unwritten;
  unwritten = undefined;
  publishMetrics(route);
}

/**
 * Outermost but CORS, so that it sees every answer as the caller gets it (the envelope of any
 * error included): counts the answer's outcome, writes the audit line, and writes what the
 * request counted as one buffered log line (lib/log/metrics.ts) once the answer has gone back
 * (lib/net/background.ts): serialising and writing it holds up no caller. A request that begins
 * before the line of the one before it was written (one process answering back to back) writes
 * that line first, so that each line is one request's.
 */
export const observe = <Request>(
  options: ObserveOptions<Request>,
): MiddlewareObj<Event, Result, Error, Context> => {
  const finish = ({ response, context }: { response: Result | null | undefined; context: Context }) => {
    if (response) {
      const { data, code } = readAnswer(response, options.audit !== undefined);
      const outcome = outcomeOf(response.statusCode, code);
      const replayed = response.headers?.[REPLAYED_HEADER] === 'true';
      countMetric(replayed ? 'Replayed' : OUTCOME_METRIC[outcome]);
      const { caller, validRequest } = context as ObservedContext<Request>;
      if (options.audit && caller) {
        audit({
          route: options.name,
          outcome,
          replayed,
          httpStatus: response.statusCode,
          code,
          ...(validRequest === undefined ? {} : options.audit(validRequest, data)),
        });
      }
    }
    writeUnwritten();
    // Dated at the answer: a line written after a freeze keeps its own request's time.
    stampMetrics();
    unwritten = options.name;
    inBackground(async () => writeUnwritten());
  };
  return { name: 'observe', before: writeUnwritten, after: finish, onError: finish };
};
