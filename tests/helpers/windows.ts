/** The most of `times` (epoch ms) in any half-open window [t, t + windowMs): what a rate limit counts. */
export function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let busiest = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    busiest = Math.max(busiest, i - j + 1);
  }
  return busiest;
}
