/**
 * A bounded map that forgets its least recently used entries. Every bounded cache of the library uses it (index
 * snapshots, eligibility masks, the middleware's grounding memo, in-memory conversation sessions), so eviction has
 * one definition: a `Map` keeps insertion order, and re-inserting a key on use makes that order the recency order.
 */
export class LruCache<Key, Value> {
  private readonly entries = new Map<Key, Value>();

  /**
   * @param limit Entries kept; setting one more drops the least recently used first. 0 keeps nothing.
   * @param onEvict Called with each entry dropped to stay within `limit` (not for `delete` or `clear`).
   */
  constructor(
    readonly limit: number,
    private readonly onEvict?: (key: Key, value: Value) => void,
  ) {}

  /** The value of `key`, marking it as the most recently used. */
  get(key: Key): Value | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** The value of `key` without changing its recency. */
  peek(key: Key): Value | undefined {
    return this.entries.get(key);
  }

  /** Stores `value` as the most recently used entry, then drops the least recently used beyond the limit. */
  set(key: Key, value: Value): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.limit) {
      const oldest = this.entries.entries().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest[0]);
      this.onEvict?.(oldest[0], oldest[1]);
    }
  }

  /** Removes `key`; true when it was present. */
  delete(key: Key): boolean {
    return this.entries.delete(key);
  }

  /** Removes every entry. */
  clear(): void {
    this.entries.clear();
  }

  /** Entries held. */
  get size(): number {
    return this.entries.size;
  }

  /** Keys, least recently used first. */
  keys(): IterableIterator<Key> {
    return this.entries.keys();
  }
}
