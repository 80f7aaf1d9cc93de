import { payHereFromEnvironment } from '#lib/gateway/index.ts';
import { route } from '#lib/http.ts';
import { paymentOutcomeResponse } from '#lib/payment-outcome.ts';
import { ChargeRequest } from '#lib/schemas.ts';

const payhere = payHereFromEnvironment();

/** POST /gateway/api/payments/charge: charge (PAYMENT) or hold (AUTHORIZE) a pre-approved customer. */
export const handler = route({ body: ChargeRequest }, async ({ body, deadline }) => {
  const { msg, data } = await payhere.charge(body, deadline);
  // An AUTHORIZE hold may come back as 3, as PayHere's authorization notifications use.
  return paymentOutcomeResponse(data, msg, body.type === 'AUTHORIZE' ? [2, 3] : [2]);
});
