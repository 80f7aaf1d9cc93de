import { GatewayUnavailableError, InvalidRequestError, NotFoundError, notSent } from '../envelope/errors.ts';
import type { Order, Reference, ReferenceKind } from '../ledger/model.ts';
import type { LedgerStore } from '../ledger/store.ts';
import { log } from '../log/log.ts';
import { countMetric } from '../log/metrics.ts';

/** Who acts: a customer acts only on what it owns, the merchant on everything. */
export interface Actor {
  sub: string;
  role: 'merchant' | 'customer';
}

/**
 * Ownership (docs/contract.md "Ownership"): for a customer, an object the ledger does not
 * know and one another customer owns are answered the same way, with the route's own not-found
 * error and nothing sent to PayHere. The merchant passes without a ledger read.
 */
export class Ownership {
  readonly #ledger: LedgerStore;

  constructor(ledger: LedgerStore) {
    this.#ledger = ledger;
  }

  /** Throws `notFound()` unless `actor` may act on the object `kind`/`id`. */
  async require(actor: Actor, kind: ReferenceKind, id: string, notFound: () => NotFoundError): Promise<void> {
    if (actor.role === 'merchant') return;
    const reference = await readLedger(() => this.#ledger.lookup(kind, id));
    if (reference?.owner !== actor.sub) refuse(kind, reference !== undefined, notFound);
  }

  /**
   * The order `kind`/`id` belongs to, for a caller allowed to act on it: a customer must own it
   * (else `notFound()`). For the merchant it is looked up only when `always` (a repeat settling a
   * lost answer needs it; a first attempt does not pay a read for it): undefined when not known.
   */
  async reference(
    actor: Actor,
    kind: ReferenceKind,
    id: string,
    notFound: () => NotFoundError,
    always = false,
  ): Promise<Reference | undefined> {
    if (actor.role === 'merchant' && !always) return undefined;
    const reference = await readLedger(() => this.#ledger.lookup(kind, id));
    if (actor.role === 'customer' && reference?.owner !== actor.sub)
      refuse(kind, reference !== undefined, notFound);
    return reference;
  }

  /** Throws a not-found unless `actor` may act on subscription `id` (digits; leading zeros allowed). */
  requireSubscription(actor: Actor, id: string): Promise<void> {
    // PayHere's ids are numbers: 0420075032251 is 420075032251, in the ledger as at the gateway.
    return this.require(
      actor,
      'subscription',
      String(Number(id)),
      () => new NotFoundError(`Subscription ${id} was not found.`),
    );
  }

  /** The subscription ids `actor` may list: its own, or every one (`all`) for the merchant. */
  async subscriptions(actor: Actor): Promise<ReadonlySet<string> | 'all'> {
    if (actor.role === 'merchant') return 'all';
    return new Set(await readLedger(() => this.#ledger.subscriptionsOf(actor.sub)));
  }

  /** The order, if `actor` may see it; `notFound()` otherwise (for the merchant: if it is unknown). */
  async order(actor: Actor, orderId: string, notFound: () => NotFoundError): Promise<Order> {
    const order = await readLedger(() => this.#ledger.getOrder(orderId));
    if (actor.role === 'customer' && order?.owner !== actor.sub)
      refuse('order', order !== undefined, notFound);
    if (!order) throw notSent(notFound());
    return order;
  }
}

/**
 * A customer refused an object: answered as not found whether it exists or not, and counted for the
 * operator (many refusals of objects that exist look like someone trying other customers' ids).
 * The object's id is not logged: for a hold it is its secret token.
 */
export function countRefusal(object: ReferenceKind | 'order', exists: boolean): void {
  countMetric('OwnershipRefused');
  log.info('ownership refused', { object, exists });
}

function refuse(object: ReferenceKind | 'order', exists: boolean, notFound: () => NotFoundError): never {
  countRefusal(object, exists);
  throw notSent(notFound());
}

/** The ledger cannot be read: nothing was sent, and the caller may simply retry. */
export async function readLedger<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    throw notSent(
      new GatewayUnavailableError(
        'The payment service cannot check this request right now; try again later.',
        error,
      ),
    );
  }
}

/** What only the merchant sees: fees, net and exchange (`amount_detail`), and PayHere's `md5sig`. */
const MERCHANT_ONLY = new Set(['amount_detail', 'md5sig']);

/** A gateway record (or list of them) as `actor` may see it. */
export function visibleTo<T>(actor: Actor, value: T): T {
  if (actor.role === 'merchant') return value;
  if (Array.isArray(value)) return value.map((item) => visibleTo(actor, item)) as T;
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([name]) => !MERCHANT_ONLY.has(name))) as T;
}

/** Metadata is the merchant's own: a customer's request carrying it is refused, nothing recorded or sent. */
export function metadataRefused(): InvalidRequestError {
  return new InvalidRequestError([{ path: 'metadata', message: 'is the merchant’s own: leave it out' }]);
}
