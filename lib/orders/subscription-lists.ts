import { createHash } from 'node:crypto';
import { InvalidRequestError } from '../envelope/errors.ts';
import type { SubscriptionRecord } from '../gateway/schemas.ts';
import type { Served } from '../reads/shared-reads.ts';
import type { Position, SubscriptionPages } from '../reads/subscription-pages.ts';
import { DEFAULT_SUBSCRIPTIONS_PAGE, type SubscriptionsQuery } from '../schemas/orders.ts';
import { type Actor, type Ownership, visibleTo } from './access.ts';

/** A page of subscriptions as listSubscriptions answers it. */
export interface SubscriptionList {
  subscriptions: SubscriptionRecord[];
  /** Pass as `cursor` for the next page; null on the last one. */
  next_cursor: string | null;
}

/**
 * The subscription lists (GET /gateway/api/subscriptions, docs/contract.md "Subscription lists"):
 * every subscription to the merchant, a customer's own (the ledger's) to a customer, newest first,
 * a page at a time, cut from PayHere's one list as lib/reads/subscription-pages.ts shares it. A
 * cursor carries a digest of its caller: malformed, or used by another caller, it is refused (400);
 * one made by hand still lists only what its caller may see.
 */
export class SubscriptionLists {
  readonly #ownership: Ownership;
  readonly #pages: SubscriptionPages;

  constructor(options: { ownership: Ownership; pages: SubscriptionPages }) {
    this.#ownership = options.ownership;
    this.#pages = options.pages;
  }

  async list(
    actor: Actor,
    query: SubscriptionsQuery,
    deadline: number,
  ): Promise<Served<SubscriptionList> | { none: true }> {
    const limit = isPaged(query)
      ? query.limit === undefined
        ? DEFAULT_SUBSCRIPTIONS_PAGE
        : Number(query.limit)
      : Number.POSITIVE_INFINITY;
    const binding = bindingOf(actor);
    const after = query.cursor === undefined ? undefined : positionOf(query.cursor, binding);
    const allowed = await this.#ownership.subscriptions(actor);
    // A customer without subscriptions costs PayHere nothing.
    if (allowed !== 'all' && allowed.size === 0) return { none: true };
    const page = await this.#pages.page({
      limit,
      deadline,
      ...(after === undefined ? {} : { after }),
      ...(allowed === 'all' ? {} : { only: allowed }),
    });
    return {
      answer: {
        subscriptions: visibleTo(actor, page.records),
        next_cursor: page.next === null ? null : cursorOf(page.next, binding),
      },
      fetchedAt: page.fetchedAt,
      shared: page.shared,
    };
  }
}

/**
 * A listing asked a page at a time (`limit` or `cursor` given); without either, the whole list is
 * answered as the route answered it before it paged (an array), so that an app built then keeps
 * working.
 */
export function isPaged(query: SubscriptionsQuery): boolean {
  return query.limit !== undefined || query.cursor !== undefined;
}

/** What a cursor is bound to: its caller (the list has no filters, and the page size may change). */
function bindingOf(actor: Actor): string {
  return createHash('sha256')
    .update(JSON.stringify(['subscriptions', actor.role, actor.sub]))
    .digest('base64url')
    .slice(0, 22);
}

function cursorOf(position: Position, binding: string): string {
  return Buffer.from(JSON.stringify({ s: position.snapshot, p: position.id, b: binding })).toString(
    'base64url',
  );
}

function positionOf(cursor: string, binding: string): Position {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  const { s, p, b } = (decoded ?? {}) as { s?: unknown; p?: unknown; b?: unknown };
  if (!Number.isSafeInteger(s) || !Number.isSafeInteger(p) || b !== binding) {
    throw new InvalidRequestError([
      {
        path: 'query.cursor',
        message: 'must be the next_cursor of the last page of this list (same caller)',
      },
    ]);
  }
  return { snapshot: s as number, id: p as number };
}
