import type { APIGatewayProxyResult } from 'aws-lambda';
import { NotFoundError } from '../envelope/errors.ts';
import { paymentOutcomeResponse } from '../envelope/payment-outcome.ts';
import { CAPTURED } from '../gateway/answers.ts';
import type { PayHere } from '../gateway/payhere.ts';
import { fieldOf } from '../log/audit.ts';
import { type ReadInvalidation, thenForget } from '../reads/invalidation.ts';
import { type CaptureRequest, captureUpstreamBody } from '../schemas/capture.ts';
import { type Actor, type Ownership, visibleTo } from './access.ts';
import type { Holds } from './holds.ts';
import { type MoneySubject, type SettleDeps, settleCapture } from './money-settlement.ts';

/** A capture as the route hands it over. */
export interface CaptureInput {
  caller: Actor;
  body: CaptureRequest;
  deadline: number;
}

type CaptureSubject = Extract<MoneySubject, { operation: 'capture' }>;

/**
 * Capturing a hold (POST /gateway/api/payments/capture): the customer's own hold only (else 404);
 * what PayHere accepted proves the hold's token and drops its order's shared payments; a lost answer
 * is settled from the hold's order's payments.
 */
export class Captures {
  readonly #payhere: PayHere;
  readonly #ownership: Ownership;
  readonly #holds: Holds;
  readonly #reads: ReadInvalidation;
  readonly #settling: SettleDeps;

  constructor(options: {
    payhere: PayHere;
    ownership: Ownership;
    holds: Holds;
    reads: ReadInvalidation;
    settling: SettleDeps;
  }) {
    this.#payhere = options.payhere;
    this.#ownership = options.ownership;
    this.#holds = options.holds;
    this.#reads = options.reads;
    this.#settling = options.settling;
  }

  /** What the settle job settles an unknown capture with. */
  subject({ caller, body }: CaptureInput): CaptureSubject {
    return { operation: 'capture', role: caller.role, body: captureUpstreamBody(body) };
  }

  async capture(request: CaptureInput): Promise<APIGatewayProxyResult> {
    const orderId = await this.#holdOrder(request);
    const { msg, data } = await thenForget(
      () => this.#payhere.capture(captureUpstreamBody(request.body), request.deadline, orderId),
      // The hold's order: known to a customer's request, else in the answer, else in the ledger.
      async (captured) => {
        const order =
          orderId ??
          fieldOf(captured?.data, 'order_id') ??
          (await this.#holdOrder(request, true).catch(() => undefined));
        // PayHere captured the hold: its token proven, if it was only a notification's word. An
        // answer that the capture failed, or may not have been made, proves nothing.
        await Promise.all([
          this.#reads.forgetOrder(order),
          Number(captured?.data.status_code) === CAPTURED &&
            this.#holds.proven(order, request.body.authorization_token, 'captured', request.body.amount),
        ]);
      },
    );
    return paymentOutcomeResponse(visibleTo(request.caller, data), msg, [CAPTURED]);
  }

  /** A lost answer, repeated: the hold's order shows the captured payment if it was captured. */
  async settle(request: CaptureInput, startedAt: number): Promise<APIGatewayProxyResult> {
    const subject = { ...this.subject(request), orderId: await this.#holdOrder(request, true) };
    return settleCapture(this.#settling, subject, { key: '', startedAt }, request.deadline);
  }

  /**
   * The hold's order: the customer's own (else 404). The merchant's is looked up only to settle a
   * lost answer (`always`): a first attempt pays no read for it.
   */
  async #holdOrder({ body, caller }: CaptureInput, always = false): Promise<string | undefined> {
    const reference = await this.#ownership.reference(
      caller,
      'authorization',
      body.authorization_token,
      () => new NotFoundError('The authorization was not found.'),
      always,
    );
    return reference?.orderId;
  }
}
