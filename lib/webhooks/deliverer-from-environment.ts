import type { Env } from '../config/config.ts';
import { WebhookDeliverer } from './deliverer.ts';
import { webhookEndpointsFor } from './endpoint-secret.ts';
import { webhookSource } from './endpoints.ts';
import { webhookStoreFromEnvironment } from './from-environment.ts';
import { postWebhook } from './post.ts';

/** deliverWebhooks' deliverer: the events table and the configured endpoints (the secret, deployed). */
export function webhookDelivererFromEnvironment(env: Env = process.env): WebhookDeliverer {
  return new WebhookDeliverer({
    store: webhookStoreFromEnvironment(env),
    endpoints: webhookEndpointsFor(webhookSource(env), env),
    post: postWebhook,
  });
}
