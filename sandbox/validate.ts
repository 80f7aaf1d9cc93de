// Strict request checking: PayHere answers a wrong field name with an error rather than ignoring it,
// and so does the sandbox, so a client's misspelling fails here instead of in production.
import * as z from 'zod/mini';

const identifier = z.string().check(z.minLength(1));
const optionalText = z.optional(z.nullable(z.string()));

const chargeSchema = z.strictObject({
  type: z.enum(['PAYMENT', 'AUTHORIZE']),
  order_id: identifier,
  items: identifier,
  currency: z.string(),
  amount: z.number(),
  customer_token: identifier,
  custom_1: optionalText,
  custom_2: optionalText,
  notify_url: optionalText,
  itemList: z.optional(
    z.array(
      z.strictObject({
        name: z.string(),
        number: z.string(),
        quantity: z.int().check(z.positive()),
        unit_amount: z.number(),
      }),
    ),
  ),
});

const captureSchema = z.strictObject({
  authorization_token: identifier,
  amount: z.number(),
  deduction_details: z.string(),
});

// One schema for both refund forms; which id is present decides the form (see refundTarget).
const refundSchema = z.strictObject({
  payment_id: z.optional(z.int()),
  authorization_token: z.optional(identifier),
  description: z.string(),
  amount: z.optional(z.number()),
});

const subscriptionActionSchema = z.strictObject({
  subscription_id: z.int(),
});

export type ChargeRequest = z.infer<typeof chargeSchema>;
export type CaptureRequest = z.infer<typeof captureSchema>;
export type RefundRequest = z.infer<typeof refundSchema>;
export type SubscriptionAction = z.infer<typeof subscriptionActionSchema>;

export type Checked<T> = { ok: true; value: T } | { ok: false; field: string };

function fieldName(path: readonly PropertyKey[]): string {
  return path
    .map((part, index) =>
      typeof part === 'number' ? `[${part}]` : `${index === 0 ? '' : '.'}${String(part)}`,
    )
    .join('');
}

/** The body as the schema reads it, or the field to name in "Invalid request parameter: <field>". */
export function check<T>(schema: z.ZodMiniType<T>, body: unknown): Checked<T> {
  const result = schema.safeParse(body);
  if (result.success) return { ok: true, value: result.data };
  // A misspelled field is both unknown and (its real name) missing; naming the unknown one is what
  // tells the caller which key to fix.
  const issues = result.error.issues;
  const unknown = issues.find((issue) => issue.code === 'unrecognized_keys');
  if (unknown?.code === 'unrecognized_keys') {
    return { ok: false, field: fieldName([...unknown.path, unknown.keys[0] ?? '']) };
  }
  return { ok: false, field: fieldName(issues[0]?.path ?? []) };
}

export function checkCharge(body: unknown): Checked<ChargeRequest> {
  return check(chargeSchema, body);
}

export function checkCapture(body: unknown): Checked<CaptureRequest> {
  return check(captureSchema, body);
}

export function checkRefund(body: unknown): Checked<RefundRequest> {
  const checked = check(refundSchema, body);
  if (!checked.ok) return checked;
  const { payment_id, authorization_token } = checked.value;
  if (payment_id === undefined && authorization_token === undefined)
    return { ok: false, field: 'payment_id' };
  if (payment_id !== undefined && authorization_token !== undefined) {
    return { ok: false, field: 'authorization_token' };
  }
  return checked;
}

export function checkSubscriptionAction(body: unknown): Checked<SubscriptionAction> {
  return check(subscriptionActionSchema, body);
}

/** A query string is checked as strictly as a body: only the named parameters, each once. */
export function checkQuery(
  query: URLSearchParams,
  allowed: readonly string[],
): Checked<Record<string, string>> {
  const values: Record<string, string> = {};
  for (const [name, value] of query) {
    if (!allowed.includes(name) || name in values) return { ok: false, field: name };
    values[name] = value;
  }
  for (const name of allowed) {
    if (!values[name]) return { ok: false, field: name };
  }
  return { ok: true, value: values };
}
