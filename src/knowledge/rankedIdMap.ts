/**
 * Entry id → dense id without a hash map: a binary search over the ids in code-unit order. A full build numbers its
 * entries in that order (dense id = rank), and an artifact stores each dense id's rank, so neither needs a `Map`
 * that hashes every id: at a million entries such a map costs about 30 MB of heap and a million insertions, with
 * each growth of its table a large allocation the garbage collector must walk.
 */

import { DerivedReadOnlyMap } from "./derivedMaps.js";

/**
 * Entry id → dense id, read-only, by binary search over `ids` in the order `order` gives (`order[rank]` is the dense
 * id of the rank-th id in code-unit order; null when dense ids are ranks, as in a full build).
 */
export class RankedIdMap extends DerivedReadOnlyMap<number> {
  private constructor(
    private readonly ids: readonly string[],
    private readonly order: Int32Array | null,
  ) {
    super();
  }

  protected override get readOnlyMessage(): string {
    return "the id map of an index is read-only";
  }

  /**
   * The lookup of `ids` (by dense id) with their `ranks`: built in two linear passes (the ranks inverted, then the
   * ids checked to be strictly ascending in that order, which also proves them distinct). Throws a RangeError when
   * they disagree.
   */
  static from(ids: readonly string[], ranks: Int32Array): RankedIdMap {
    const count = ids.length;
    if (ranks.length !== count) throw new RangeError("lexical.ranks does not match the entry count");
    let identity = true;
    for (let doc = 0; doc < count; doc++)
      if (ranks[doc] !== doc) {
        identity = false;
        break;
      }
    let order: Int32Array | null = null;
    if (!identity) {
      order = new Int32Array(count).fill(-1);
      for (let doc = 0; doc < count; doc++) {
        const rank = ranks[doc]!;
        if (rank >>> 0 >= count || order[rank] !== -1)
          throw new RangeError("lexical.ranks is not a permutation");
        order[rank] = doc;
      }
    }
    for (let rank = 1; rank < count; rank++)
      if (!(ids[order ? order[rank - 1]! : rank - 1]! < ids[order ? order[rank]! : rank]!))
        throw new RangeError("lexical.ids are not distinct and in the order of lexical.ranks");
    return new RankedIdMap(ids, order);
  }

  /** The lookup of ids already known to be strictly ascending in code-unit order (dense id = rank). */
  static ofSorted(ids: readonly string[]): RankedIdMap {
    return new RankedIdMap(ids, null);
  }

  override get(id: string): number | undefined {
    if (typeof id !== "string") return undefined;
    const ids = this.ids;
    const order = this.order;
    let low = 0;
    let high = ids.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const doc = order ? order[middle]! : middle;
      const found = ids[doc]!;
      if (found === id) return doc;
      if (found < id) low = middle + 1;
      else high = middle - 1;
    }
    return undefined;
  }
  override has(id: string): boolean {
    return this.get(id) !== undefined;
  }
  override get size(): number {
    return this.ids.length;
  }
  override *entries(): MapIterator<[string, number]> {
    for (let doc = 0; doc < this.ids.length; doc++) yield [this.ids[doc]!, doc];
  }
  override *keys(): MapIterator<string> {
    yield* this.ids;
  }
  override *values(): MapIterator<number> {
    for (let doc = 0; doc < this.ids.length; doc++) yield doc;
  }
}
