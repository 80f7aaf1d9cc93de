import { type Env, required } from '../config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { inBackground } from '../net/background.ts';
import { WebhookDeliverer } from './deliverer.ts';
import { webhookEndpointsFor, webhookSource } from './endpoints.ts';
import { postWebhook } from './post.ts';
import { WebhookStore } from './store.ts';

/** The events table's webhook part (EVENTS_TABLE), built at start-up (a bad variable fails here). */
export function webhookStoreFromEnvironment(env: Env = process.env): WebhookStore {
  return new WebhookStore({
    client: dynamoDbClient(loadDynamoDbConfig(env)),
    table: required(env, 'EVENTS_TABLE'),
  });
}

/** The container's deliverer: the events table and the configured endpoints. */
export function webhookDelivererFromEnvironment(env: Env = process.env): WebhookDeliverer {
  return new WebhookDeliverer({
    store: webhookStoreFromEnvironment(env),
    endpoints: webhookEndpointsFor(webhookSource(env), env),
    post: postWebhook,
  });
}

let deliverer: WebhookDeliverer | undefined;

/**
 * Deliver these just-published events now, in the background, rather than at the deliverer's next
 * scheduled run (the relay calls it once it has written them). Nothing waits for it and nothing
 * is lost if it does not finish: the events stay in the `due` index until their results are
 * written. Without endpoints configured it does nothing.
 */
export function deliverSoon(eventIds: readonly string[], env: Env = process.env): Promise<void> {
  if (eventIds.length === 0 || webhookSource(env).kind === 'none') return Promise.resolve();
  return inBackground(async () => {
    deliverer ??= webhookDelivererFromEnvironment(env);
    await deliverer.deliver(eventIds);
  });
}
