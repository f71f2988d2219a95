/**
 * Frequent lists: the posting lists of a large generation that hold at least a set share of its entries (the
 * Zipf head of its vocabulary). A history-heavy turn at a million entries names a few dozen of them, and they
 * hold most of its postings (77% of the 21.7 M postings of the benchmark's slowest turn), yet their bounds are
 * small: MaxScore leaves only a few thousand documents that could still reach the top K once the other lists
 * are read. So a publication also writes, per entry, its postings in the frequent lists (`frequent` table: the
 * list's number and the posting's code, see `wireLists.ts`), and a turn may read only those lists' headers
 * (count, distinct values, bound), rank the other lists, and read the frequent postings of the remaining
 * candidates alone (`deferredLists.ts`), where it read every frequent posting before.
 *
 * A row's bytes: per frequent list holding the entry, in ascending list number, the number's gap from the
 * previous one (the first from -1: every gap at least 1) and the posting's code, both unsigned LEB128.
 */
import { seek } from "../knowledge/fieldScores.js";
import { BinaryArrayError } from "./binaryArrays.js";
import { writeVarint } from "./wireLists.js";

/** What a generation's statistics record of its frequent lists (absent: none written). */
export type FrequentStatistics = {
  /** Documents a list holds at least to be frequent. */
  minimumDocuments: number;
  /** Frequent lists written (numbered from 0). */
  lists: number;
  /** Frequent postings written (entries' rows hold one code each). */
  postings: number;
  /** Bytes of all rows. */
  bytes: number;
};

/** Entries from which a publication writes frequent lists by default (below, every turn reads every list whole). */
export const FREQUENT_FROM_ENTRIES = 262_144;
/** By default a list is frequent when it holds at least this share of the generation's entries. */
const FREQUENT_SHARE = 1 / 16;

/**
 * The documents a list must hold to be frequent in a generation of `entryCount` entries, or null when none is:
 * `option` (backend option `frequentListDocuments`) when given (0 or less: none), else a sixteenth of the
 * entries from {@link FREQUENT_FROM_ENTRIES} entries on.
 */
export function frequentMinimum(entryCount: number, option: number | undefined): number | null {
  if (option !== undefined) return option > 0 ? Math.ceil(option) : null;
  if (entryCount < FREQUENT_FROM_ENTRIES) return null;
  return Math.ceil(entryCount * FREQUENT_SHARE);
}

function varintBytes(value: number): number {
  let bytes = 1;
  for (let rest = value; rest > 0x7f; rest = Math.floor(rest / 128)) bytes++;
  return bytes;
}

/** Collects a publication's frequent lists (in list-number order) and turns them into the entries' rows. */
export class FrequentRows {
  private readonly docs: Int32Array[] = [];
  private readonly codes: Uint16Array[] = [];
  private postingCount = 0;

  constructor(private readonly entryCount: number) {}

  /** Frequent lists recorded so far. */
  get lists(): number {
    return this.docs.length;
  }

  /** Records a list (copies its documents and codes); returns its frequent-list number. */
  add(docs: Int32Array, codes: Uint16Array): number {
    if (docs.length !== codes.length) throw new RangeError("frequent list: docs and codes differ in length");
    this.docs.push(docs.slice());
    this.codes.push(codes.slice());
    this.postingCount += docs.length;
    return this.docs.length - 1;
  }

  /**
   * Every entry's row that is not empty, in ascending dense id (`bytes` a view, valid until the next row), after
   * which the recorded lists are released; and the statistics written.
   */
  *rows(minimumDocuments: number): Generator<{ doc: number; bytes: Uint8Array }, FrequentStatistics> {
    const entryCount = this.entryCount;
    const last = new Int32Array(entryCount).fill(-1);
    const sizes = new Int32Array(entryCount);
    for (let list = 0; list < this.docs.length; list++) {
      const docs = this.docs[list]!;
      const codes = this.codes[list]!;
      for (let position = 0; position < docs.length; position++) {
        const doc = docs[position]!;
        sizes[doc]! += varintBytes(list - last[doc]!) + varintBytes(codes[position]!);
        last[doc] = list;
      }
    }
    // Rows are written a block of entries at a time, so the bytes held stay small whatever the generation's size.
    const block = 1 << 15;
    const cursors = new Float64Array(block);
    let bytesWritten = 0;
    for (let from = 0; from < entryCount; from += block) {
      const to = Math.min(entryCount, from + block);
      let total = 0;
      for (let doc = from; doc < to; doc++) {
        cursors[doc - from] = total;
        total += sizes[doc]!;
      }
      const bytes = new Uint8Array(total);
      last.fill(-1, from, to);
      for (let list = 0; list < this.docs.length; list++) {
        const docs = this.docs[list]!;
        const codes = this.codes[list]!;
        let position = seek(docs, 0, docs.length, from);
        for (; position < docs.length; position++) {
          const doc = docs[position]!;
          if (doc >= to) break;
          let offset = cursors[doc - from]!;
          offset = writeVarint(bytes, offset, list - last[doc]!);
          cursors[doc - from] = writeVarint(bytes, offset, codes[position]!);
          last[doc] = list;
        }
      }
      let start = 0;
      for (let doc = from; doc < to; doc++) {
        const size = sizes[doc]!;
        if (size > 0) yield { doc, bytes: bytes.subarray(start, start + size) };
        start += size;
      }
      bytesWritten += total;
    }
    const statistics: FrequentStatistics = {
      minimumDocuments,
      lists: this.docs.length,
      postings: this.postingCount,
      bytes: bytesWritten,
    };
    this.docs.length = 0;
    this.codes.length = 0;
    return statistics;
  }
}

/**
 * Reads one entry's row: for each of `wanted` (frequent-list numbers, ascending) that the row holds, calls
 * `found(index in wanted, code)`. Checked: malformed bytes raise a `BinaryArrayError`.
 */
export function readFrequentRow(
  bytes: Uint8Array,
  wanted: Int32Array,
  found: (index: number, code: number) => void,
): void {
  let offset = 0;
  let list = -1;
  let next = 0;
  const length = bytes.length;
  while (offset < length) {
    let gap = 0;
    let scale = 1;
    for (;;) {
      if (offset >= length || scale > 0x1000_0000) throw new BinaryArrayError("frequent row: truncated");
      const byte = bytes[offset++]!;
      gap += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
      scale *= 128;
    }
    let code = 0;
    scale = 1;
    for (;;) {
      if (offset >= length || scale > 0x4000) throw new BinaryArrayError("frequent row: truncated");
      const byte = bytes[offset++]!;
      code += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
      scale *= 128;
    }
    if (gap === 0) throw new BinaryArrayError("frequent row: list numbers are not ascending");
    list += gap;
    while (next < wanted.length && wanted[next]! < list) next++;
    if (next < wanted.length && wanted[next] === list) found(next, code);
  }
}
