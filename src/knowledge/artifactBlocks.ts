/**
 * Tables of an index artifact read a block of elements at a time (format 5): the term dictionary's hash table and
 * records, the phrase trie's edge table, the posting offsets and the phrase-key offsets. A turn reads a few slots
 * of each (the probes of its terms, the offsets of its terms, the keys its phrase walk compares), so reading and
 * checksumming them whole at load was most of a cold start's reading (5 of the 6.1 MB read at load at 10,000
 * entries, about half a gigabyte at a million).
 *
 * Each such table is a lazy section (its bytes are read on demand) with one checksum per block of
 * `blockElements` elements in an eager section `<name>.checksums`. The loaded table is a full-size typed array,
 * allocated zeroed (untouched pages cost no memory), and a block is read and checked against its checksum the
 * first time a reader asks for one of its elements ({@link BlockedArray.ensure}), before the reader looks at it;
 * a damaged block is a typed `corrupt` error of the reader (the turn that needs it), never zeros read as data.
 * Format-4 artifacts hold the same tables as eager sections (checked whole at load): {@link eagerBlockedArray}
 * gives them the same interface, with nothing left to read.
 */
import type { LazySection, WrittenSection } from "./artifactLexical.js";
import { checksum32 } from "./checksum.js";

/**
 * Elements per checked block of a blocked table, as the writer makes them (a power of two; 1 KiB of an
 * `Int32Array`; a reader takes the size an artifact's header declares). At 1,024 (4 KiB) each block a first turn
 * reads (a probe of the term dictionary, a term's posting offsets) touched two fresh pages of the zeroed table more
 * often than one: 10k, 256 against 1,024, ~50 page faults fewer, the eager checksums 4 bytes per 256 elements.
 */
export const TABLE_BLOCK_ELEMENTS = 256;

/** The typed arrays a blocked table can be. */
export type BlockedElements = Int32Array | Float64Array;

/**
 * A table whose elements may not all be read yet: `ensure(from, to)` reads (and checks) every block holding an
 * element in `[from, to)` that is not read yet; elements outside the table are ignored (its readers check their
 * indices against its length). `ensureAll` reads every block (before the table is walked whole or copied).
 */
export type BlockedArray<T extends BlockedElements> = {
  readonly array: T;
  ensure(from: number, to: number): void;
  ensureAll(): void;
};

/** The bytes of a typed array, in place. */
export function bytesOf(array: BlockedElements | Uint32Array | Uint8Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/** The lazy section `name` holding `array`, and its per-block checksums (`name.checksums`). */
export function blockedSections(
  name: string,
  array: BlockedElements,
  blockElements: number = TABLE_BLOCK_ELEMENTS,
): WrittenSection[] {
  const bytes = bytesOf(array);
  const blockBytes = blockElements * array.BYTES_PER_ELEMENT;
  const checksums = new Uint32Array(Math.ceil(array.length / blockElements));
  for (let block = 0; block < checksums.length; block++)
    checksums[block] = checksum32(bytes.subarray(block * blockBytes, (block + 1) * blockBytes));
  return [
    { name: `${name}.checksums`, bytes: bytesOf(checksums) },
    { name, bytes, lazy: true },
  ];
}

/** A table read whole at load (format 4, or a table small enough to be eager): nothing left to read. */
export function eagerBlockedArray<T extends BlockedElements>(array: T): BlockedArray<T> {
  return { array, ensure() {}, ensureAll() {} };
}

/**
 * A blocked table over a lazy section (see the module comment). `make` allocates the full-size array of `length`
 * elements; `corrupt` makes the error of a block that does not match its checksum.
 */
export function lazyBlockedArray<T extends BlockedElements>(
  name: string,
  section: LazySection,
  checksums: Uint32Array,
  blockElements: number,
  make: (length: number) => T,
  corrupt: (message: string) => Error,
): BlockedArray<T> {
  const elementBytes = make(0).BYTES_PER_ELEMENT;
  if (section.byteLength % elementBytes !== 0) throw corrupt(`section ${name} has a partial element`);
  const length = section.byteLength / elementBytes;
  if (checksums.length !== Math.ceil(length / blockElements))
    throw corrupt(`section ${name} does not match its block checksums`);
  const array = make(length);
  const bytes = bytesOf(array);
  const filled = new Uint8Array(checksums.length);
  const shift = Math.log2(blockElements);
  // Reads blocks `[first, end)` (none of them read yet) in one read, then checks each against its checksum: a posting
  // block's offsets span several blocks of a table (a 10k first turn's 25 posting blocks needed 68 of them), each
  // read apart a system call and a `fs.readSync` of its own.
  const fill = (first: number, end: number): void => {
    const start = first * blockElements * elementBytes;
    const target = bytes.subarray(start, Math.min(bytes.length, end * blockElements * elementBytes));
    section.readInto(start, target);
    for (let block = first; block < end; block++) {
      const from = (block - first) * blockElements * elementBytes;
      const part = target.subarray(from, from + blockElements * elementBytes);
      if (checksum32(part) !== checksums[block]) {
        // Zeros again (this block and the ones after it in this read, not checked), so that no later reader sees
        // the damaged bytes as data (it asks for the block again).
        target.subarray(from).fill(0);
        throw corrupt(`block ${block} of section ${name} does not match its checksum`);
      }
      filled[block] = 1;
    }
  };
  /** Reads every block of `[first, last]` not read yet, each run of consecutive ones in one read. */
  const fillRange = (first: number, last: number): void => {
    for (let block = first; block <= last; block++) {
      if (filled[block] !== 0) continue;
      let end = block + 1;
      while (end <= last && filled[end] === 0) end++;
      fill(block, end);
      block = end;
    }
  };
  return {
    array,
    ensure(from, to) {
      const end = Math.min(length, to);
      if (!(end > from) || end <= 0) return;
      fillRange(Math.max(0, from) >>> shift, (end - 1) >>> shift);
    },
    ensureAll() {
      fillRange(0, filled.length - 1);
    },
  };
}
