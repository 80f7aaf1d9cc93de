import { withinMs } from '../net/time-limit.ts';

/** How long a receiver has to answer an attempt. */
export const DELIVERY_TIMEOUT_MS = 10_000;

export type PostResult =
  | { delivered: true; status: number }
  /** `timedOut`: the receiver gave no answer in time. */
  | { delivered: false; status?: number; error: string; timedOut?: true };

/** Posts one attempt; never throws. */
export type PostWebhook = (url: string, headers: Record<string, string>, body: string) => Promise<PostResult>;

/**
 * An attempt over Node's fetch: a 2xx within `timeoutMs` delivers. A redirect is not followed (it
 * is a failed attempt: the endpoint's URL is the merchant's configuration, and a redirect could
 * carry the signed event elsewhere); the receiver's body is not read.
 */
export const webhookPoster =
  (timeoutMs: number): PostWebhook =>
  async (url, headers, body) => {
    try {
      const answer = await withinMs(timeoutMs, async (signal) => {
        const answer = await fetch(url, {
          method: 'POST',
          headers: { ...headers, 'user-agent': 'payhere-payments-api-webhooks' },
          body,
          redirect: 'manual',
          signal,
        });
        await answer.body?.cancel().catch(() => {});
        return answer;
      });
      if (answer.status >= 200 && answer.status < 300) return { delivered: true, status: answer.status };
      return { delivered: false, status: answer.status, error: `HTTP ${answer.status}` };
    } catch (error) {
      const name = (error as { name?: string } | null)?.name;
      if (name === 'TimeoutError')
        return { delivered: false, error: `no answer within ${timeoutMs / 1000} s`, timedOut: true };
      const cause = (error as { cause?: { code?: string } } | null)?.cause?.code;
      return { delivered: false, error: (cause ?? name ?? 'the request failed').slice(0, 100) };
    }
  };

/** The deployed attempt: DELIVERY_TIMEOUT_MS. */
export const postWebhook: PostWebhook = webhookPoster(DELIVERY_TIMEOUT_MS);
