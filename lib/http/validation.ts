import type * as z from 'zod/mini';
import type { FieldError } from '../envelope/errors.ts';

type Issue = z.core.$ZodIssue;
type RawIssue = z.core.$ZodRawIssue;

/**
 * zod/mini ships no messages ("Invalid input"); this turns each issue into a plain sentence
 * about the field. A message set on a check in a schema takes precedence over this one.
 */
function describeIssue(issue: RawIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : `must be ${article(String(issue.expected))}`;
    case 'too_small':
      return bound('at least', issue.origin, issue.minimum, issue.inclusive);
    case 'too_big':
      return bound('at most', issue.origin, issue.maximum, issue.inclusive);
    case 'invalid_value':
      return `must be one of ${issue.values.map(String).join(', ')}`;
    case 'invalid_format':
      return issue.format === 'uuid' ? 'must be a UUID' : `must be a valid ${issue.format}`;
    case 'unrecognized_keys':
      return 'is not a known field';
    default:
      return 'is invalid';
  }
}

function article(expected: string): string {
  if (expected === 'int') return 'an integer';
  if (expected === 'array' || expected === 'object') return `an ${expected}`;
  return `a ${expected}`;
}

function bound(word: string, origin: unknown, limit: unknown, inclusive: boolean | undefined): string {
  const n = Number(limit);
  if (origin === 'string') return `must be ${word} ${n} character${n === 1 ? '' : 's'} long`;
  if (origin === 'array') return `must have ${word} ${n} item${n === 1 ? '' : 's'}`;
  if (inclusive === false) return `must be ${word === 'at least' ? 'greater' : 'less'} than ${n}`;
  return `must be ${word} ${n}`;
}

/** `amount`, `itemList.0.name`, `path.id`; the whole input is named by the prefix, or `body`. */
function joinPath(prefix: string, path: readonly PropertyKey[]): string {
  const joined = [prefix, ...path.map(String)].filter((part) => part !== '').join('.');
  return joined === '' ? 'body' : joined;
}

/** One FieldError per bad field; an unknown-keys issue becomes one error per unknown key. */
export function toFieldErrors(issues: readonly Issue[], prefix = ''): FieldError[] {
  return issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: joinPath(prefix, [...issue.path, key]), message: issue.message }))
      : [{ path: joinPath(prefix, issue.path), message: issue.message }],
  );
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** Parse `input`, naming every bad field under `prefix` (`''` for the body, `path`, a header name). */
export function parse<T>(schema: z.ZodMiniType<T>, input: unknown, prefix: string): Parsed<T> {
  const result = schema.safeParse(input, { error: describeIssue });
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, errors: toFieldErrors(result.error.issues, prefix) };
}
