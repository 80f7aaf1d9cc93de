import { maskCards } from '../log/redact.ts';
import type { Notification } from '../schemas/notification.ts';

/** What of a notification's other fields is kept apart, at most (anyone can post such fields). */
const MAX_FIELDS = 32;
const MAX_NAME = 64;
const MAX_VALUE = 255;
/** Never kept: the tokens are secrets, and the signature is what a replay would need. */
const SECRET_FIELDS = new Set(['customer_token', 'authorization_token', 'md5sig']);

/**
 * The fields kept of a notification that matched nothing, for the operator: no token, no
 * signature; bounded in number and size (PayHere's schema tolerates fields it may add, so a forger
 * may add any); and anything shaped like a card number masked, whatever field carries it.
 */
export function keptFields(notification: Notification): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(notification)) {
    if (Object.keys(kept).length >= MAX_FIELDS) break;
    if (SECRET_FIELDS.has(name) || typeof value !== 'string') continue;
    kept[maskCards(name.slice(0, MAX_NAME))] = maskCards(value).slice(0, MAX_VALUE);
  }
  return kept;
}
