/**
 * String-to-id dictionary of index terms, built for the indexing hot loop: the tokenizer packs each ASCII token's
 * characters into 32-bit words and hashes them while it scans the source text, and the dictionary finds the term
 * from those words without creating a string per token.
 *
 * Indexing touches every token of every entry, and at scale most lookups miss the processor caches, so the layout
 * keeps the misses per token low: an open-addressing table of (hash, id) pairs, then one 32-byte record per term
 * holding its length and first 16 characters (compared as four integers). Only the characters after the 16th live
 * in a separate byte pool. Terms with a character outside ASCII (rare after normalization) use a `Map`.
 *
 * How a term is packed and hashed: `termPacking.ts`.
 */
import { MAX_TOKEN_LENGTH } from "./defaults.js";
import {
  BITS_PER_CHARACTER,
  BYTE_MASK,
  CHARACTER_IN_WORD_MASK,
  isAsciiTerm,
  PACKED_HASH,
  PACKED_WORDS,
  packTerm,
  WORD_INDEX_SHIFT,
} from "./termPacking.js";

export { finishHash, foldWord, PACKED_HASH, PACKED_HASH_START, PACKED_WORDS } from "./termPacking.js";

const EMPTY = 0;
/** Characters held inline in a term's record. */
export const INLINE_CHARACTERS = 16;
/** Int32s per term record: length (-1 for a non-ASCII term), four packed words, tail offset; padded to 32 bytes. */
const RECORD = 8;
/** Record layout: the term's length in characters, or -1 for a non-ASCII term (kept in a `Map`). */
const RECORD_LENGTH = 0;
/** Record layout: the first of four packed words holding the first {@link INLINE_CHARACTERS} characters. */
const RECORD_WORDS = 1;
/** Record layout: where the characters after the 16th start in the byte pool. */
const RECORD_TAIL = 5;
/** OR-ed into an ASCII letter's code, lowercases it (digits are unchanged). */
const LOWERCASE_BIT = 32;

/** Initial sizes: hash-table slots (a power of two), term records, and tail-pool bytes; each doubles as needed. */
const INITIAL_SLOTS = 1 << 12;
const INITIAL_RECORDS = 1 << 11;
const INITIAL_POOL_BYTES = 1 << 12;

/** Term ↔ id dictionary of one lexical index; ids are dense, in first-seen order. */
export class TermDictionary {
  // Slots of two Int32s: the hash and id + 1 (0 = empty).
  private table: Int32Array<ArrayBufferLike> = new Int32Array(2 * INITIAL_SLOTS);
  private mask = INITIAL_SLOTS - 1;
  private records: Int32Array<ArrayBufferLike> = new Int32Array(RECORD * INITIAL_RECORDS);
  private pool: Uint8Array<ArrayBufferLike> = new Uint8Array(INITIAL_POOL_BYTES);
  private poolLength = 0;
  private count = 0;
  private readonly nonAsciiIds = new Map<string, number>();
  private readonly nonAsciiTerms = new Map<number, string>();
  /**
   * The packed key of the term being looked up: its hash ({@link PACKED_HASH}) and its first 16 characters as four
   * words ({@link PACKED_WORDS}). The tokenizer writes it here and then calls {@link internPacked}: hashes and
   * packed words are 32-bit values outside the small-integer range, and passing them as arguments to a call that
   * is not inlined would box each in a heap number (several allocations per token, most of a build's garbage).
   */
  readonly packedKey = new Int32Array(5);
  private termsCache: string[] | null = null;
  /**
   * Set while the tables are a loaded artifact's, not yet checked whole (see {@link fromTables}): lookups then check
   * what they read, and this makes the error they throw. Cleared when the tables are checked and copied, before
   * the first term is added.
   */
  private loadedCorrupt: ((message: string) => Error) | null = null;
  /**
   * Set while the table and records are a loaded artifact's read a block at a time (format 5): a lookup reads the
   * blocks of the slots and records it looks at first (see {@link fromTables}).
   */
  private loadedBlocks: { table: TableBlocks; records: TableBlocks } | null = null;

  /** Number of terms. */
  get size(): number {
    return this.count;
  }

  /** The term of an id. */
  term(id: number): string {
    if (id < 0 || id >= this.count) throw new RangeError(`no term with id ${id}`);
    this.loadedBlocks?.records.ensure(id * RECORD, (id + 1) * RECORD);
    if (this.loadedCorrupt) this.checkRecord(id, this.loadedCorrupt);
    const base = id * RECORD;
    const records = this.records;
    const length = records[base + RECORD_LENGTH]!;
    if (length < 0) return this.nonAsciiTerms.get(id)!;
    const codes: number[] = new Array(length);
    for (let index = 0; index < length; index++) {
      codes[index] =
        index < INLINE_CHARACTERS
          ? (records[base + RECORD_WORDS + (index >> WORD_INDEX_SHIFT)]! >>>
              ((index & CHARACTER_IN_WORD_MASK) * BITS_PER_CHARACTER)) &
            BYTE_MASK
          : this.pool[records[base + RECORD_TAIL]! + index - INLINE_CHARACTERS]!;
    }
    let text = "";
    // Chunks keep the argument count of fromCharCode small.
    for (let index = 0; index < length; index += 1024)
      text += String.fromCharCode(...codes.slice(index, index + 1024));
    return text;
  }

  /** Every term, by id. */
  allTerms(): readonly string[] {
    if (this.termsCache?.length !== this.count) {
      const terms: string[] = new Array(this.count);
      for (let id = 0; id < this.count; id++) terms[id] = this.term(id);
      this.termsCache = terms;
    }
    return this.termsCache;
  }

  /** Id of a term, or -1. */
  get(term: string): number {
    if (!isAsciiTerm(term)) return this.nonAsciiIds.get(term) ?? -1;
    packTerm(term, this.packedKey);
    if (this.loadedCorrupt) return this.findChecked(term, this.loadedCorrupt);
    return this.find(term.length, term, 0, false);
  }

  /** Id of a term, adding it when new. */
  intern(term: string): number {
    if (this.loadedCorrupt) this.adoptLoadedTables(this.loadedCorrupt);
    if (!isAsciiTerm(term)) {
      let id = this.nonAsciiIds.get(term);
      if (id === undefined) {
        id = this.addRecord(-1);
        this.nonAsciiIds.set(term, id);
        this.nonAsciiTerms.set(id, term);
      }
      return id;
    }
    packTerm(term, this.packedKey);
    return this.internPacked(term, 0, term.length, false);
  }

  /**
   * Id of a packed ASCII term, adding it when new: {@link packedKey} holds its hash (from {@link finishHash}) and
   * its first 16 characters packed (zero beyond its length), and `source[start, start + length)` are its
   * characters, lowercased with `| 32` when `lowercase` is set (letters and digits only then).
   */
  internPacked(source: string, start: number, length: number, lowercase: boolean): number {
    if (this.loadedCorrupt) this.adoptLoadedTables(this.loadedCorrupt);
    const found = this.find(length, source, start, lowercase);
    if (found >= 0) return found;
    const key = this.packedKey;
    const id = this.addRecord(length);
    const base = id * RECORD;
    const records = this.records;
    records[base + RECORD_WORDS] = key[PACKED_WORDS]!;
    records[base + RECORD_WORDS + 1] = key[PACKED_WORDS + 1]!;
    records[base + RECORD_WORDS + 2] = key[PACKED_WORDS + 2]!;
    records[base + RECORD_WORDS + 3] = key[PACKED_WORDS + 3]!;
    if (length > INLINE_CHARACTERS) {
      const tail = length - INLINE_CHARACTERS;
      if (this.poolLength + tail > this.pool.length) {
        const grown = new Uint8Array(Math.max(this.pool.length * 2, this.poolLength + tail));
        grown.set(this.pool);
        this.pool = grown;
      }
      records[base + RECORD_TAIL] = this.poolLength;
      const pool = this.pool;
      const mask = lowercase ? LOWERCASE_BIT : 0;
      for (let index = 0; index < tail; index++)
        pool[this.poolLength + index] = source.charCodeAt(start + INLINE_CHARACTERS + index) | mask;
      this.poolLength += tail;
    }
    this.placeInTable(key[PACKED_HASH]!, id);
    return id;
  }

  /**
   * The id of the term in {@link packedKey}, or -1 (where {@link placeInTable} would put it is found again on
   * insert).
   */
  private find(length: number, source: string, start: number, lowercase: boolean): number {
    const table = this.table;
    const mask = this.mask;
    const records = this.records;
    const key = this.packedKey;
    const hash = key[PACKED_HASH]!;
    const word0 = key[PACKED_WORDS]!;
    const word1 = key[PACKED_WORDS + 1]!;
    const word2 = key[PACKED_WORDS + 2]!;
    const word3 = key[PACKED_WORDS + 3]!;
    let slot = hash & mask;
    for (;;) {
      const stored = table[2 * slot + 1]!;
      if (stored === EMPTY) return -1;
      if (table[2 * slot] === hash) {
        const base = (stored - 1) * RECORD;
        if (
          records[base + RECORD_LENGTH] === length &&
          records[base + RECORD_WORDS] === word0 &&
          records[base + RECORD_WORDS + 1] === word1 &&
          records[base + RECORD_WORDS + 2] === word2 &&
          records[base + RECORD_WORDS + 3] === word3 &&
          (length <= INLINE_CHARACTERS ||
            this.sameTail(records[base + RECORD_TAIL]!, source, start, length, lowercase))
        )
          return stored - 1;
      }
      slot = (slot + 1) & mask;
    }
  }

  /**
   * {@link find} over a loaded artifact's tables not yet checked whole (for {@link get}): every slot it reads must
   * name an existing term, every record it compares must lie within the tables, and the probe must end within the
   * table's size; otherwise it throws `corrupt(...)` instead of answering.
   */
  private findChecked(term: string, corrupt: (message: string) => Error): number {
    const key = this.packedKey;
    const hash = key[PACKED_HASH]!;
    const table = this.table;
    const mask = this.mask;
    const records = this.records;
    const count = this.count;
    const length = term.length;
    const blocks = this.loadedBlocks;
    let slot = hash & mask;
    for (let probes = 0; probes <= mask; probes++) {
      blocks?.table.ensure(2 * slot, 2 * slot + 2);
      const stored = table[2 * slot + 1]!;
      if (stored === EMPTY) return -1;
      if (stored < 1 || stored > count) throw corrupt("term dictionary table refers to a missing term");
      if (table[2 * slot] === hash) {
        // The record a matching hash points at is checked before it is compared (so a damaged one is an error,
        // not a miss).
        this.checkRecord(stored - 1, corrupt);
        const base = (stored - 1) * RECORD;
        if (
          records[base + RECORD_LENGTH] === length &&
          records[base + RECORD_WORDS] === key[PACKED_WORDS] &&
          records[base + RECORD_WORDS + 1] === key[PACKED_WORDS + 1] &&
          records[base + RECORD_WORDS + 2] === key[PACKED_WORDS + 2] &&
          records[base + RECORD_WORDS + 3] === key[PACKED_WORDS + 3] &&
          (length <= INLINE_CHARACTERS || this.sameTail(records[base + RECORD_TAIL]!, term, 0, length, false))
        )
          return stored - 1;
      }
      slot = (slot + 1) & mask;
    }
    throw corrupt("term dictionary table has no empty slot");
  }

  /** Throws `corrupt(...)` unless the record of `id` has a possible length and, past 16 characters, a tail in the pool. */
  private checkRecord(id: number, corrupt: (message: string) => Error): void {
    const base = id * RECORD;
    this.loadedBlocks?.records.ensure(base, base + RECORD);
    const length = this.records[base + RECORD_LENGTH]!;
    if (length === -1) {
      if (!this.nonAsciiTerms.has(id)) throw corrupt("term dictionary non-ASCII terms do not match");
      return;
    }
    if (!(length >= 0 && length <= MAX_TOKEN_LENGTH))
      throw corrupt("term dictionary record has a bad length");
    if (length > INLINE_CHARACTERS) {
      const tail = this.records[base + RECORD_TAIL]!;
      if (!(tail >= 0 && tail + length - INLINE_CHARACTERS <= this.poolLength))
        throw corrupt("term dictionary record points outside its pool");
    }
  }

  private sameTail(
    offset: number,
    source: string,
    start: number,
    length: number,
    lowercase: boolean,
  ): boolean {
    const pool = this.pool;
    const mask = lowercase ? LOWERCASE_BIT : 0;
    for (let index = INLINE_CHARACTERS; index < length; index++)
      if (pool[offset + index - INLINE_CHARACTERS] !== (source.charCodeAt(start + index) | mask))
        return false;
    return true;
  }

  /** Appends a record and returns its id. */
  private addRecord(length: number): number {
    const id = this.count++;
    if ((id + 1) * RECORD > this.records.length) {
      const grown = new Int32Array(this.records.length * 2);
      grown.set(this.records);
      this.records = grown;
    }
    this.records[id * RECORD + RECORD_LENGTH] = length;
    this.termsCache = null;
    return id;
  }

  private placeInTable(hash: number, id: number): void {
    // Keep the load factor under one half so probes stay short.
    if (this.count * 2 > this.mask + 1) this.grow();
    const table = this.table;
    const mask = this.mask;
    let slot = hash & mask;
    while (table[2 * slot + 1] !== EMPTY) slot = (slot + 1) & mask;
    table[2 * slot] = hash;
    table[2 * slot + 1] = id + 1;
  }

  private grow(): void {
    const previous = this.table;
    const slots = (this.mask + 1) * 2;
    const table = new Int32Array(slots * 2);
    const mask = slots - 1;
    for (let slot = 0; slot < previous.length; slot += 2) {
      const stored = previous[slot + 1]!;
      if (stored === EMPTY) continue;
      const hash = previous[slot]!;
      let target = hash & mask;
      while (table[2 * target + 1] !== EMPTY) target = (target + 1) & mask;
      table[2 * target] = hash;
      table[2 * target + 1] = stored;
    }
    this.table = table;
    this.mask = mask;
  }

  /** The dictionary's tables, for an index artifact (views of the dictionary's own arrays: do not modify them). */
  exportTables(): TermDictionaryTables {
    this.loadedBlocks?.table.ensureAll();
    this.loadedBlocks?.records.ensureAll();
    return {
      table: this.table,
      records: this.records.subarray(0, this.count * RECORD),
      pool: this.pool.subarray(0, this.poolLength),
      nonAscii: [...this.nonAsciiTerms],
    };
  }

  /**
   * A dictionary over tables written by {@link exportTables}, without hashing a term again and without walking the
   * tables (what makes loading an artifact's dictionary cheap): they are used in place, and checked where they are
   * read, so that no lookup of a damaged or crafted table reads out of bounds, probes forever or answers from a
   * record outside the tables: a lookup throws `corrupt(...)` instead. Before the first term is added (updates),
   * the tables are checked whole and copied (a loaded dictionary can still grow). Sizes that cannot be right and
   * non-ASCII terms that do not match their records are refused here; `corrupt` makes the errors (a RangeError by
   * default).
   */
  static fromTables(
    tables: TermDictionaryTables,
    corrupt: (message: string) => Error = (message) => new RangeError(message),
    blocks: { table: TableBlocks; records: TableBlocks } | null = null,
  ): TermDictionary {
    const { table, records, pool, nonAscii } = tables;
    const slots = table.length / 2;
    const count = records.length / RECORD;
    if (!Number.isInteger(slots) || slots < 2 || (slots & (slots - 1)) !== 0 || !Number.isInteger(count))
      throw corrupt("term dictionary tables have impossible sizes");
    // At most half full, as the builder keeps it: more terms than that cannot all be in the table.
    if (count * 2 > slots) throw corrupt("term dictionary table is too full");
    const dictionary = new TermDictionary();
    for (const [id, term] of nonAscii) {
      if (Number.isInteger(id) && id >= 0 && id < count)
        blocks?.records.ensure(id * RECORD, (id + 1) * RECORD);
      if (!Number.isInteger(id) || id < 0 || id >= count || records[id * RECORD + RECORD_LENGTH] !== -1)
        throw corrupt("term dictionary non-ASCII term has a bad id");
      if (typeof term !== "string" || dictionary.nonAsciiIds.has(term))
        throw corrupt("term dictionary non-ASCII terms are not distinct strings");
      dictionary.nonAsciiIds.set(term, id);
      dictionary.nonAsciiTerms.set(id, term);
    }
    dictionary.table = table;
    dictionary.mask = slots - 1;
    dictionary.records = records;
    dictionary.pool = pool;
    dictionary.poolLength = pool.length;
    dictionary.count = count;
    dictionary.loadedCorrupt = corrupt;
    dictionary.loadedBlocks = blocks;
    return dictionary;
  }

  /**
   * Checks a loaded artifact's tables whole (every slot names an existing term, at most half the slots are used,
   * every record has a possible length and its tail in the pool, every non-ASCII record has its term) and copies
   * them into arrays of the dictionary's own, which can grow; throws `corrupt(...)` otherwise. Once, before the
   * first term is added.
   */
  private adoptLoadedTables(corrupt: (message: string) => Error): void {
    this.loadedBlocks?.table.ensureAll();
    this.loadedBlocks?.records.ensureAll();
    this.loadedBlocks = null;
    const table = this.table;
    const count = this.count;
    let used = 0;
    for (let slot = 1; slot < table.length; slot += 2) {
      const stored = table[slot]!;
      if (stored === EMPTY) continue;
      if (stored < 1 || stored > count) throw corrupt("term dictionary table refers to a missing term");
      used++;
    }
    if (used * 2 > table.length / 2) throw corrupt("term dictionary table is too full");
    let nonAsciiCount = 0;
    for (let id = 0; id < count; id++) {
      this.checkRecord(id, corrupt);
      if (this.records[id * RECORD + RECORD_LENGTH] === -1) nonAsciiCount++;
    }
    if (nonAsciiCount !== this.nonAsciiTerms.size)
      throw corrupt("term dictionary non-ASCII terms do not match");
    this.table = table.slice();
    const records = new Int32Array(Math.max(this.records.length, RECORD * INITIAL_RECORDS));
    records.set(this.records);
    this.records = records;
    const pool = new Uint8Array(Math.max(this.poolLength, INITIAL_POOL_BYTES));
    pool.set(this.pool.subarray(0, this.poolLength));
    this.pool = pool;
    this.loadedCorrupt = null;
  }
}

/**
 * A loaded table read a block at a time (`artifactBlocks.ts`): `ensure(from, to)` reads the blocks holding
 * elements `[from, to)` (a typed error when one is damaged), `ensureAll` every block.
 */
export type TableBlocks = { ensure(from: number, to: number): void; ensureAll(): void };

/** The arrays of a {@link TermDictionary} (see {@link TermDictionary.exportTables}). */
export type TermDictionaryTables = {
  /** Open-addressing slots: (hash, id + 1) pairs, 0 = empty. */
  table: Int32Array;
  /** One record per term: length (-1 for a non-ASCII term), four packed words, tail offset, padding. */
  records: Int32Array;
  /** Characters after the 16th of long ASCII terms. */
  pool: Uint8Array;
  /** The non-ASCII terms by id. */
  nonAscii: [number, string][];
};
