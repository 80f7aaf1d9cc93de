import { describe, expect, it } from 'vitest';
import { LruMap } from '../../lib/memory/lru-map.ts';

describe('LruMap', () => {
  it('keeps the keys set most recently, forgetting the oldest past its limit', () => {
    const map = new LruMap<number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);

    expect(map.get('a')).toBeUndefined();
    expect(map.get('b')).toBe(2);
    expect(map.get('c')).toBe(3);
  });

  it('makes a key set again the newest, so that it outlives keys set before it', () => {
    const map = new LruMap<number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 10);
    map.set('c', 3);

    expect(map.get('a')).toBe(10);
    expect(map.get('b')).toBeUndefined();
    expect(map.get('c')).toBe(3);
  });
});
