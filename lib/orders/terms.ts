/**
 * A subscription's terms: how often it charges and for how long, as the order states them in
 * PayHere's forms (`1 Month`; `1 Year` or `Forever`), as a notification's `item_recurrence` and
 * `item_duration` repeat them, and as PayHere's subscription record words them ("Charged every
 * month for 3 years"). The SDK's request is not signed, nor are a notification's terms: an order
 * succeeds only on terms PayHere's own record shows.
 */
interface Period {
  count: number;
  unit: 'day' | 'week' | 'month' | 'year';
}

export interface Terms {
  every: Period;
  /** null: forever. */
  for: Period | null;
}

const FORM = /^([1-9][0-9]{0,2}) (Day|Week|Month|Year)$/i;

function periodOf(text: string): Period | undefined {
  const match = FORM.exec(text.trim());
  if (!match) return undefined;
  return { count: Number(match[1]), unit: match[2]!.toLowerCase() as Period['unit'] };
}

/** Terms in PayHere's forms (the order's, or a notification's), if they are such. */
export function termsOf(recurrence: string, duration: string): Terms | undefined {
  const every = periodOf(recurrence);
  if (!every) return undefined;
  if (duration.trim().toLowerCase() === 'forever') return { every, for: null };
  const span = periodOf(duration);
  return span ? { every, for: span } : undefined;
}

const SENTENCE =
  /^charged every (?:([1-9][0-9]{0,2}) )?(day|week|month|year)s? (?:for ([1-9][0-9]{0,2}) (day|week|month|year)s?|forever)$/i;

/** The terms PayHere's `recurring` sentence states, if it reads as one. */
export function termsOfSentence(sentence: string): Terms | undefined {
  const match = SENTENCE.exec(sentence.trim().replace(/\s+/g, ' '));
  if (!match) return undefined;
  const every: Period = { count: Number(match[1] ?? 1), unit: match[2]!.toLowerCase() as Period['unit'] };
  if (match[3] === undefined) return { every, for: null };
  return { every, for: { count: Number(match[3]), unit: match[4]!.toLowerCase() as Period['unit'] } };
}

export function sameTerms(a: Terms, b: Terms): boolean {
  const same = (x: Period | null, y: Period | null) =>
    x === null || y === null ? x === y : x.count === y.count && x.unit === y.unit;
  return same(a.every, b.every) && same(a.for, b.for);
}
