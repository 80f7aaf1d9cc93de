import { describe, expect, it } from 'vitest';
import { Contract, type RecordedAnswer } from '../helpers/contract.ts';
import { withoutNetwork } from '../helpers/no-network.ts';

/** The checker every recorded answer goes through (tests/setup/answers.ts), on answers made up here. */
const contract = Contract.fromFile();

const refund = (overrides: Partial<RecordedAnswer> = {}): RecordedAnswer => ({
  method: 'POST',
  path: '/gateway/api/payments/refund',
  status: 200,
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({
    status: 1,
    msg: 'Successfully processed the refund',
    data: { refund_id: 560034010257 },
  }),
  ...overrides,
});

describe('the contract checker', () => {
  it('accepts an answer as documented, and finds its operation by path', () => {
    expect(contract.problems(refund())).toEqual([]);
    expect(
      contract.operationOf({ method: 'GET', path: '/gateway/api/subscriptions/42/payments' })?.operationId,
    ).toBe('subscriptionPayments');
    expect(contract.operationOf({ method: 'GET', path: '/gateway/api/payments/Order-1' })?.operationId).toBe(
      'retrievePayments',
    );
  });

  it('refuses a status the document does not give the operation', () => {
    expect(contract.problems(refund({ status: 418 }))).toEqual([
      'refund 418: the document gives refund no 418 answer',
    ]);
  });

  it('refuses a body that does not match the schema of the status', () => {
    const [problem] = contract.problems(
      refund({ body: JSON.stringify({ status: 1, msg: 'ok', data: null }) }),
    );

    expect(problem).toMatch(/^refund 200: the body does not match/);
  });

  it('refuses a failure code the document does not list for that status', () => {
    const body = JSON.stringify({ status: -1, msg: 'x', data: { code: 'conflict' } });

    expect(contract.problems(refund({ status: 422, body }))[0]).toMatch(
      /^refund 422: the body does not match/,
    );
  });

  it('refuses a documented header where it is not documented, and a header value against its schema', () => {
    const body = JSON.stringify({ status: 1, msg: 'Found 0 subscriptions', data: [] });
    const list = { method: 'GET', path: '/gateway/api/subscriptions', status: 200, body };

    expect(
      contract.problems({ ...list, headers: { 'content-type': 'application/json', 'Retry-After': '1' } }),
    ).toEqual(['listSubscriptions 200: header retry-after is sent but not documented for this answer']);
    expect(
      contract.problems({ ...list, headers: { 'content-type': 'application/json', Age: 'soon' } }),
    ).toEqual(['listSubscriptions 200: header age: soon does not match its schema']);
  });

  it('does not judge requests to routes the document does not have', () => {
    expect(contract.problems(refund({ path: '/gateway/api/nowhere', status: 404 }))).toEqual([]);
  });
});

describe('withoutNetwork', () => {
  it('refuses and reports a connection beyond loopback', async () => {
    const { result, attempts } = await withoutNetwork(() =>
      fetch('https://registry.example.invalid/').then(
        () => 'reached',
        () => 'refused',
      ),
    );

    expect(result).toBe('refused');
    expect(attempts).toEqual(['fetch https://registry.example.invalid']);
  });
});
