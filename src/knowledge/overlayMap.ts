/**
 * A read-only map as a base map plus versioned changes, shared along a chain of derived snapshots: what a
 * snapshot's entry, phrase and relation maps become after an update (`snapshotChanges.ts`), so an update costs
 * work proportional to the keys it changes instead of a copy of the map.
 */

/** The value of a key removed by a change. */
export const REMOVED = Symbol("lexground.removed");

/**
 * One value of a changed key (or its removal) from a generation on; `previous` is the key's value before it (older
 * generations), so a key's versions are a list from the newest. Never modified once made: chains branching from
 * one overlay, and a compaction's pruned copy, share the versions they have in common.
 */
type Version<Value> = {
  readonly generation: number;
  readonly value: Value | typeof REMOVED;
  readonly previous: Version<Value> | null;
};

/** The changed keys of the overlays over one base map, each with its newest version, and the latest generation. */
type OverlayVersions<Key, Value> = { keys: Map<Key, Version<Value>>; latest: number };

/**
 * A read-only map: a base map plus the changes of one generation (a value, or removed) of a chain of overlays
 * that share their versions. Snapshots are immutable, so `set`, `delete` and `clear` throw. Iteration yields the
 * base's keys (with their changed values) then the added keys.
 */
export class OverlayMap<Key, Value> extends Map<Key, Value> {
  private readonly base: ReadonlyMap<Key, Value>;
  private readonly versions: OverlayVersions<Key, Value>;
  private readonly generation: number;
  private readonly count: number;

  private constructor(
    base: ReadonlyMap<Key, Value>,
    versions: OverlayVersions<Key, Value>,
    generation: number,
    count: number,
  ) {
    super();
    this.base = base;
    this.versions = versions;
    this.generation = generation;
    this.count = count;
  }

  /**
   * `map` with `changes` applied (a value, or {@link REMOVED}): a new overlay over `map`'s base (or over `map`
   * itself when it is a plain map). Work: proportional to the changes.
   */
  static changed<Key, Value>(
    map: ReadonlyMap<Key, Value>,
    changes: ReadonlyMap<Key, Value | typeof REMOVED>,
  ): OverlayMap<Key, Value> {
    let versions: OverlayVersions<Key, Value>;
    let base: ReadonlyMap<Key, Value>;
    if (map instanceof OverlayMap) {
      base = map.base as ReadonlyMap<Key, Value>;
      versions = map.versions as OverlayVersions<Key, Value>;
      // Not the latest of its chain: the chain branches here, so this branch gets its own copy.
      if (map.generation !== versions.latest) versions = map.copyOfVersions(false);
    } else {
      base = map;
      versions = { keys: new Map(), latest: 0 };
    }
    const generation = versions.latest + 1;
    versions.latest = generation;
    let count = map.size;
    for (const [key, value] of changes) {
      const before = map.has(key);
      const after = value !== REMOVED;
      if (before !== after) count += after ? 1 : -1;
      versions.keys.set(key, { generation, value, previous: versions.keys.get(key) ?? null });
    }
    return new OverlayMap(base, versions, generation, count);
  }

  /**
   * The same map with only the values it sees kept (what a compaction leaves: no older generations). It allocates a
   * version only for a key whose visible value has older ones behind it (the rest are shared), and iterates with
   * `forEach` (no entry arrays): a compaction prunes these maps on the host's main thread.
   */
  pruned(): OverlayMap<Key, Value> {
    return new OverlayMap(this.base, this.copyOfVersions(true), this.generation, this.count);
  }

  /**
   * This overlay's versions alone, its generation as the latest, for a branch or (`latestOnly`) a compaction:
   * each key keeps the version this generation sees, and, when `latestOnly`, nothing older.
   */
  private copyOfVersions(latestOnly: boolean): OverlayVersions<Key, Value> {
    const keys = new Map<Key, Version<Value>>();
    const generation = this.generation;
    this.versions.keys.forEach((newest, key) => {
      let seen: Version<Value> | null = newest;
      while (seen !== null && seen.generation > generation) seen = seen.previous;
      if (seen === null) return;
      if (latestOnly && seen.previous !== null)
        seen = { generation: seen.generation, value: seen.value, previous: null };
      keys.set(key, seen);
    });
    return { keys, latest: generation };
  }

  /** The changed value of `key` this generation sees: a value, REMOVED, or undefined when unchanged. */
  private changedValue(key: Key): Value | typeof REMOVED | undefined {
    let version: Version<Value> | null = this.versions.keys.get(key) ?? null;
    while (version !== null && version.generation > this.generation) version = version.previous;
    return version === null ? undefined : version.value;
  }

  override get size(): number {
    return this.count;
  }
  override get(key: Key): Value | undefined {
    const changed = this.changedValue(key);
    if (changed !== undefined) return changed === REMOVED ? undefined : changed;
    return this.base.get(key);
  }
  override has(key: Key): boolean {
    const changed = this.changedValue(key);
    if (changed !== undefined) return changed !== REMOVED;
    return this.base.has(key);
  }
  override *entries(): MapIterator<[Key, Value]> {
    for (const entry of this.base) {
      const changed = this.changedValue(entry[0]);
      if (changed === undefined) yield entry;
      else if (changed !== REMOVED) yield [entry[0], changed];
    }
    for (const key of this.versions.keys.keys()) {
      if (this.base.has(key)) continue;
      const changed = this.changedValue(key);
      if (changed !== undefined && changed !== REMOVED) yield [key, changed];
    }
  }
  override *keys(): MapIterator<Key> {
    for (const [key] of this.entries()) yield key;
  }
  override *values(): MapIterator<Value> {
    for (const [, value] of this.entries()) yield value;
  }
  override [Symbol.iterator](): MapIterator<[Key, Value]> {
    return this.entries();
  }
  override forEach(
    callback: (value: Value, key: Key, map: Map<Key, Value>) => void,
    thisArg?: unknown,
  ): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }
  override set(): this {
    throw new TypeError("a knowledge index snapshot is immutable");
  }
  override delete(): boolean {
    throw new TypeError("a knowledge index snapshot is immutable");
  }
  override clear(): void {
    throw new TypeError("a knowledge index snapshot is immutable");
  }
}
