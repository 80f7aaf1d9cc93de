import * as z from 'zod/mini';
import { ORDER_KINDS, ORDER_STATES } from '../ledger/model.ts';
import { text } from './fields.ts';

/** The most orders a page holds, and how many when `limit` is not given. */
export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 20;

/** A time as the lists take it: an ISO 8601 date-time with a zone (`2026-11-26T00:00:00Z`). */
const dateTime = () => z.iso.datetime({ offset: true });

/** listOrders' query string: every parameter optional, each at most once, none unknown. */
export const OrdersQuery = z.strictObject({
  status: z.optional(z.enum(ORDER_STATES)),
  customer: z.optional(text(1, 255)),
  kind: z.optional(z.enum(ORDER_KINDS)),
  created_from: z.optional(dateTime()),
  created_to: z.optional(dateTime()),
  limit: z.optional(
    z
      .string()
      .check(z.regex(/^(100|[1-9][0-9]?)$/, { message: `must be a whole number from 1 to ${MAX_PAGE}` })),
  ),
  cursor: z.optional(text(1, 512)),
});

export type OrdersQuery = z.infer<typeof OrdersQuery>;
