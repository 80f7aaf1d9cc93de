import { describe, expect, it } from 'vitest';
import {
  FIRST_ANSWER_BUDGET,
  type FirstAnswerPair,
  type FirstAnswerSample,
  firstAnswerSection,
  type MeasuredRequest,
  pairRatios,
} from '../../bench/first-answer.ts';
import { DEFAULT_MODEL } from '../../bench/network.ts';

function request(
  ms: number,
  standIn = { connections: 0, failedCalls: 0 },
  statusCode = 200,
): MeasuredRequest {
  return {
    ms,
    cpuMs: 0,
    statusCode,
    sent: { payhere: 1, tokens: 0, aws: {}, timeline: { dynamodb: [], payhere: [[5, ms - 1]] } },
    standIn,
  };
}

function sample(
  importMs: number,
  firstMs: number,
  options: Partial<FirstAnswerSample> = {},
): FirstAnswerSample {
  return {
    importMs,
    first: request(firstMs, { connections: 1, failedCalls: 0 }),
    misses: [request(106), request(108)],
    shared: [request(8), request(10)],
    afterFreeze: request(120, { connections: 1, failedCalls: 0 }),
    ...options,
  };
}

/** The naive intermediary: a token and a search for every request. */
const NAIVE = sample(150, 300, {
  misses: [request(210), request(212)],
  shared: [request(208), request(210)],
});

/** The pairs, and the stand-ins' round trips at the model's nominal figures. */
const measured = (judged: FirstAnswerPair[]) => ({
  pairs: judged,
  roundTrips: { dynamodbMs: 5, payhereMs: 100 },
});

/** `n` pairs of the service's `service(i)` and the naive intermediary's `naive`. */
function pairs(n: number, service: (i: number) => FirstAnswerSample, naive = NAIVE): FirstAnswerPair[] {
  return Array.from({ length: n }, (_, i) => ({ service: service(i), naive, naiveFirst: i % 2 === 1 }));
}

describe("the first answer's judgement (bench/first-answer.ts)", () => {
  it('takes the median and quartiles of the per-pair ratios, not a ratio of medians', () => {
    // Prepare: the naive's import 100 ms in every pair; the service's 10, 20, ... 90 ms.
    const judged = pairs(9, (i) => sample(10 * (i + 1), 100), sample(100, 300));

    // Act
    const ratio = pairRatios(judged, 'importMs');

    // Assess
    expect(ratio).toEqual({ median: 0.5, p25: 0.3, p75: 0.7, pairs: 9 });
  });

  it('judges the ratio of each pair: a slow naive process in one pair does not move the others', () => {
    // Prepare: each pair's processes slowed alike (a loaded machine), the ratio the same.
    const judged = Array.from({ length: 15 }, (_, i) => ({
      service: sample(40 * (1 + i), 100 * (1 + i)),
      naive: sample(150 * (1 + i), 300 * (1 + i)),
      naiveFirst: i % 2 === 1,
    }));

    // Act
    const ratio = pairRatios(judged, 'importAndFirstMs');

    // Assess
    expect(ratio.p25).toBeCloseTo(140 / 450);
    expect(ratio.p75).toBeCloseTo(140 / 450);
  });

  it('meets every budget with figures inside them', () => {
    expect(
      firstAnswerSection(measured(pairs(FIRST_ANSWER_BUDGET.pairs, () => sample(50, 150)))).failures,
    ).toEqual([]);
  });

  it.each([
    ['too few pairs', pairs(14, () => sample(50, 150)), /14 pairs, too few/],
    ['import and first request', pairs(15, () => sample(100, 150)), /import and first request at 0.56/],
    [
      'a warm request over its round trips',
      pairs(15, () => sample(50, 150, { misses: [request(112), request(112)] })),
      /took 112 ms \(budget 110 ms\)/,
    ],
    [
      'a second handshake after the freeze',
      pairs(15, (i) =>
        sample(50, 150, i === 3 ? { afterFreeze: request(120, { connections: 2, failedCalls: 0 }) } : {}),
      ),
      /opened 2 connections/,
    ],
    [
      'a request lost on a dropped connection',
      pairs(15, (i) =>
        sample(50, 150, i === 7 ? { afterFreeze: request(120, { connections: 1, failedCalls: 1 }) } : {}),
      ),
      /sent 1 requests on a dropped connection/,
    ],
  ])('misses a budget: %s', (_, judged, failure) => {
    expect(firstAnswerSection(measured(judged), DEFAULT_MODEL).failures).toEqual([
      expect.stringMatching(failure),
    ]);
  });

  it('holds a warm request to the round trips measured here, not the nominal ones', () => {
    // Prepare: the stand-ins slower than modelled (their own work), the service as slow plus 4 ms.
    const judged = pairs(15, () => sample(50, 150, { misses: [request(116), request(116)] }));

    // Act
    const within = firstAnswerSection({ pairs: judged, roundTrips: { dynamodbMs: 7, payhereMs: 105 } });
    const nominal = firstAnswerSection(measured(judged));

    // Assess
    expect(within.failures).toEqual([]);
    expect(nominal.failures).toEqual([expect.stringMatching(/took 116 ms \(budget 110 ms\)/)]);
  });

  it('prints the model it ran', () => {
    const { lines } = firstAnswerSection(measured(pairs(15, () => sample(50, 150))), {
      ...DEFAULT_MODEL,
      payhereRttMs: 40,
    });
    expect(lines.join('\n')).toContain('PayHere over TLS, 40 ms a round trip');
  });

  it('leaves the pairs whose naive process failed after the freeze out of that ratio, and says so', () => {
    // Prepare
    const failing = sample(150, 300, {
      ...NAIVE,
      afterFreeze: request(6, { connections: 0, failedCalls: 1 }, 502),
    });
    const judged = pairs(15, () => sample(50, 150), failing);

    // Act
    const { lines } = firstAnswerSection(measured(judged));

    // Assess
    expect(pairRatios(judged, 'afterFreezeMs').pairs).toBe(0);
    expect(lines.join('\n')).toContain('failed in 15 of 15');
  });
});
