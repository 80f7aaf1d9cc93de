/**
 * A map bounded to `limit` keys, least recently set forgotten first: a container's memory of what
 * it saw last, so that no stream of new keys (a caller asking for one order after another) grows it
 * without end. Setting a key makes it the newest; reading one does not.
 */
export class LruMap<V> {
  readonly #entries = new Map<string, V>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#limit) {
      const [oldest] = this.#entries.keys();
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}
