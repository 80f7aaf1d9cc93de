import type { APIGatewayProxyResult } from 'aws-lambda';
import { recordKey } from '../idempotency/idempotent.ts';
import type { ChargeRequest } from '../schemas/charge.ts';
import type { Actor } from './access.ts';
import { type ChargeEngine, type ChargeInput, chargeResponse } from './charge-engine.ts';
import type { MoneySubject } from './money-settlement.ts';

/** A charge as the route hands it over: the caller, whom it acts for, the body and its key. */
export interface ChargeRouteInput {
  caller: Actor;
  owner: string;
  body: ChargeRequest;
  deadline: number;
  idempotencyKey?: string;
}

/**
 * The charge route's work (POST /gateway/api/payments/charge), as Captures and Refunds are theirs,
 * over ChargeEngine: the order's payment slot is held under the request's idempotency record key,
 * and the answer is cut to what the caller may see.
 */
export class Charges {
  readonly #chargeEngine: ChargeEngine;
  readonly #settleDelayMs: number;

  constructor(options: { chargeEngine: ChargeEngine; settleDelayMs: number }) {
    this.#chargeEngine = options.chargeEngine;
    this.#settleDelayMs = options.settleDelayMs;
  }

  /** What the settle job settles an unknown charge with. */
  subject({ caller, owner, body }: ChargeRouteInput): MoneySubject {
    return { operation: 'charge', role: caller.role, sub: caller.sub, owner, body };
  }

  async charge(request: ChargeRouteInput): Promise<APIGatewayProxyResult> {
    return chargeResponse(request.caller, request.body.type, await this.#chargeEngine.charge(input(request)));
  }

  /** A lost answer, repeated: settled from PayHere's records of the order. */
  async settle(request: ChargeRouteInput, startedAt: number): Promise<APIGatewayProxyResult> {
    const settled = await this.#chargeEngine.settle(input(request), startedAt, this.#settleDelayMs);
    return chargeResponse(request.caller, request.body.type, settled);
  }
}

function input(request: ChargeRouteInput): ChargeInput {
  return {
    actor: request.caller,
    owner: request.owner,
    body: request.body,
    deadline: request.deadline,
    chargeKey: recordKey('charge', request.caller.sub, request.idempotencyKey!),
  };
}
