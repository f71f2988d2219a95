/**
 * Entry ids by dense id, as a finished index holds them: an array (a build, a compaction, an update's additions) or
 * an artifact's id list decoded one id at a time, when a turn first needs it ({@link LazyEntryIds}).
 *
 * Why not always an array: an artifact stores its ids as UTF-8 joined by NUL characters; decoding all of them at
 * load (one string per entry, then promoted to the old generation by the first scavenge) was the largest single
 * cost of a cold start after Node's own (10,000 entries: 744 KB decoded into 10,000 strings, about 330 pages
 * touched), while a first turn reads a few hundred of them (its results, their records, the binary searches of
 * its id lookups).
 */

/** Entry ids by dense id: `at(denseId)` for `0 <= denseId < length` (undefined outside). */
export type EntryIds = {
  readonly length: number;
  at(denseId: number): string | undefined;
  /**
   * The dense id of `id` when this list already decoded it (an artifact's list), else undefined: a turn reads an
   * id by dense id, then looks its entry up by id, and this answers the lookup without a search.
   */
  decodedDenseId?(id: string): number | undefined;
};

/** The ids as an array (an artifact's lazy list decodes all of them once, for the paths that walk every id). */
export function entryIdArray(ids: EntryIds): readonly string[] {
  return ids instanceof LazyEntryIds ? ids.toArray() : (ids as readonly string[]);
}

const SEPARATOR = 0;

/** Ids per checked block of an artifact's lazy id list (format 6; a power of two). */
export const ID_BLOCK_IDS = 64;
const ID_BLOCK_SHIFT = 6;
/** Bytes of each chunk of a lazily read list's arena (see `LazyEntryIds`'s `blockBytes`). */
const ARENA_CHUNK_BYTES = 64 * 1024;
/** Bytes of a lazily read list's scratch buffer at least (a 10k artifact's blocks of 64 ids are ~4.7 KB). */
const SCRATCH_MIN_BYTES = 8 * 1024;

/**
 * Where block `block` of an id list lies (`starts` as {@link LazyEntryIds} takes them, `listLength` the list's bytes):
 * from the separator before its first id (the list's start for block 0) to the separator after its last id included
 * (the list's end for the last block), so that a block's bytes hold every byte {@link LazyEntryIds.at} reads to decode
 * one of its ids; two neighbouring blocks share that one separator. Undefined when `starts` do not give a range
 * inside the list (a crafted artifact).
 */
export function idBlockRange(
  starts: Int32Array,
  listLength: number,
  block: number,
): { from: number; to: number } | undefined {
  const from = idBlockFrom(starts, block);
  const to = idBlockTo(starts, listLength, block);
  return from >= 0 && from <= to && to <= listLength ? { from, to } : undefined;
}

/** Where block `block`'s range starts ({@link idBlockRange}'s `from`, unchecked; no object allocated). */
function idBlockFrom(starts: Int32Array, block: number): number {
  return block === 0 ? 0 : starts[block * ID_BLOCK_IDS]! - 1;
}

/** Where block `block`'s range ends ({@link idBlockRange}'s `to`, unchecked). */
function idBlockTo(starts: Int32Array, listLength: number, block: number): number {
  const next = (block + 1) * ID_BLOCK_IDS;
  return next >= starts.length - 1 ? listLength : starts[next]!;
}

/**
 * An id list read a block of {@link ID_BLOCK_IDS} ids at a time (format 6): `fill(from, to)` copies the list's bytes
 * `[from, to)` into the list's (zeroed) bytes, `checksums` hold one checksum per block of its range
 * ({@link idBlockRange}), `check` computes one.
 */
export type IdBlockReader = {
  checksums: Uint32Array;
  fill(from: number, to: number, target: Uint8Array): void;
  check(bytes: Uint8Array): number;
};

/**
 * An artifact's entry ids: `bytes` holds them as UTF-8 joined by NUL bytes (`count` of them), decoded one at a
 * time when first read and kept. The id boundaries come from `starts` (each id's first byte, plus the end of the
 * list plus one: what an artifact that stores them gives) or else from one scan for the separators at the first
 * read. Damage (a boundary that is not a separator, an id that is not valid UTF-8, another number of ids than
 * `count`) is reported through `corrupt` when the id concerned is first read: the bytes are checked against their
 * checksum before, so that only an artifact written wrongly gets there.
 */
export class LazyEntryIds implements EntryIds {
  private starts: Int32Array | null;
  /**
   * The ids decoded so far, by dense id: a map, not an array of `length` holes, since a turn decodes a few hundred
   * of them (a 10k first turn 614) and an array would be allocated and cleared whole at the first read (80 KB at
   * 10,000 entries, 8 MB at a million).
   */
  private readonly decoded = new Map<number, string>();
  private all: readonly string[] | null = null;
  /** The dense id of each id decoded so far. */
  private readonly denseIds = new Map<string, number>();
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  /** Per block of a lazily read list, whether its bytes were read and checked (null: the list is all there). */
  private readonly filled: Uint8Array | null = null;
  /**
   * The blocks of a lazily read list read so far, each its range's bytes ({@link idBlockRange}) in {@link arena}: a
   * first turn reads a few dozen blocks spread over the list (a 10k one 41 of 157), and read in place each touched
   * two or three fresh pages of the list's zeroed buffer (a first touch of a page is a page fault, about 15
   * microseconds on some virtual machines); packed one after another they touch about one page per block or less.
   * The list's own buffer is filled only when every id is decoded ({@link toArray}).
   */
  private readonly blockBytes = new Map<number, Uint8Array>();
  private arena: Uint8Array | null = null;
  private arenaUsed = 0;
  /**
   * A block read for the first time goes to this buffer, reused by every such read, and is kept in the {@link arena}
   * only when it is read again: a first turn decodes one or two ids of most blocks it reads (a 10k one 48 ids from 41
   * blocks), and a block kept for them touched fresh arena pages (about 70 at 10k, ~15 microseconds each on some
   * virtual machines) where this buffer's pages were touched once. {@link scratchBlock} is the block it holds.
   */
  private scratch: Uint8Array | null = null;
  private scratchBlock = -1;
  /** Per block of a lazily read list, whether it was read (and checked) before: read again, it is kept. */
  private readonly seen: Uint8Array | null = null;

  /**
   * `bytes` is the whole list, or with `blocks` (format 6) a zeroed buffer of its length that blocks are read into
   * when an id of theirs is first decoded (`starts` required then).
   */
  constructor(
    private readonly bytes: Uint8Array,
    readonly length: number,
    private readonly corrupt: (message: string) => Error,
    starts: Int32Array | null = null,
    private readonly blocks: IdBlockReader | null = null,
  ) {
    if (starts && starts.length !== length + 1)
      throw corrupt("lexical.idStarts does not hold one start per entry");
    this.starts = starts;
    if (blocks) {
      if (!starts || blocks.checksums.length !== Math.ceil(length / ID_BLOCK_IDS))
        throw corrupt("lexical.idList does not match its block checksums");
      this.filled = new Uint8Array(blocks.checksums.length);
      this.seen = new Uint8Array(blocks.checksums.length);
    }
  }

  /**
   * Reads and checks block `block` of a lazily read list (see {@link idBlockRange}): into the list's own bytes with
   * `inPlace` (every id decoded at once); else, the first time, into the {@link scratch} buffer, and the next time
   * into the arena ({@link blockBytes}), where it stays.
   */
  private fill(block: number, inPlace = false): void {
    const range = idBlockRange(this.starts!, this.bytes.length, block);
    if (!range) throw this.corrupt("lexical.idList does not hold one id per entry");
    const length = range.to - range.from;
    const transient = !inPlace && this.seen![block] === 0 && length <= ARENA_CHUNK_BYTES / 4;
    if (transient && this.scratchBlock >= 0) this.scratchBlock = -1;
    const target = inPlace
      ? this.bytes.subarray(range.from, range.to)
      : transient
        ? this.scratchSpace(length)
        : this.arenaSpace(length);
    const blocks = this.blocks!;
    blocks.fill(range.from, range.to, target);
    if (blocks.check(target) !== blocks.checksums[block]) {
      // Zeros again (in place, a neighbour's shared separator included, which its own check still covers when it
      // is read); the arena's space is left unused.
      target.fill(0);
      if (inPlace) {
        if (block > 0) this.filled![block - 1] = 0;
        if (block + 1 < this.filled!.length) this.filled![block + 1] = 0;
      }
      throw this.corrupt(`block ${block} of section lexical.idList does not match its checksum`);
    }
    this.seen![block] = 1;
    if (transient) {
      this.scratchBlock = block;
      return;
    }
    if (!inPlace) this.blockBytes.set(block, target);
    this.filled![block] = 1;
  }

  /** The first `length` bytes of the {@link scratch} buffer (grown to hold them). */
  private scratchSpace(length: number): Uint8Array {
    if (this.scratch === null || this.scratch.length < length)
      this.scratch = new Uint8Array(Math.max(length, SCRATCH_MIN_BYTES));
    return this.scratch.subarray(0, length);
  }

  /** `length` bytes of the arena, after the blocks read before (a block longer than a quarter chunk gets its own). */
  private arenaSpace(length: number): Uint8Array {
    if (length > ARENA_CHUNK_BYTES / 4) return new Uint8Array(length);
    if (this.arena === null || this.arenaUsed + length > this.arena.length) {
      this.arena = new Uint8Array(ARENA_CHUNK_BYTES);
      this.arenaUsed = 0;
    }
    const space = this.arena.subarray(this.arenaUsed, this.arenaUsed + length);
    this.arenaUsed += length;
    return space;
  }

  at(denseId: number): string | undefined {
    if (this.all) return this.all[denseId];
    if (!(denseId >= 0 && denseId < this.length)) return undefined;
    const known = this.decoded.get(denseId);
    if (known !== undefined) return known;
    if (
      this.filled !== null &&
      this.filled[denseId >>> ID_BLOCK_SHIFT] === 0 &&
      this.scratchBlock !== denseId >>> ID_BLOCK_SHIFT
    )
      this.fill(denseId >>> ID_BLOCK_SHIFT);
    this.starts ??= this.scan();
    const starts = this.starts;
    const start = starts[denseId]!;
    const end = starts[denseId + 1]! - 1;
    const listLength = this.bytes.length;
    // The bytes the id is decoded from: its block's in the arena (`base`: where they start in the list), or the list.
    let source = this.bytes;
    let base = 0;
    if (this.filled !== null) {
      const block = denseId >>> ID_BLOCK_SHIFT;
      const read = this.blockBytes.get(block) ?? (this.scratchBlock === block ? this.scratch : undefined);
      if (read !== undefined && read !== null) {
        source = read;
        base = idBlockFrom(starts, block);
      }
    }
    // Each id ends at a separator (the last one at the end of the list) and holds none.
    if (
      !(start >= 0 && start <= end && end <= listLength) ||
      (this.filled !== null && !this.insideBlock(denseId, start, end)) ||
      (start > 0 && source[start - 1 - base] !== SEPARATOR) ||
      (end < listLength && source[end - base] !== SEPARATOR) ||
      (denseId === this.length - 1 && end !== listLength)
    )
      throw this.corrupt("lexical.idList does not hold one id per entry");
    const bytes = source.subarray(start - base, end - base);
    if (bytes.indexOf(SEPARATOR) >= 0) throw this.corrupt("lexical.idList does not hold one id per entry");
    let id: string;
    try {
      id = this.decoder.decode(bytes);
    } catch {
      throw this.corrupt("lexical.idList is not valid UTF-8");
    }
    if (this.denseIds.has(id)) throw this.corrupt("lexical.idList holds an id twice");
    this.denseIds.set(id, denseId);
    this.decoded.set(denseId, id);
    return id;
  }

  /**
   * Whether id `denseId`'s bytes `[start, end]` (with the separators around them) lie in its block's range, the bytes
   * read and checked for it: crafted starts could otherwise point into blocks not read (zeros, which read as
   * separators).
   */
  private insideBlock(denseId: number, start: number, end: number): boolean {
    const block = denseId >>> ID_BLOCK_SHIFT;
    const from = idBlockFrom(this.starts!, block);
    const to = idBlockTo(this.starts!, this.bytes.length, block);
    return (block === 0 || start - 1 >= from) && (end < to || (end === to && end === this.bytes.length));
  }

  decodedDenseId(id: string): number | undefined {
    return this.denseIds.get(id);
  }

  /** Every id, decoded once (then {@link at} reads this array). */
  toArray(): readonly string[] {
    if (this.all) return this.all;
    const filled = this.filled;
    if (filled !== null) {
      // The blocks read into the arena (checked then) are copied into the list; the others read into it.
      for (let block = 0; block < filled.length; block++) {
        const read = this.blockBytes.get(block);
        if (read !== undefined) this.bytes.set(read, idBlockFrom(this.starts!, block));
        else if (filled[block] === 0) this.fill(block, true);
      }
    }
    let text: string;
    try {
      text = this.decoder.decode(this.bytes);
    } catch {
      throw this.corrupt("lexical.idList is not valid UTF-8");
    }
    const ids = this.length === 0 && text === "" ? [] : text.split("\u0000");
    if (ids.length !== this.length) throw this.corrupt("lexical.idList does not hold one id per entry");
    this.all = ids;
    this.decoded.clear();
    this.blockBytes.clear();
    this.arena = null;
    this.scratch = null;
    this.scratchBlock = -1;
    return ids;
  }

  /** Where each id starts, found by one scan for the separators (a native search per id). */
  private scan(): Int32Array {
    const starts = new Int32Array(this.length + 1);
    const bytes = this.bytes;
    let position = 0;
    for (let denseId = 1; denseId < this.length; denseId++) {
      const separator = bytes.indexOf(SEPARATOR, position);
      if (separator < 0) throw this.corrupt("lexical.idList does not hold one id per entry");
      position = separator + 1;
      starts[denseId] = position;
    }
    if (this.length > 0 && bytes.indexOf(SEPARATOR, position) >= 0)
      throw this.corrupt("lexical.idList does not hold one id per entry");
    starts[this.length] = bytes.length + 1;
    return starts;
  }
}
