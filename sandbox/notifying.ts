// The control operations that play PayHere's customer and scheduler: each checks its request, makes
// its transition, then posts the notifications the transition queued, with the call's delivery
// options, and answers what it created with the delivery results (none yet when delayed).
import {
  type DeliveryOptions,
  type Result,
  verifyCheckout,
  verifyInstallment,
  verifyPendingDecision,
  verifySubscriptionEnd,
} from './control-requests.ts';
import type { Deliveries, Delivery } from './deliveries.ts';
import { notificationForm, type Signer } from './notifications.ts';
import type {
  CheckoutResult,
  GatewayState,
  PendingChargeView,
  PendingDecision,
  SubscriptionEnd,
  SubscriptionEvent,
} from './state.ts';

/** A control call PayHere would refuse; `status` is the HTTP status the control API answers. */
export class SandboxRefusal extends Error {
  readonly status: 400 | 404;

  constructor(status: 400 | 404, message: string) {
    super(message);
    this.name = 'SandboxRefusal';
    this.status = status;
  }
}

export type CheckoutAnswer = CheckoutResult & { deliveries: Delivery[] };
export type SubscriptionEventAnswer = SubscriptionEvent & { deliveries: Delivery[] };
export type PendingDecisionAnswer = PendingDecision & { deliveries: Delivery[] };

export interface NotifyingContext {
  /** The current state: a reset replaces it. */
  state(): GatewayState;
  deliveries: Deliveries;
  signer: Signer;
}

/** Posts what the last transition queued; resolves with the attempts, or at once with none when delayed. */
export function deliverQueued(context: NotifyingContext, options: DeliveryOptions = {}): Promise<Delivery[]> {
  const sends = context
    .state()
    .takeNotifications()
    .map((notification) =>
      context.deliveries.send(
        notification.url,
        notificationForm(notification, context.signer, options),
        options,
      ),
    );
  if (options.delayMs) return Promise.resolve([]);
  return Promise.all(sends).then((attempts) => attempts.flat());
}

/** What processDue did: late charges finished, those still waiting, and their notifications' attempts. */
export interface DueWork {
  processed: number;
  waiting: number;
  deliveries: Delivery[];
}

/**
 * PayHere finishes the work that fell due by now (late charges) and posts what it reports. Its
 * notifications leave the outbox before this returns its promise, so the caller's own transition
 * that follows never sends them with its delivery options.
 */
export async function processDue(context: NotifyingContext): Promise<DueWork> {
  const state = context.state();
  const processed = state.processDue();
  const deliveries = await deliverQueued(context);
  return { processed, waiting: state.lateCharges(), deliveries };
}

/** processDue without waiting for its deliveries: what is due happens before the call's own work. */
export function processDueFirst(context: NotifyingContext): void {
  // Before every request: nothing to do costs no promise (the bench makes tens of thousands).
  if (context.state().lateCharges() === 0) return;
  processDue(context).catch((error: unknown) => console.error('sandbox: notification failed', error));
}

/** The value of a control's result, or the SandboxRefusal that says why not. */
export function accepted<T>(result: Result<T>): T {
  if (!result.ok) throw new SandboxRefusal(result.status, result.msg);
  return result.value;
}

export function notifyingControls(context: NotifyingContext) {
  async function endSubscription(
    id: number,
    end: SubscriptionEnd,
    input: unknown,
  ): Promise<SubscriptionEventAnswer> {
    const request = accepted(verifySubscriptionEnd(input));
    processDueFirst(context);
    const event = accepted(context.state().endSubscription(id, end, request.notify_url));
    return { ...event, deliveries: await deliverQueued(context, request.delivery) };
  }

  // Inputs are unknown because they are checked here, whether they came over HTTP or in-process
  // (where server.ts's Sandbox interface types them).
  return {
    async completeCheckout(input: unknown): Promise<CheckoutAnswer> {
      const checkout = accepted(verifyCheckout(input, context.signer));
      processDueFirst(context);
      const created = context.state().completeCheckout(checkout);
      return { ...created, deliveries: await deliverQueued(context, checkout.delivery) };
    },

    async chargeInstallment(id: number, input: unknown): Promise<SubscriptionEventAnswer> {
      const request = accepted(verifyInstallment(input));
      processDueFirst(context);
      const event = accepted(context.state().chargeInstallment(id, request.outcome, request.notify_url));
      return { ...event, deliveries: await deliverQueued(context, request.delivery) };
    },

    completeSubscription: (id: number, input: unknown = {}) => endSubscription(id, 'complete', input),

    stopSubscription: (id: number, input: unknown = {}) => endSubscription(id, 'stop', input),

    /**
     * PayHere decides a pending charge of the order: `input` is `{ outcome, payment_id?, notify_url?,
     * delivery? }` (server.ts's Sandbox takes the outcome apart).
     */
    async decidePending(orderId: string, input: unknown): Promise<PendingDecisionAnswer> {
      const request = accepted(verifyPendingDecision(input));
      processDueFirst(context);
      const decided = accepted(
        context.state().decidePending(orderId, request.outcome, request.payment_id, request.notify_url),
      );
      return { ...decided, deliveries: await deliverQueued(context, request.delivery) };
    },

    pendingCharges(): PendingChargeView[] {
      processDueFirst(context);
      return context.state().pendingCharges();
    },

    /** Finishes the late charges due by now and posts their notifications. */
    processDue: () => processDue(context),

    /** Posts an earlier attempt's form again, unchanged, to the same URL. */
    async replayNotification(deliveryId: number): Promise<Delivery[]> {
      const replayed = context.deliveries.replay(deliveryId);
      if (!replayed) throw new SandboxRefusal(404, 'Notification not found');
      return replayed;
    },
  };
}

export type NotifyingControls = ReturnType<typeof notifyingControls>;
