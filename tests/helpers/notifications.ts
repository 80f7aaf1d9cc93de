/**
 * PayHere's notifications as a test sends them: form-encoded, every value a string, signed as
 * docs/payhere.md "Signature" says (written out here, independently of lib/notifications/signature.ts).
 */
import { createHash } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { SANDBOX_CREDENTIALS } from '../../sandbox/server.ts';
import { trustTestIssuer } from './auth.ts';
import { type Answer, apiEvent, invoke, lambdaContext } from './events.ts';

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

const md5 = (text: string) => createHash('md5').update(text, 'utf8').digest('hex').toUpperCase();

export interface NotificationFields {
  order_id: string;
  payhere_amount: string;
  payhere_currency?: string;
  status_code: string;
  [field: string]: string | undefined;
}

/** A notification's fields with PayHere's md5sig under `secret` (the sandbox merchant's by default). */
export function signed(
  fields: NotificationFields,
  secret: string = SANDBOX_CREDENTIALS.merchantSecret,
): Record<string, string> {
  const all = { merchant_id: SANDBOX_CREDENTIALS.merchantId, payhere_currency: 'LKR', ...fields };
  const md5sig = md5(
    all.merchant_id +
      all.order_id +
      all.payhere_amount +
      all.payhere_currency +
      all.status_code +
      md5(secret),
  );
  return Object.fromEntries(
    Object.entries({ ...all, md5sig }).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

let handler: Promise<Handler> | undefined;

/** The notify function, loaded once per test file (its module scope is the container). */
export function notifyHandler(): Promise<Handler> {
  trustTestIssuer();
  handler ??= import('../../functions/notify.ts').then((module: { handler: Handler }) => module.handler);
  return handler;
}

/** POST a form to the notify handler in-process, as API Gateway would hand it over. */
export async function notify(
  form: Record<string, string> | string,
  headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded' },
): Promise<Answer> {
  const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
  const event = apiEvent({
    method: 'POST',
    resource: '/gateway/notify',
    body,
    headers,
    replaceHeaders: true,
  });
  return invoke(await notifyHandler(), event, lambdaContext());
}
