import { describe, expect, it } from 'vitest';
import { idleWork, type Permit, SharedLimiter } from '../../lib/budget/limiter.ts';
import { RateLimitedError } from '../../lib/envelope/errors.ts';
import { freshStateTable } from '../helpers/state-table.ts';

/**
 * The settle job's calls take PayHere's budget as idle work (lib/budget/limiter.ts): only what live
 * calls leave. A token request one of them makes is not idle work: its container holds the
 * deployment's token lease, and every live call of every container waits for the token it brings.
 */
describe('a token request made by idle work', () => {
  it('takes its slot as a token request, while live reads hold every slot they may take', async () => {
    // Prepare: live reads hold the shared part of the budget (all but the reserved 5 of 20).
    const { table } = await freshStateTable();
    const limiter = new SharedLimiter({ table, limit: 20, windowMs: 10_000 });
    const held: Permit[] = [];
    for (let read = 0; read < 15; read++) held.push(await limiter.acquire('read', 1_000));
    const until = Date.now() + 300;

    // Act: the job's work asks for a token's slot, and for one of its own calls.
    const token = await idleWork
      .run({ until, refused: false }, () => limiter.acquire('token', 5_000))
      .catch((error: unknown) => error);
    const own = await idleWork
      .run({ until, refused: false }, () => limiter.acquire('money', 5_000))
      .catch((error: unknown) => error);

    // Assess: the token has its slot at once; the job's own call leaves the reserve to live calls.
    expect(token).not.toBeInstanceOf(Error);
    expect(own).toBeInstanceOf(RateLimitedError);
    await Promise.all([...held, token as Permit].map((permit) => permit.release()));
  });
});
