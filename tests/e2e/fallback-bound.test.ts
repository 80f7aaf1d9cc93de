import { describe, expect, it } from 'vitest';
import { packageCopy } from '../helpers/package.ts';

/**
 * PayHere's limit holds whichever containers the state table fails only while the containers with
 * shares of their own are no more than GATEWAY_FALLBACK_CONTAINERS says (docs/budget.md "The
 * fallback"): the packaged template must bound them by the functions' reserved concurrency, or
 * give none a share (the default, which needs no bound).
 */
describe('the containers’ own shares in the packaged template', () => {
  it('are bounded by the reserved concurrency of the functions that have them, and by default no function has them', async () => {
    // Act: the deployed defaults.
    const template = await packageCopy({ GATEWAY_BASE_URL: 'https://www.payhere.lk' });

    // Assess
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(0);
    const withShares = functions.filter(
      (fn) => Number(fn.Properties.Environment?.Variables?.GATEWAY_FALLBACK_CONTAINERS ?? 0) > 0,
    );
    const counted = new Set(
      withShares.map((fn) => Number(fn.Properties.Environment.Variables.GATEWAY_FALLBACK_CONTAINERS)),
    );
    const reserved = withShares.map((fn) => fn.Properties.ReservedConcurrentExecutions as number | undefined);
    expect(counted.size).toBeLessThanOrEqual(1);
    expect(reserved.every((value) => typeof value === 'number')).toBe(true);
    expect(reserved.reduce<number>((sum, value) => sum + (value ?? 0), 0)).toBeLessThanOrEqual(
      [...counted][0] ?? 0,
    );
    expect(withShares).toEqual([]);
  }, 240_000);
});
