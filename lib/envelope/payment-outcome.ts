import type { APIGatewayProxyResult } from 'aws-lambda';
import { respond } from './envelope.ts';

/**
 * A charge's or capture's answer follows its `status_code`, not PayHere's envelope status
 * (a declined card is status 1 with status_code -2). `data` is always the result object.
 */
export function paymentOutcomeResponse(
  result: { status_code: number | string; status_message?: unknown },
  gatewayMsg: string,
  successCodes: readonly number[],
): APIGatewayProxyResult {
  const code = Number(result.status_code);
  if (successCodes.includes(code)) return respond(200, { status: 1, msg: gatewayMsg, data: result });
  if (code === -1 || code === -2) {
    const reason =
      (typeof result.status_message === 'string' && result.status_message) ||
      (code === -1 ? 'The payment was canceled.' : 'The payment failed.');
    return respond(402, { status: -1, msg: reason, data: result });
  }
  // 0 is pending; any code PayHere has not documented is treated the same: not final.
  return respond(202, {
    status: 0,
    msg: `The payment is pending at the gateway (status_code ${code}); check it later with GET /gateway/api/payments/${encodeURIComponent(String((result as { order_id?: unknown }).order_id ?? ''))}.`,
    data: result,
  });
}
