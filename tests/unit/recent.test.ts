import { describe, expect, it } from 'vitest';
import { Recent } from '../../lib/memory/recent.ts';

describe('Recent', () => {
  it('keeps the keys set most recently, forgetting the oldest past its limit', () => {
    const recent = new Recent<number>(2);
    recent.set('a', 1);
    recent.set('b', 2);
    recent.set('c', 3);

    expect(recent.get('a')).toBeUndefined();
    expect(recent.get('b')).toBe(2);
    expect(recent.get('c')).toBe(3);
  });

  it('makes a key set again the newest, so that it outlives keys set before it', () => {
    const recent = new Recent<number>(2);
    recent.set('a', 1);
    recent.set('b', 2);
    recent.set('a', 10);
    recent.set('c', 3);

    expect(recent.get('a')).toBe(10);
    expect(recent.get('b')).toBeUndefined();
    expect(recent.get('c')).toBe(3);
  });
});
