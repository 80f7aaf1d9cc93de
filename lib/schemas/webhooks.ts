import * as z from 'zod/mini';
import { text } from './fields.ts';

/** The delivery states a list filters by (lib/webhooks/store.ts). */
export const DELIVERY_STATES = ['pending', 'delivered', 'failed', 'disabled'] as const;

/** An endpoint's id as configured (lib/webhooks/endpoints.ts). */
const endpointId = () =>
  z.string().check(z.regex(/^[a-z0-9][a-z0-9-]{0,31}$/, { message: 'must be an endpoint id (a-z, 0-9, -)' }));

/** webhookDeliveries' query string: every parameter optional, each at most once, none unknown. */
export const DeliveriesQuery = z.strictObject({
  endpoint: z.optional(endpointId()),
  status: z.optional(z.enum(DELIVERY_STATES)),
  limit: z.optional(
    z.string().check(z.regex(/^(100|[1-9][0-9]?)$/, { message: 'must be a whole number from 1 to 100' })),
  ),
  cursor: z.optional(text(1, 512)),
});
export type DeliveriesQuery = z.infer<typeof DeliveriesQuery>;

/** An event's id: `evt_` and its letters and digits (the events' `id`, a delivery's `webhook-id`). */
export const EventPath = z.strictObject({
  id: z.string().check(z.regex(/^evt_[0-9A-Za-z]{1,64}$/, { message: 'must be an event id (evt_...)' })),
});
export type EventPath = z.infer<typeof EventPath>;

/** redeliverEvent's query string: one endpoint, or every endpoint when not given. */
export const RedeliverQuery = z.strictObject({ endpoint: z.optional(endpointId()) });
export type RedeliverQuery = z.infer<typeof RedeliverQuery>;
