/**
 * The postings of a loaded artifact, filled block by block (see `artifactLexical.ts`): a block of consecutive terms
 * is read when a search first needs one of its terms, its part of the posting offsets first (a blocked table,
 * checked to rise within the postings), then each lazy array's bytes, each checked against the block's checksum,
 * and its document ids checked to name existing entries, before any search reads them.
 */
import type { BlockedArray } from "./artifactBlocks.js";
import type { LazySection } from "./artifactLexical.js";
import { allBelowWebAssembly, checksum32 } from "./checksum.js";
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
    if (!ascending(offsets, firstTerm, endTerm + 1)) throw this.corrupt("posting offsets are not ascending");
    for (const array of list.arrays) {
      const target = array.bytes.subarray(start * array.per, end * array.per);
      array.section.readInto(start * array.per, target);
      if (checksum32(target) !== array.checksums[block])
        throw this.corrupt(`block ${block} of section ${array.name} does not match its checksum`);
    }
    if (!allBelow(list.docs, start, end, this.documentCount))
      throw this.corrupt("a posting refers to a missing document");
    list.filled[block] = 1;
  }
}

// The checks' loops are functions of their own: a cold start's first turn runs them over tens of thousands of
// elements, which makes the function holding them hot, and V8 then compiles that function with everything it
// calls inlined (reading, checksumming) on a background thread: 50-250 ms of CPU under load at 10,000 entries,
// which the process also waits for when it exits. A small loop of its own compiles in a millisecond or two.

/** Whether `values[from..to)` never descends. */
export function ascending(values: Int32Array | Float64Array, from: number, to: number): boolean {
  for (let index = from + 1; index < to; index++) if (!(values[index]! >= values[index - 1]!)) return false;
  return true;
}

/** From this many values {@link allBelow} copies them into the WebAssembly kernel instead of running a loop. */
const WEBASSEMBLY_MIN_VALUES = 256;

/** Whether every value of `values[from..to)` is a valid index below `count` (unsigned comparison). */
export function allBelow(values: Int32Array, from: number, to: number, count: number): boolean {
  // Long ranges in the WebAssembly kernel (see `allBelowWebAssembly`): at a cold start this loop runs interpreted.
  if (to - from >= WEBASSEMBLY_MIN_VALUES) {
    const checked = allBelowWebAssembly(values, from, to, count);
    if (checked !== null) return checked;
  }
  for (let index = from; index < to; index++) if (values[index]! >>> 0 >= count) return false;
  return true;
}
