import { ok } from '#lib/envelope/envelope.ts';
import { formRoute } from '#lib/http/form-route.ts';
import { notificationReceiverFromEnvironment } from '#lib/notifications/from-environment.ts';
import { Notification } from '#lib/schemas/notification.ts';

const receiver = notificationReceiverFromEnvironment();

/**
 * PayHere answers within a second or retries: checking a notification's unsigned fields with
 * PayHere's own records gets this long, and what it cannot confirm by then waits for the next read.
 */
const CONFIRM_WITHIN_MS = 700;

/**
 * POST /gateway/notify: PayHere reports a checkout's, pre-approval's, hold's, charge's or
 * subscription's result (no bearer token: the signature authenticates it). Answered 200 whenever
 * the signature verifies, recorded or not, so that PayHere does not retry what will never match;
 * only a paid order's second payment that cannot be checked now fails (429 or 503), for PayHere to
 * send it again (lib/notifications/receiver.ts).
 */
export const handler = formRoute({ name: 'notify', body: Notification }, async ({ body, deadline }) => {
  await receiver.receive(body, Math.min(deadline, Date.now() + CONFIRM_WITHIN_MS));
  return ok('Notification recorded', null);
});
