import { type Env, required } from '../config/config.ts';
import { dynamoDbClient, loadDynamoDbConfig } from '../config/dynamodb.ts';
import { inBackground } from '../net/background.ts';
import { WebhookDeliverer } from './deliverer.ts';
import { WebhookDeliveries } from './deliveries.ts';
import { environmentWebhookEndpoints, webhookEndpointIds, webhookSource } from './endpoints.ts';
import { postWebhook } from './post.ts';
import { WebhookStore } from './store.ts';

/** The events table's webhook part (EVENTS_TABLE), built at start-up (a bad variable fails here). */
export function webhookStoreFromEnvironment(env: Env = process.env): WebhookStore {
  return new WebhookStore({
    client: dynamoDbClient(loadDynamoDbConfig(env)),
    table: required(env, 'EVENTS_TABLE'),
  });
}

let deliverer: WebhookDeliverer | undefined;

/**
 * Deliver these just-published events now, in the background, rather than at the deliverer's next
 * scheduled run (the relay calls it once it has written them). Nothing waits for it and nothing
 * is lost if it does not finish: the events stay in the `due` index until their results are
 * written. Only where the endpoint is named in the environment (local runs and tests): a deployed
 * stage's endpoints are in a secret only deliverWebhooks may read (least privilege), and its next
 * run, within a minute, delivers them.
 */
export function deliverSoon(eventIds: readonly string[], env: Env = process.env): Promise<void> {
  if (eventIds.length === 0 || webhookSource(env).kind !== 'env') return Promise.resolve();
  return inBackground(async () => {
    deliverer ??= new WebhookDeliverer({
      store: webhookStoreFromEnvironment(env),
      endpoints: environmentWebhookEndpoints(webhookSource(env)),
      post: postWebhook,
    });
    await deliverer.deliver(eventIds);
  });
}

/** The merchant's deliveries and redeliveries, over the events table. */
export function webhookDeliveriesFromEnvironment(env: Env = process.env): WebhookDeliveries {
  return new WebhookDeliveries({
    store: webhookStoreFromEnvironment(env),
    endpointIds: () => webhookEndpointIds(env),
  });
}
