/**
 * Whether a request's `Accept` header prefers `text/csv` to JSON: its quality for text/csv (named,
 * or by the text wildcard at half its weight) is above zero and above its quality for
 * application/json (named, or by a wildcard at half its weight). No header, any type at all, or JSON
 * named as well or better: JSON, the service's default answer.
 */
export function prefersCsv(accept: readonly string[]): boolean {
  let csv = 0;
  let json = 0;
  for (const range of accept.join(',').split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = quality(parameters);
    if (type === 'text/csv') csv = Math.max(csv, q);
    else if (type === 'text/*') csv = Math.max(csv, q / 2);
    else if (type === 'application/json') json = Math.max(json, q);
    else if (type === '*/*' || type === 'application/*') json = Math.max(json, q / 2);
  }
  return csv > 0 && csv > json;
}

function quality(parameters: readonly string[]): number {
  const q = parameters.find((parameter) => parameter.startsWith('q='));
  if (q === undefined) return 1;
  const value = Number(q.slice(2));
  return Number.isFinite(value) && value >= 0 && value <= 1 ? value : 0;
}
