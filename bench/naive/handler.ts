/**
 * The naive intermediary the bench sets beside the service (bench/first-answer.ts): what the public
 * PHP and Laravel PayHere intermediaries do, written the usual Node way. Express behind
 * serverless-http, axios to PayHere, a new access token for every request, the app's credentials
 * in plain environment variables, no table, no budget, no idempotency. It answers one route, the
 * merchant reading an order's payments, as the service's retrievePayments does.
 *
 * Bench-only: express, serverless-http and axios are dev dependencies that no function imports
 * (tests/unit/cold-imports.test.ts holds the functions' bundles to that).
 */
import axios from 'axios';
import express from 'express';
import serverless from 'serverless-http';

const baseUrl = process.env.NAIVE_PAYHERE_URL ?? 'https://sandbox.payhere.lk';
const basic = Buffer.from(`${process.env.NAIVE_APP_ID}:${process.env.NAIVE_APP_SECRET}`).toString('base64');
const payhere = axios.create({ baseURL: `${baseUrl}/merchant/v1`, timeout: 20_000 });

async function accessToken(): Promise<string> {
  const { data } = await payhere.post('/oauth/token', 'grant_type=client_credentials', {
    headers: { Authorization: `Basic ${basic}`, 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  return data.access_token;
}

const app = express();
app.get('/gateway/api/payments/:id', async (request, response) => {
  try {
    const token = await accessToken();
    const { data } = await payhere.get('/payment/search', {
      params: { order_id: request.params.id },
      headers: { Authorization: `Bearer ${token}` },
    });
    response.json(data);
  } catch (error) {
    response.status(502).json({ error: String(error) });
  }
});

export const handler = serverless(app);
