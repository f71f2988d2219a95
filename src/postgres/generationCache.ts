/**
 * What a reader keeps of one generation's entries between turns: entry ids by dense id (a turn names its top K and
 * phrase hits) and the selected entries with their relations (a turn reads its selection). A generation's rows
 * never change, so a kept value is always exact; a new generation has its own searcher and so its own caches.
 * Bounded by count, least recently used forgotten first.
 */

/** A least-recently-used map bounded by its number of keys. */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  /** @param limit Most keys held (at least 1). */
  constructor(private readonly limit: number) {}

  /** The value of `key`, marking it most recently used; undefined when not held. */
  get(key: K): V | undefined {
    const found = this.entries.get(key);
    if (found === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, found);
    return found;
  }

  /** Keeps `value` under `key`, then forgets the least recently used keys beyond the limit. */
  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value as K);
  }

  /** Keys held. */
  get size(): number {
    return this.entries.size;
  }
}

/** Entry ids kept per generation (about 100 bytes each). */
export const KEPT_IDS = 65_536;
/** Selected entries kept per generation (parsed entries: a few KB each). */
export const KEPT_ENTRIES = 4_096;
