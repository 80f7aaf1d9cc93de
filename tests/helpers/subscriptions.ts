import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { EventStore, FEED_SETTLE_MS } from '../../lib/events/store.ts';
import { backgroundSettled } from '../../lib/net/background.ts';
import type { Sandbox } from '../../sandbox/server.ts';
import { localClient } from '../idempotency/fixtures.ts';
import { call } from './gateway.ts';
import { notify } from './notifications.ts';

/** Where the sandbox's own notifications go when a test posts them itself. */
export const NOWHERE = 'https://notify.example.invalid/payhere';

/** What createCheckout answers, as the sandbox's checkout takes it. */
export type Checkout = Omit<Parameters<Sandbox['completeCheckout']>[0], 'outcome'>;

/** A checkout of a monthly 2,500 LKR recurring order for `owner`, as the merchant creates it. */
export async function recurringCheckout(
  owner: string,
  duration = '1 Year',
  orderId = `Gym-${randomUUID()}`,
): Promise<Checkout> {
  const created = await call('createCheckout', {
    body: {
      kind: 'recurring',
      order_id: orderId,
      items: 'Gym',
      currency: 'LKR',
      amount: 2_500,
      recurrence: '1 Month',
      duration,
    },
    headers: { 'On-Behalf-Of': owner },
  });
  expect(created.statusCode).toBe(201);
  return created.body.data as Checkout;
}

/** Such an order paid in the sandbox's checkout, its first notification received (subscription.created). */
export async function subscribedOrder(
  sandbox: Sandbox,
  owner: string,
  duration = '1 Year',
): Promise<{ orderId: string; subscriptionId: number; first: Record<string, string> }> {
  const checkout = await recurringCheckout(owner, duration);
  const completed = await sandbox.completeCheckout({ ...checkout, outcome: 'success', notify_url: NOWHERE });
  const first = completed.deliveries[0]!.fields as Record<string, string>;
  await notify(first);
  return { orderId: checkout.order_id, subscriptionId: completed.subscription_id!, first };
}

/** The types of the events published about `objectId`, in sequence, once the relays are done. */
export async function eventTypesOf(objectId: string): Promise<string[]> {
  await backgroundSettled();
  const events = new EventStore({
    client: localClient(),
    table: process.env.EVENTS_TABLE!,
    now: () => Date.now() + FEED_SETTLE_MS,
  });
  return (await events.page({ limit: 100, objectId })).events
    .sort((a, b) => a.sequence - b.sequence)
    .map((event) => event.type);
}
