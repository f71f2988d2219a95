/**
 * A read-only map as a base map plus versioned changes, shared along a chain of derived snapshots: what a
 * snapshot's entry, phrase and relation maps become after an update (`snapshotChanges.ts`), so an update costs
 * work proportional to the keys it changes instead of a copy of the map.
 */

/** The value of a key removed by a change. */
export const REMOVED = Symbol("lexground.removed");

type Version<Value> = { generation: number; value: Value | typeof REMOVED };

/** The changed keys of the overlays over one base map, each with its values by generation (oldest first). */
type OverlayVersions<Key, Value> = { keys: Map<Key, Version<Value>[]>; latest: number };

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
      const list = versions.keys.get(key);
      if (list) list.push({ generation, value });
      else versions.keys.set(key, [{ generation, value }]);
    }
    return new OverlayMap(base, versions, generation, count);
  }

  /** The same map with only the values it sees kept (what a compaction leaves: no older generations). */
  pruned(): OverlayMap<Key, Value> {
    return new OverlayMap(this.base, this.copyOfVersions(true), 1, this.count);
  }

  /** This overlay's versions alone (as generation 1 when `latestOnly`), for a branch or a compaction. */
  private copyOfVersions(latestOnly: boolean): OverlayVersions<Key, Value> {
    const keys = new Map<Key, Version<Value>[]>();
    for (const [key, list] of this.versions.keys) {
      const seen = list.filter((version) => version.generation <= this.generation);
      if (seen.length === 0) continue;
      keys.set(key, latestOnly ? [{ generation: 1, value: seen[seen.length - 1]!.value }] : seen);
    }
    return { keys, latest: latestOnly ? 1 : this.generation };
  }

  /** The changed value of `key` this generation sees: a value, REMOVED, or undefined when unchanged. */
  private changedValue(key: Key): Value | typeof REMOVED | undefined {
    const list = this.versions.keys.get(key);
    if (!list) return undefined;
    for (let index = list.length - 1; index >= 0; index--)
      if (list[index]!.generation <= this.generation) return list[index]!.value;
    return undefined;
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
