import * as z from 'zod/mini';
import { ORDER_KINDS, ORDER_STATES } from '../ledger/model.ts';
import { text } from './fields.ts';

/** The most orders a page holds, and how many when `limit` is not given. */
export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

/** A page size as a query string gives it: a whole number from 1 to MAX_PAGE. */
export const pageLimit = () =>
  z
    .string()
    .check(z.regex(/^(100|[1-9][0-9]?)$/, { message: `must be a whole number from 1 to ${MAX_PAGE}` }));

/** A time as the lists take it: an ISO 8601 date-time with a zone (`2026-11-26T00:00:00Z`). */
const dateTime = () => z.iso.datetime({ offset: true });

/** listOrders' query string: every parameter optional, each at most once, none unknown. */
export const OrdersQuery = z.strictObject({
  status: z.optional(z.enum(ORDER_STATES)),
  customer: z.optional(text(1, 255)),
  kind: z.optional(z.enum(ORDER_KINDS)),
  created_from: z.optional(dateTime()),
  created_to: z.optional(dateTime()),
  limit: z.optional(pageLimit()),
  cursor: z.optional(text(1, 512)),
});

export type OrdersQuery = z.infer<typeof OrdersQuery>;

/** How many subscriptions a page holds when `limit` is not given: the most. */
export const DEFAULT_SUBSCRIPTIONS_PAGE = MAX_PAGE;

/** listSubscriptions' query string: a page size and the last page's cursor, both optional. */
export const SubscriptionsQuery = z.strictObject({
  limit: z.optional(pageLimit()),
  cursor: z.optional(text(1, 512)),
});

export type SubscriptionsQuery = z.infer<typeof SubscriptionsQuery>;
