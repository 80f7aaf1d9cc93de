import { describe, expect, it } from 'vitest';
import { type FairnessFigures, runFairness, VECTORS } from '../../bench/fairness.ts';

/**
 * Issue "No one caller, and no stranger, can take the service from everyone else", through
 * `npm start`'s stack (serverless-offline, several function workers) against the sandbox with
 * PayHere's own limit: one customer hammers every vector for 30 s while another charges its own
 * priced order every second (bench/fairness.ts).
 */
const DURATION_MS = 30_000;

describe('one customer hammering every vector while another charges every second', () => {
  let figures: FairnessFigures;

  it('answers every one of the second customer’s charges 200 within its deadline', async () => {
    figures = await runFairness({ env: process.env as Record<string, string>, durationMs: DURATION_MS });

    expect(figures.victim.statuses).toEqual({ 200: DURATION_MS / 1000 });
    expect(figures.victim.slowestMs).toBeLessThan(25_000);
  }, 180_000);

  it('keeps PayHere’s arrivals within 20 per 10 s', () => {
    expect(figures.arrivals.busiestWindow).toBeLessThanOrEqual(20);
  });

  it('refuses the first customer 429 caller_rate_limited, and each vector costs PayHere next to nothing', () => {
    const attacker = figures.attacker;
    const charging = attacker['re-charge its failed order with a declining card, fresh keys']!;
    const seconds = figures.durationMs / 1000;

    // Card testing: three declines, then the order refuses.
    expect(charging['402']).toBe(3);
    expect(charging['429']).toBeGreaterThan(10);
    // Cancels of a cancelled subscription: 409 from the ledger; the unknown key: its stored 202.
    expect(Object.keys(attacker['cancel its cancelled subscription, no key']!)).toEqual(['409']);
    expect(Object.keys(attacker['cancel it, a fresh key each time']!)).toEqual(['409']);
    expect(Object.keys(attacker['repeat a key whose outcome is unknown']!)).toEqual(['202']);
    expect(Object.keys(attacker['view its checkout whose report PayHere refutes']!)).toEqual(['200']);
    expect(Object.keys(attacker['replay one signed notification (no token)']!)).toEqual(['200']);
    expect(Object.keys(attacker['anonymous junk to /gateway/notify']!)).toEqual(['400']);
    expect(Object.keys(attacker['anonymous junk to the charge route']!)).toEqual(['401']);
    // What reached PayHere besides the victim's charges: the three declines, the view's one search
    // per 10 s, the unknown key's one per 30 s, and a token; no cancel, no notification's read.
    const byEndpoint = figures.arrivals.byEndpoint;
    expect(byEndpoint.cancel ?? 0).toBe(0);
    expect(byEndpoint.charge).toBe(figures.arrivals.victimCharges + 3);
    expect(byEndpoint.search ?? 0).toBeLessThanOrEqual(
      Math.ceil(seconds / 10) + 1 + Math.ceil(seconds / 30) + 1,
    );
    for (const vector of VECTORS) expect(attacker[vector]).toBeDefined();
  });
});
