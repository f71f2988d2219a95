/**
 * Entry id → dense id without a hash map: a binary search over the ids in code-unit order. A full build numbers its
 * entries in that order (dense id = rank), and an artifact stores each dense id's rank, so neither needs a `Map`
 * that hashes every id: at a million entries such a map costs about 30 MB of heap and a million insertions, with
 * each growth of its table a large allocation the garbage collector must walk.
 */

import type { EntryIds } from "./denseIds.js";
import { DerivedReadOnlyMap } from "./derivedMaps.js";

/**
 * Ranks per checked block of an artifact's lookup: its order is checked a block at a time, when a lookup first
 * searches the block, so a cold start's few lookups compare a few blocks of ids instead of all of them.
 */
const RANK_BLOCK = 64;

/**
 * Entry id → dense id, read-only, by binary search over `ids` in the order `order` gives (`order[rank]` is the dense
 * id of the rank-th id in code-unit order; null when dense ids are ranks, as in a full build).
 */
export class RankedIdMap extends DerivedReadOnlyMap<number> {
  /**
   * For a lookup whose order is checked as it is used ({@link RankedIdMap.from}): per block of {@link RANK_BLOCK}
   * ranks, whether its ids were checked to ascend (up to the next block's first id); null once known to ascend.
   */
  private checkedBlocks: Uint8Array | null = null;
  /** Whether the first ids of the blocks were checked to ascend (what picks a lookup's block). */
  private firstsChecked = false;
  private corrupt: (message: string) => Error = (message) => new RangeError(message);

  private constructor(
    private readonly ids: EntryIds,
    private readonly order: Int32Array | null,
  ) {
    super();
  }

  protected override get readOnlyMessage(): string {
    return "the id map of an index is read-only";
  }

  /**
   * The lookup of `ids` (by dense id) with their `ranks`, which must be a permutation (checked here, in one or two
   * linear passes). The ids must be strictly ascending in that order (which also proves them distinct): checked a
   * block of ranks at a time, by the first lookup that searches the block; a lookup that finds a block out of order
   * throws `corrupt(...)` (a RangeError by default) instead of answering.
   */
  static from(ids: EntryIds, ranks: Int32Array, corrupt?: (message: string) => Error): RankedIdMap {
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
    const map = new RankedIdMap(ids, order);
    map.checkedBlocks = new Uint8Array(Math.ceil(count / RANK_BLOCK));
    if (corrupt) map.corrupt = corrupt;
    return map;
  }

  /** The lookup of ids already known to be strictly ascending in code-unit order (dense id = rank). */
  static ofSorted(ids: EntryIds): RankedIdMap {
    return new RankedIdMap(ids, null);
  }

  /** The id of rank `rank`. */
  private idAt(rank: number): string {
    return this.ids.at(this.order ? this.order[rank]! : rank)!;
  }

  override get(id: string): number | undefined {
    if (typeof id !== "string") return undefined;
    const blocks = this.checkedBlocks;
    if (blocks === null) return this.search(id, 0, this.ids.length - 1);
    if (blocks.length === 0) return undefined;
    if (!this.firstsChecked) {
      for (let block = 1; block < blocks.length; block++)
        if (!(this.idAt((block - 1) * RANK_BLOCK) < this.idAt(block * RANK_BLOCK))) throw this.disorder();
      this.firstsChecked = true;
    }
    // The last block whose first id is at most `id`.
    let low = 0;
    let high = blocks.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (this.idAt(middle * RANK_BLOCK) <= id) low = middle;
      else high = middle - 1;
    }
    const first = low * RANK_BLOCK;
    const end = Math.min(this.ids.length, first + RANK_BLOCK);
    if (blocks[low] === 0) {
      // Ascending within the block, and below the next block's first id.
      for (let rank = first + 1; rank < Math.min(this.ids.length, end + 1); rank++)
        if (!(this.idAt(rank - 1) < this.idAt(rank))) throw this.disorder();
      blocks[low] = 1;
    }
    return this.search(id, first, end - 1);
  }

  private disorder(): Error {
    return this.corrupt("lexical.ids are not distinct and in the order of lexical.ranks");
  }

  /** Binary search for `id` among ranks `[low, high]` (known to ascend there). */
  private search(id: string, low: number, high: number): number | undefined {
    const ids = this.ids;
    const order = this.order;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const doc = order ? order[middle]! : middle;
      const found = ids.at(doc)!;
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
    for (let doc = 0; doc < this.ids.length; doc++) yield [this.ids.at(doc)!, doc];
  }
  override *keys(): MapIterator<string> {
    for (let doc = 0; doc < this.ids.length; doc++) yield this.ids.at(doc)!;
  }
  override *values(): MapIterator<number> {
    for (let doc = 0; doc < this.ids.length; doc++) yield doc;
  }
}
