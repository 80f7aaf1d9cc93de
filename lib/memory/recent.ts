/**
 * A container's memory of what it saw last, kept to `limit` keys so that no stream of new keys (a
 * caller asking for one order after another) grows it without end: setting a key makes it the
 * newest, and past the limit the oldest is forgotten.
 */
export class Recent<V> {
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
