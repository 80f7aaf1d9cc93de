// A subscription's terms in PayHere's forms (`1 Month` every, for `1 Year` or `Forever`): how they
// read in a record, how many installments they make and when each falls due.
const PERIOD = /^([1-9]\d{0,2}) (Day|Week|Month|Year)$/;

type Unit = 'Day' | 'Week' | 'Month' | 'Year';

interface Period {
  count: number;
  unit: Unit;
}

function parsePeriod(text: string): Period | undefined {
  const match = PERIOD.exec(text);
  if (!match) return undefined;
  return { count: Number(match[1]), unit: match[2] as Unit };
}

export function isRecurrence(text: string): boolean {
  return parsePeriod(text) !== undefined;
}

export function isDuration(text: string): boolean {
  return text === 'Forever' || parsePeriod(text) !== undefined;
}

function counted(period: Period): string {
  return `${period.count} ${period.unit.toLowerCase()}${period.count === 1 ? '' : 's'}`;
}

/** The `recurring` sentence of a subscription record, e.g. "Charged every month for 1 year". */
export function recurringSentence(recurrence: string, duration: string): string {
  const every = parsePeriod(recurrence);
  if (!every) throw new RangeError(`not a recurrence: ${recurrence}`);
  const span = parsePeriod(duration);
  const often = every.count === 1 ? every.unit.toLowerCase() : counted(every);
  return `Charged every ${often} ${span ? `for ${counted(span)}` : 'forever'}`;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** Calendar arithmetic on a UTC midnight; a month from 31 January is the last day of February. */
function add(date: number, period: Period, times: number): number {
  const count = period.count * times;
  if (period.unit === 'Day') return date + count * DAY_MS;
  if (period.unit === 'Week') return date + count * 7 * DAY_MS;
  const start = new Date(date);
  const months = period.unit === 'Month' ? count : count * 12;
  const year = start.getUTCFullYear();
  const month = start.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(start.getUTCDate(), lastDay));
}

/** The day part of a PayHere date (`YYYY-MM-DD HH:MM:SS`) as a UTC midnight. */
function dayOf(date: string): number {
  return Date.parse(`${date.slice(0, 10)}T00:00:00Z`);
}

/** How many installments the terms make; null for `Forever`. */
export function installmentCount(startDate: string, recurrence: string, duration: string): number | null {
  const every = parsePeriod(recurrence);
  const span = parsePeriod(duration);
  if (!every) throw new RangeError(`not a recurrence: ${recurrence}`);
  if (!span) return null;
  const start = dayOf(startDate);
  const end = add(start, span, 1);
  let count = 1;
  while (add(start, every, count) < end) count += 1;
  return count;
}

/** The day (`YYYY-MM-DD`) installment number `installment` (the first is 1) falls due. */
export function dueDate(startDate: string, recurrence: string, installment: number): string {
  const every = parsePeriod(recurrence);
  if (!every) throw new RangeError(`not a recurrence: ${recurrence}`);
  return new Date(add(dayOf(startDate), every, installment - 1)).toISOString().slice(0, 10);
}
