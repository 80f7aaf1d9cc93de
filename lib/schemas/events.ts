import * as z from 'zod/mini';
import { EVENT_TYPES } from '../events/types.ts';
import { text } from './fields.ts';
import { pageLimit } from './orders.ts';

/** listEvents' query string: every parameter optional, each at most once, none unknown. */
export const EventsQuery = z.strictObject({
  type: z.optional(z.enum(EVENT_TYPES)),
  object_id: z.optional(text(1, 255)),
  object_type: z.optional(z.enum(['order', 'payment'])),
  limit: z.optional(pageLimit()),
  cursor: z.optional(text(1, 512)),
});

export type EventsQuery = z.infer<typeof EventsQuery>;
