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
 * Blocks per super-block: the blocks' first ids are checked a super-block at a time too, so a first lookup compares
 * the super-blocks' first ids, one super-block's block firsts and one block, not every block's first id (1,563 at
 * 100,000 entries, each an id an artifact decodes when first read).
 */
const SUPER_BLOCKS = 64;
const SUPER_RANKS = RANK_BLOCK * SUPER_BLOCKS;

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
  /** Per super-block: whether its blocks' first ids were checked to ascend (up to the next super-block's first id). */
  private checkedSupers: Uint8Array | null = null;
  /** Whether the first ids of the super-blocks were checked to ascend (what picks a lookup's super-block). */
  private firstsChecked = false;
  private corrupt: (message: string) => Error = (message) => new RangeError(message);
  /**
   * The id of each block's first rank, when the artifact stores them apart (format 6: `lexical.idFirsts`), so that
   * a lookup picks its block without decoding ids spread over the whole list (an artifact reads its ids a block at
   * a time); each is checked against the list when its block is.
   */
  private firsts: readonly string[] | null = null;

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
  static from(
    ids: EntryIds,
    ranks: Int32Array,
    corrupt?: (message: string) => Error,
    firsts?: readonly string[],
  ): RankedIdMap {
    const count = ids.length;
    if (ranks.length !== count) throw new RangeError("lexical.ranks does not match the entry count");
    if (firsts && firsts.length !== Math.ceil(count / RANK_BLOCK))
      throw new RangeError("lexical.idFirsts does not hold one id per block of ranks");
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
    map.checkedSupers = new Uint8Array(Math.ceil(count / SUPER_RANKS));
    if (corrupt) map.corrupt = corrupt;
    if (firsts) map.firsts = firsts;
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

  /** The id of block `block`'s first rank. */
  private blockFirst(block: number): string {
    return this.firsts ? this.firsts[block]! : this.idAt(block * RANK_BLOCK);
  }

  override get(id: string): number | undefined {
    if (typeof id !== "string") return undefined;
    const blocks = this.checkedBlocks;
    if (blocks === null) return this.search(id, 0, this.ids.length - 1);
    if (blocks.length === 0) return undefined;
    // An id the list already decoded (read by dense id earlier in the turn) is where it was read.
    const decoded = this.ids.decodedDenseId?.(id);
    if (decoded !== undefined) return decoded;
    const supers = this.checkedSupers!;
    if (!this.firstsChecked) {
      for (let block = 1; block < supers.length; block++)
        if (!(this.blockFirst((block - 1) * SUPER_BLOCKS) < this.blockFirst(block * SUPER_BLOCKS)))
          throw this.disorder();
      this.firstsChecked = true;
    }
    // The last super-block whose first id is at most `id`, then its last block whose first id is.
    const superBlock = this.lastFirstAtMost(id, 0, supers.length - 1, SUPER_BLOCKS);
    const firstBlock = superBlock * SUPER_BLOCKS;
    const endBlock = Math.min(blocks.length, firstBlock + SUPER_BLOCKS);
    if (supers[superBlock] === 0) {
      // The blocks' first ids ascend within the super-block, and stay below the next super-block's first id.
      for (let block = firstBlock + 1; block < Math.min(blocks.length, endBlock + 1); block++)
        if (!(this.blockFirst(block - 1) < this.blockFirst(block))) throw this.disorder();
      supers[superBlock] = 1;
    }
    const block = this.lastFirstAtMost(id, firstBlock, endBlock - 1, 1);
    const first = block * RANK_BLOCK;
    const end = Math.min(this.ids.length, first + RANK_BLOCK);
    if (blocks[block] === 0) {
      if (this.firsts) {
        // The block's ids are the list's: its first is the stored one, they ascend, and the last is below the next
        // block's stored first (not decoded: it lies in another block of the list).
        if (this.idAt(first) !== this.firsts[block]) throw this.disorder();
        for (let rank = first + 1; rank < end; rank++)
          if (!(this.idAt(rank - 1) < this.idAt(rank))) throw this.disorder();
        if (end < this.ids.length && !(this.idAt(end - 1) < this.firsts[block + 1]!)) throw this.disorder();
      } else {
        // Ascending within the block, and below the next block's first id.
        for (let rank = first + 1; rank < Math.min(this.ids.length, end + 1); rank++)
          if (!(this.idAt(rank - 1) < this.idAt(rank))) throw this.disorder();
      }
      blocks[block] = 1;
    }
    const found = this.search(id, first, end - 1);
    // Not in its block: unless the next block's stored first is the list's (a stored first that is too large would
    // have sent the lookup to this block instead of that one), the answer could be wrong.
    if (
      found === undefined &&
      this.firsts &&
      end < this.ids.length &&
      this.idAt(end) !== this.firsts[block + 1]
    )
      throw this.disorder();
    return found;
  }

  /** The last of the groups `[low, high]` (of `blocks` blocks each, known to ascend) whose first id is at most `id`. */
  private lastFirstAtMost(id: string, low: number, high: number, blocks: number): number {
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (this.blockFirst(middle * blocks) <= id) low = middle;
      else high = middle - 1;
    }
    return low;
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
