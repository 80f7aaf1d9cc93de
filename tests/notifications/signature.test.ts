import * as crypto from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';

// Counts the constant-time comparisons the verifier makes, and nothing else.
vi.mock('node:crypto', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:crypto')>();
  return { ...original, timingSafeEqual: vi.fn(original.timingSafeEqual) };
});

const { notificationSignature, verifySignature } = await import('../../lib/notifications/signature.ts');

/** The worked example of docs/payhere.md "Signature". */
const EXAMPLE = {
  merchant_id: '1211149',
  order_id: 'ORDER-1001',
  payhere_amount: '1000.00',
  payhere_currency: 'LKR',
  status_code: '2',
};
const SECRET = 'MERCHANT_SECRET_EXAMPLE';
const EXAMPLE_SIGNATURE = 'C12CC18FD89630351949AE2037AA0A3E';

describe('the notification signature', () => {
  it('is docs/payhere.md’s worked example', () => {
    expect(notificationSignature(EXAMPLE, SECRET)).toBe(EXAMPLE_SIGNATURE);
    expect(verifySignature(EXAMPLE, EXAMPLE_SIGNATURE, [SECRET])).toBe(true);
  });

  it('takes the amount exactly as sent: 1000.0 and 1000 are other amounts', () => {
    expect(verifySignature({ ...EXAMPLE, payhere_amount: '1000.0' }, EXAMPLE_SIGNATURE, [SECRET])).toBe(
      false,
    );
    expect(verifySignature({ ...EXAMPLE, payhere_amount: '1000' }, EXAMPLE_SIGNATURE, [SECRET])).toBe(false);
  });

  it('accepts the digest in lower case (the same hex digits)', () => {
    expect(verifySignature(EXAMPLE, EXAMPLE_SIGNATURE.toLowerCase(), [SECRET])).toBe(true);
  });

  it.each(Object.keys(EXAMPLE))('fails when %s is altered', (field) => {
    const altered = { ...EXAMPLE, [field]: `${EXAMPLE[field as keyof typeof EXAMPLE]}1` };

    expect(verifySignature(altered, EXAMPLE_SIGNATURE, [SECRET])).toBe(false);
  });

  it('fails under another secret, and for a digest of the wrong length', () => {
    expect(verifySignature(EXAMPLE, EXAMPLE_SIGNATURE, ['ANOTHER_SECRET'])).toBe(false);
    expect(verifySignature(EXAMPLE, EXAMPLE_SIGNATURE.slice(1), [SECRET])).toBe(false);
    expect(verifySignature(EXAMPLE, EXAMPLE_SIGNATURE, [])).toBe(false);
  });

  it('verifies a notification an app signed with its own merchant secret', () => {
    const byApp = notificationSignature(EXAMPLE, 'APP_SECRET');

    expect(verifySignature(EXAMPLE, byApp, [SECRET, 'APP_SECRET'])).toBe(true);
    expect(verifySignature(EXAMPLE, byApp, [SECRET])).toBe(false);
  });

  it('compares in constant time against every secret, whichever matches', () => {
    const compare = vi.mocked(crypto.timingSafeEqual);
    compare.mockClear();

    verifySignature(EXAMPLE, EXAMPLE_SIGNATURE, [SECRET, 'APP_ONE', 'APP_TWO']);

    expect(compare).toHaveBeenCalledTimes(3);
  });
});
