import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call } from '../helpers/gateway.ts';
import { forgetSharedReads } from '../helpers/state-table.ts';

// docs/contract.md "notify_url", read when the handlers load: the service's own notification route, and the
// merchant allowing the sample's notify_url.
process.env.PUBLIC_BASE_URL = 'https://pay.example.com/v1';
process.env.NOTIFY_URL_ORIGINS = 'https://www.abc.com';

/**
 * Another PayHere-compatible gateway, behind a path prefix: it records every request exactly as
 * it arrives and answers with docs/payhere.md's samples. What it records is the service's wire contract.
 */
interface Recorded {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const recorded: Recorded[] = [];
let server: Server;

const SAMPLE_PAYMENT = {
  payment_id: 320025071278,
  order_id: 'LP8006126139',
  date: '2020-01-16 16:21:02',
  description: 'Policy No. LP8006126139 - Outstanding Payment',
  status: 'RECEIVED',
  currency: 'LKR',
  amount: 50,
  customer: {
    fist_name: 'Saman',
    last_name: 'Perera',
    email: 'samanperera@gmail.com',
    phone: '+94771234567',
  },
  amount_detail: { currency: 'LKR', gross: 500, fee: 14.5, net: 485.5, exchange_rate: 1 },
  payment_method: { method: 'VISA', card_customer_name: 'S Perera', card_no: '************1234' },
  items: null,
};
const SAMPLE_SUBSCRIPTION = {
  ...SAMPLE_PAYMENT,
  payment_id: undefined,
  subscription_id: 420075032251,
  recurring: 'Charged every month for 3 years',
  status: 'ACTIVE',
  items: [],
};

function answer(method: string, path: string): unknown {
  const p = path.replace(/^\/prefix\/merchant\/v1/, '');
  if (p === '/oauth/token')
    return {
      access_token: 'cb5c47fd-741c-489a-b69e-fd73155ca34e',
      token_type: 'bearer',
      expires_in: 599,
      scope: 'SANDBOX',
    };
  if (p.startsWith('/payment/search'))
    return { status: 1, msg: 'Payments with order_id:LP8006126139', data: [SAMPLE_PAYMENT] };
  if (p === '/payment/charge')
    return {
      status: 1,
      msg: 'Automatic payment charged successfully',
      data: {
        order_id: 'Order12345',
        items: 'Taxi Hire 123',
        currency: 'LKR',
        amount: 345.67,
        custom_1: null,
        custom_2: null,
        payment_id: 320025021815,
        status_code: 2,
        status_message: 'Successfully completed the test tokenized payment.',
        md5sig: 'A098FEBCC06293734641770555B4D569',
        authorization_token: null,
      },
    };
  if (p === '/payment/capture')
    return {
      status: 1,
      msg: 'Successfully captured payment',
      data: {
        status_code: 2,
        status_message: 'Successfully received the VISA payment',
        payment_id: 320025527952,
        currency: 'LKR',
        amount: 100,
        captured_amount: 80,
        items: 'Toy Car',
        order_id: 'Order12345',
        md5sig: '27EE69A66E761D20429984A0CB0AFC27',
        custom_1: 'ABCD',
        custom_2: null,
      },
    };
  if (p === '/payment/refund')
    return { status: 1, msg: 'Successfully processed the refund', data: 560034010257 };
  if (p === '/subscription' && method === 'GET')
    return { status: 1, msg: 'Found 1 subscriptions', data: [SAMPLE_SUBSCRIPTION] };
  if (/^\/subscription\/\d+$/.test(p))
    return { status: 1, msg: 'Found subscription', data: SAMPLE_SUBSCRIPTION };
  if (/^\/subscription\/\d+\/payments$/.test(p))
    return { status: 1, msg: 'Found 1 payments', data: [SAMPLE_PAYMENT] };
  if (p === '/subscription/retry')
    return { status: 1, msg: 'Recurring payment charged successfully', data: null };
  if (p === '/subscription/cancel')
    return { status: 1, msg: 'Successfully cancelled the subscription', data: null };
  return { status: -1, msg: 'Not found', data: null };
}

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    recorded.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify(answer(req.method ?? '', req.url ?? '')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  Object.assign(process.env, {
    GATEWAY_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/prefix`,
    GATEWAY_APP_ID: 'contract-app-id',
    GATEWAY_APP_SECRET: 'contract-app-secret',
    GATEWAY_RATE_LIMIT: '1000/1000',
  });
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** The requests one route call made, the token request excluded. */
async function wireOf(run: () => Promise<unknown>): Promise<Recorded[]> {
  const from = recorded.length;
  await run();
  return recorded.slice(from).filter((r) => !r.url.endsWith('/oauth/token'));
}

// Each case is about what reaches the gateway: none is answered from what an earlier one shared.
beforeEach(() => forgetSharedReads());

describe('the wire contract with a PayHere-compatible gateway', () => {
  it('gets an access token with Basic credentials and a client_credentials form', async () => {
    await call('listSubscriptions');

    const token = recorded.find((r) => r.url === '/prefix/merchant/v1/oauth/token');
    expect(token).toBeDefined();
    expect(token!.method).toBe('POST');
    expect(token!.headers.authorization).toBe(
      `Basic ${Buffer.from('contract-app-id:contract-app-secret').toString('base64')}`,
    );
    expect(token!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(token!.body).toBe('grant_type=client_credentials');
  });

  it.each([
    [
      'retrievePayments',
      { id: 'LP 8006/126139' },
      'GET',
      '/prefix/merchant/v1/payment/search?order_id=LP%208006%2F126139',
      undefined,
    ],
    ['listSubscriptions', {}, 'GET', '/prefix/merchant/v1/subscription', undefined],
    [
      'getSubscription',
      { id: '420075032251' },
      'GET',
      '/prefix/merchant/v1/subscription/420075032251',
      undefined,
    ],
    [
      'subscriptionPayments',
      { id: '420075032251' },
      'GET',
      '/prefix/merchant/v1/subscription/420075032251/payments',
      undefined,
    ],
    [
      'retrySubscription',
      { id: '420075032251' },
      'POST',
      '/prefix/merchant/v1/subscription/retry',
      { subscription_id: 420075032251 },
    ],
    [
      'cancelSubscription',
      { id: '420075032251' },
      'POST',
      '/prefix/merchant/v1/subscription/cancel',
      { subscription_id: 420075032251 },
    ],
    [
      'capture',
      {
        body: {
          authorization_token: 'e34f3059-7b7d-4b62-a57c-784beaa169f4',
          amount: 80,
          description: 'Item1 is out of stock',
        },
      },
      'POST',
      '/prefix/merchant/v1/payment/capture',
      {
        authorization_token: 'e34f3059-7b7d-4b62-a57c-784beaa169f4',
        amount: 80,
        deduction_details: 'Item1 is out of stock',
      },
    ],
    [
      'refund',
      { body: { payment_id: '320027150501', description: 'Item is out of stock', amount: 100.5 } },
      'POST',
      '/prefix/merchant/v1/payment/refund',
      { payment_id: 320027150501, description: 'Item is out of stock', amount: 100.5 },
    ],
    [
      'refund',
      {
        body: { authorization_token: '74d7f304-7f9d-481d-b47f-6c9cad32d3d5', description: 'Order cancelled' },
      },
      'POST',
      '/prefix/merchant/v1/payment/refund',
      { authorization_token: '74d7f304-7f9d-481d-b47f-6c9cad32d3d5', description: 'Order cancelled' },
    ],
  ] as const)('%s sends %s exactly as PayHere expects', async (route, options, method, url, body) => {
    const [sent] = await wireOf(() => call(route, options));

    expect(sent).toBeDefined();
    expect(sent!.method).toBe(method);
    expect(sent!.url).toBe(url);
    expect(sent!.headers.authorization).toBe('Bearer cb5c47fd-741c-489a-b69e-fd73155ca34e');
    if (body === undefined) expect(sent!.body).toBe('');
    else {
      expect(sent!.headers['content-type']).toBe('application/json');
      expect(JSON.parse(sent!.body)).toStrictEqual(body);
    }
  });

  it('sends a charge with exactly the fields of the request', async () => {
    const charge = {
      type: 'PAYMENT',
      order_id: 'Order12345',
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      customer_token: '59AFEE022CC69CA39D325E1B59130862',
      custom_1: 'custom parameter 1',
      custom_2: null,
      notify_url: 'https://www.abc.com/hire/notify',
      itemList: [
        { name: 'Hire from Colombo 1 to Colombo 4', number: 'HIRE_12345', quantity: 1, unit_amount: 300 },
      ],
    };

    const [sent] = await wireOf(() => call('charge', { body: charge }));

    expect(sent!.url).toBe('/prefix/merchant/v1/payment/charge');
    expect(JSON.parse(sent!.body)).toStrictEqual(charge);
  });

  it('sets the service’s own notification route on a charge that names none', async () => {
    const charge = {
      type: 'PAYMENT',
      order_id: `Notify-${Date.now()}`,
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      customer_token: '59AFEE022CC69CA39D325E1B59130862',
    };

    const [sent] = await wireOf(() => call('charge', { body: charge }));

    expect(JSON.parse(sent!.body)).toStrictEqual({
      ...charge,
      notify_url: 'https://pay.example.com/v1/gateway/notify',
    });
  });

  it('refuses a notify_url at an origin the merchant did not allow, naming it, and sends nothing', async () => {
    const charge = {
      type: 'PAYMENT',
      order_id: `Notify-${Date.now()}`,
      items: 'Taxi Hire 123',
      currency: 'LKR',
      amount: 345.67,
      customer_token: '59AFEE022CC69CA39D325E1B59130862',
      notify_url: 'https://www.abc.com.evil.example/notify',
    };
    let answer: Awaited<ReturnType<typeof call>> | undefined;

    const wire = await wireOf(async () => {
      answer = await call('charge', { body: charge });
    });

    expect(answer!.statusCode).toBe(400);
    expect(answer!.body.data.errors).toEqual([
      { path: 'notify_url', message: 'must point at an origin the merchant allowed for notifications' },
    ]);
    expect(wire).toEqual([]);
  });
});
