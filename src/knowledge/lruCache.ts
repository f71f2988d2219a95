/**
 * A bounded map that forgets its least recently used entries. Every bounded cache of the library uses it (index
 * snapshots, eligibility masks, passage indexes, the middleware's grounding memo, in-memory conversation
 * sessions), so eviction has one definition: a `Map` keeps insertion order, and re-inserting a key on use makes
 * that order the recency order. It bounds the count of entries, or (given a `weigh` function) the sum of their
 * weights, such as characters or bytes.
 */
export class LruCache<Key, Value> {
  private readonly entries = new Map<Key, Value>();
  /** Each entry's weight, when the cache is bounded by weight; null when it is bounded by count. */
  private readonly weights: Map<Key, number> | null;
  /** The sum of {@link weights}. */
  private heldWeight = 0;

  /**
   * @param limit Entries kept (with `weigh`: their total weight); setting one more drops the least recently used
   *   first. 0 keeps nothing.
   * @param onEvict Called with each entry dropped to stay within `limit` (not for `delete` or `clear`).
   * @param weigh An entry's weight, read once when it is set: `limit` then bounds the sum of the weights, and an
   *   entry heavier than `limit` is not kept.
   */
  constructor(
    readonly limit: number,
    private readonly onEvict?: (key: Key, value: Value) => void,
    private readonly weigh?: (value: Value) => number,
  ) {
    this.weights = weigh ? new Map() : null;
  }

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
    this.delete(key);
    this.entries.set(key, value);
    if (this.weights) {
      const weight = this.weigh!(value);
      this.weights.set(key, weight);
      this.heldWeight += weight;
    }
    while (this.weight > this.limit) {
      const oldest = this.entries.entries().next().value;
      if (oldest === undefined) break;
      this.delete(oldest[0]);
      this.onEvict?.(oldest[0], oldest[1]);
    }
  }

  /** Removes `key`; true when it was present. */
  delete(key: Key): boolean {
    if (this.weights) {
      const weight = this.weights.get(key);
      if (weight !== undefined) {
        this.heldWeight -= weight;
        this.weights.delete(key);
      }
    }
    return this.entries.delete(key);
  }

  /** Removes every entry. */
  clear(): void {
    this.entries.clear();
    this.weights?.clear();
    this.heldWeight = 0;
  }

  /** Entries held. */
  get size(): number {
    return this.entries.size;
  }

  /** What `limit` bounds: the total weight held (without `weigh`, the count of entries). */
  get weight(): number {
    return this.weights ? this.heldWeight : this.entries.size;
  }

  /** Keys, least recently used first. */
  keys(): IterableIterator<Key> {
    return this.entries.keys();
  }
}
