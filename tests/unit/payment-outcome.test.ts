import { describe, expect, it } from 'vitest';
import { paymentOutcomeResponse } from '../../lib/envelope/payment-outcome.ts';

const PAYMENT = [2] as const;
const AUTHORIZE = [2, 3] as const;

function result(
  status_code: number,
  status_message: string | null = 'Successfully received the VISA payment',
) {
  return {
    order_id: 'ORD-2024-0001',
    items: 'Door bell wireless',
    currency: 'LKR',
    amount: 1250.5,
    custom_1: null,
    custom_2: null,
    payment_id: 320025071234567,
    status_code,
    status_message,
    md5sig: 'A4D8B1C2E3F4A5B6C7D8E9F0A1B2C3D4',
    authorization_token: null,
  };
}

function parsed(response: { body: string }) {
  return JSON.parse(response.body) as { status: number; msg: string; data: unknown };
}

describe('paymentOutcomeResponse', () => {
  it('answers a completed payment (2) with 200, status 1, the gateway message and the result', () => {
    // Prepare
    const answer = result(2);

    // Act
    const response = paymentOutcomeResponse(answer, 'Automatic payment charged successfully', PAYMENT);

    // Assess
    expect(response.statusCode).toBe(200);
    expect(response.headers?.['Content-Type']).toBe('application/json');
    expect(parsed(response)).toEqual({
      status: 1,
      msg: 'Automatic payment charged successfully',
      data: answer,
    });
  });

  it('answers an authorization hold (3) with 200 and status 1 when 3 is a success code', () => {
    // Prepare
    const answer = {
      ...result(3, 'Authorized'),
      authorization_token: 'e2a4c3f0-9b1d-4e5f-8a7b-1c2d3e4f5a6b',
    };

    // Act
    const response = paymentOutcomeResponse(answer, 'Payment authorized', AUTHORIZE);

    // Assess
    expect(response.statusCode).toBe(200);
    expect(parsed(response)).toEqual({ status: 1, msg: 'Payment authorized', data: answer });
  });

  it('does not call 3 a success when the request was not an authorization', () => {
    // Act
    const response = paymentOutcomeResponse(result(3, 'Authorized'), 'Payment authorized', PAYMENT);

    // Assess
    expect(response.statusCode).not.toBe(200);
    expect(parsed(response).status).not.toBe(1);
  });

  it('answers a pending payment (0) with 202, status 0 and a message saying it is pending', () => {
    // Prepare
    const answer = result(0, null);

    // Act
    const response = paymentOutcomeResponse(answer, 'Automatic payment charged successfully', PAYMENT);

    // Assess
    const envelope = parsed(response);
    expect(response.statusCode).toBe(202);
    expect(envelope.status).toBe(0);
    expect(envelope.msg).toMatch(/pending/i);
    expect(envelope.msg).toContain('ORD-2024-0001');
    expect(envelope.data).toEqual(answer);
  });

  it.each([
    [-1, 'Payment canceled by the customer'],
    [-2, 'Insufficient funds'],
  ])('answers a failed payment (%i) with 402, status -1 and the gateway status_message', (code, message) => {
    // Prepare
    const answer = result(code, message);

    // Act
    const response = paymentOutcomeResponse(answer, 'Automatic payment charged successfully', PAYMENT);

    // Assess
    expect(response.statusCode).toBe(402);
    expect(parsed(response)).toEqual({ status: -1, msg: message, data: answer });
  });

  it.each([-1, -2])('still explains a failed payment (%i) that has no status_message', (code) => {
    // Act
    const response = paymentOutcomeResponse(
      result(code, null),
      'Automatic payment charged successfully',
      PAYMENT,
    );

    // Assess
    expect(response.statusCode).toBe(402);
    expect(parsed(response).msg).toMatch(/\w/);
    expect(parsed(response).msg).not.toBe('Automatic payment charged successfully');
  });

  it.each([-3, 1, 4, 99])('treats the undocumented status_code %i as not final', (code) => {
    // Act
    const response = paymentOutcomeResponse(
      result(code),
      'Automatic payment charged successfully',
      AUTHORIZE,
    );

    // Assess
    expect(response.statusCode).toBe(202);
    expect(parsed(response).status).toBe(0);
  });

  it('puts an order id that needs escaping into the pending message URL-encoded', () => {
    // Prepare
    const answer = result(0);
    answer.order_id = 'ORD 1/2';

    // Act
    const response = paymentOutcomeResponse(answer, 'ok', PAYMENT);

    // Assess
    expect(parsed(response).msg).toContain('/gateway/api/payments/ORD%201%2F2');
  });
});
