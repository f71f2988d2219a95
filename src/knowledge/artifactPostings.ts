/**
 * The postings of a loaded artifact, filled block by block (see `artifactLexical.ts`): a block of consecutive terms
 * is read when a search first needs one of its terms, its part of the posting offsets first (a blocked table,
 * checked to rise within the postings), then each lazy array's bytes, each checked against the block's checksum,
 * and its document ids checked to name existing entries, before any search reads them.
 */
import type { BlockedArray } from "./artifactBlocks.js";
import type { LazySection } from "./artifactLexical.js";
import { checksum32 } from "./checksum.js";
import type { PostingLoader } from "./indexParts.js";

/** One lazy array of a posting list: where its bytes come from, its block checksums, and the array it fills. */
export type LazyArray = {
  name: string;
  section: LazySection;
  checksums: Uint32Array;
  bytes: Uint8Array;
  per: number;
};

/**
 * One posting list read on demand: its offsets (a blocked table: the part a block of postings needs is read with
 * it) and blocks (checked at load), and which blocks are filled.
 */
export type LazyList = {
  offsets: Int32Array;
  offsetBlocks: BlockedArray<Int32Array>;
  bounds: Int32Array;
  filled: Uint8Array;
  docs: Int32Array;
  arrays: LazyArray[];
};

/** Fills the postings of a loaded index block by block (see the module comment). */
export class LazyPostings implements PostingLoader {
  constructor(
    private readonly lists: LazyList[],
    private readonly documentCount: number,
    private readonly corrupt: (message: string) => Error,
  ) {}

  ensureTerms(termIds: readonly number[]): void {
    for (const list of this.lists) {
      const blockCount = list.bounds.length - 1;
      for (const term of termIds) {
        // The last block whose first term is at most `term`.
        let low = 0;
        let high = blockCount - 1;
        while (low < high) {
          const middle = (low + high + 1) >>> 1;
          if (list.bounds[middle]! <= term) low = middle;
          else high = middle - 1;
        }
        if (blockCount > 0 && list.filled[low] === 0) this.fill(list, low);
      }
    }
  }

  ensureAll(): void {
    for (const list of this.lists) {
      list.offsetBlocks.ensureAll();
      for (let block = 0; block + 1 < list.bounds.length; block++)
        if (list.filled[block] === 0) this.fill(list, block);
    }
  }

  private fill(list: LazyList, block: number): void {
    const offsets = list.offsets;
    const firstTerm = list.bounds[block]!;
    const endTerm = list.bounds[block + 1]!;
    list.offsetBlocks.ensure(firstTerm, endTerm + 1);
    const start = offsets[firstTerm]!;
    const end = offsets[endTerm]!;
    // The block's terms' offsets rise within the postings (checked here rather than for every term at load).
    if (!(start >= 0 && end <= list.docs.length))
      throw this.corrupt("posting offsets are outside the postings");
    for (let term = firstTerm; term < endTerm; term++)
      if (!(offsets[term + 1]! >= offsets[term]!)) throw this.corrupt("posting offsets are not ascending");
    for (const array of list.arrays) {
      const target = array.bytes.subarray(start * array.per, end * array.per);
      array.section.readInto(start * array.per, target);
      if (checksum32(target) !== array.checksums[block])
        throw this.corrupt(`block ${block} of section ${array.name} does not match its checksum`);
    }
    const docs = list.docs;
    const documentCount = this.documentCount;
    for (let position = start; position < end; position++)
      if (docs[position]! >>> 0 >= documentCount)
        throw this.corrupt("a posting refers to a missing document");
    list.filled[block] = 1;
  }
}
