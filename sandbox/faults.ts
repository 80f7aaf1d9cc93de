// Scripted failures for testing a client's resilience: each injected fault replaces (or delays) the
// normal answer of the next matching request.
import * as z from 'zod/mini';
import { ENDPOINT_NAMES, type EndpointName } from './routes.ts';

export type Fault =
  /** Wait, then process and answer normally; `afterProcessing`: process at once, answer `ms` later. */
  | { kind: 'latency'; ms: number; afterProcessing?: boolean }
  /** Process the request (state changes), then reset the connection without answering. */
  | { kind: 'reset' }
  /** Reset the connection without processing. */
  | { kind: 'resetBeforeProcessing' }
  /** Answer this status with this body (default: an HTML error page); `process` first if asked. */
  | { kind: 'status'; status: number; body?: string; contentType?: string; process?: boolean }
  /** 200 with an HTML body; `process` first if asked. */
  | { kind: 'nonJson'; process?: boolean }
  /** 429 as the rate limiter answers it. */
  | { kind: 'rateLimited'; retryAfterSeconds?: number }
  /** 401 invalid_token, as if the access token had expired. */
  | { kind: 'invalidToken' }
  /** Never answer, until the client or close() ends the connection. */
  | { kind: 'hang' }
  /**
   * Charge only: reset the connection at once, and PayHere makes the charge `ms` later on the
   * sandbox's clock (recorded, dated and notified then).
   */
  | { kind: 'processLate'; ms: number }
  /** Search only: PayHere's retrieval `status` 0, "payment pending", with `data` null. */
  | { kind: 'searchPending'; msg?: string }
  /** Search only: `status` -1 with another `msg` than "No payments found": an error, not "none". */
  | { kind: 'searchFailed'; msg?: string };

export type FaultTarget = EndpointName | '*';

interface Injected {
  endpoint: FaultTarget;
  fault: Fault;
  remaining: number;
}

/** Faults that are answers of one endpoint, meaningless anywhere else (so not for '*' either). */
const ONLY_ON: Partial<Record<Fault['kind'], EndpointName>> = {
  processLate: 'charge',
  searchPending: 'search',
  searchFailed: 'search',
};

/** Why `fault` cannot be injected on `endpoint`, or undefined when it can. */
function misplaced(endpoint: FaultTarget, fault: Fault): string | undefined {
  const only = ONLY_ON[fault.kind];
  return only === undefined || only === endpoint ? undefined : `${fault.kind} is a fault of ${only} only`;
}

export class FaultController {
  #queue: Injected[] = [];

  /** Adds a fault for the next `times` requests to `endpoint` ('*': any endpoint). */
  inject(endpoint: FaultTarget, fault: Fault, times = 1): void {
    if (!(times >= 1 && (Number.isInteger(times) || times === Number.POSITIVE_INFINITY))) {
      throw new RangeError(`times must be a positive integer or Infinity, got ${times}`);
    }
    const wrongPlace = misplaced(endpoint, fault);
    if (wrongPlace) throw new RangeError(`${wrongPlace}, not ${endpoint}`);
    this.#queue.push({ endpoint, fault, remaining: times });
  }

  clear(): void {
    this.#queue = [];
  }

  /** How many fault uses are left (Infinity if one is unlimited). */
  pending(): number {
    return this.#queue.reduce((sum, entry) => sum + entry.remaining, 0);
  }

  /** The fault for this request, consumed in the order injected; undefined when there is none. */
  take(endpoint: string): Fault | undefined {
    const index = this.#queue.findIndex((entry) => entry.endpoint === '*' || entry.endpoint === endpoint);
    const entry = this.#queue[index];
    if (!entry) return undefined;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.#queue.splice(index, 1);
    return entry.fault;
  }
}

const faultSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('latency'),
    ms: z.number().check(z.nonnegative()),
    afterProcessing: z.optional(z.boolean()),
  }),
  z.strictObject({ kind: z.literal('reset') }),
  z.strictObject({ kind: z.literal('resetBeforeProcessing') }),
  z.strictObject({
    kind: z.literal('status'),
    status: z.int().check(z.gte(100), z.lte(599)),
    body: z.optional(z.string()),
    contentType: z.optional(z.string()),
    process: z.optional(z.boolean()),
  }),
  z.strictObject({ kind: z.literal('nonJson'), process: z.optional(z.boolean()) }),
  z.strictObject({
    kind: z.literal('rateLimited'),
    retryAfterSeconds: z.optional(z.int().check(z.nonnegative())),
  }),
  z.strictObject({ kind: z.literal('invalidToken') }),
  z.strictObject({ kind: z.literal('hang') }),
  z.strictObject({ kind: z.literal('processLate'), ms: z.number().check(z.nonnegative()) }),
  z.strictObject({ kind: z.literal('searchPending'), msg: z.optional(z.string()) }),
  z.strictObject({ kind: z.literal('searchFailed'), msg: z.optional(z.string()) }),
]);

// JSON has no Infinity, so the control interface also takes the string "Infinity".
const injectionSchema = z.strictObject({
  endpoint: z.enum([...ENDPOINT_NAMES, '*']),
  fault: faultSchema,
  times: z.optional(z.union([z.int().check(z.positive()), z.literal('Infinity')])),
});

export interface Injection {
  endpoint: FaultTarget;
  fault: Fault;
  times: number;
}

/** Reads a `POST /__sandbox/faults` body; undefined when it is not a valid injection. */
export function parseInjection(body: unknown): Injection | undefined {
  const parsed = injectionSchema.safeParse(body);
  if (!parsed.success) return undefined;
  const { endpoint, fault, times } = parsed.data;
  if (misplaced(endpoint, fault)) return undefined;
  return {
    endpoint,
    fault,
    times: times === 'Infinity' ? Number.POSITIVE_INFINITY : (times ?? 1),
  };
}
