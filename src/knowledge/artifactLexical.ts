/**
 * The lexical index's part of an index artifact: which sections it writes and how it is read back. Kept apart
 * from the envelope (`artifact.ts`: header, checksums, entries, phrases, scopes) so that a change of what the
 * lexical index stores changes this file and the format version only.
 *
 * The postings (per field: document ids and BM25 contributions; BM25F: also the per-field shares) are most of the
 * index and a turn reads the postings of a few terms only, so they are lazy sections: not read at load, but read
 * and checked per block of consecutive terms when a search first needs one of its terms. Each block has a
 * checksum per lazy section, stored in an eager section; the document ids of a block are checked to name
 * existing entries before any search reads them. A damaged block is a typed `corrupt` error of the search that
 * first needs it (the turn fails open), never a wrong result.
 */
import type { KnowledgeAnalyzerName, KnowledgeScoringMode } from "../types/knowledge.js";
import { type BlockedArray, blockedSections, bytesOf, TABLE_BLOCK_ELEMENTS } from "./artifactBlocks.js";
import { type LazyArray, type LazyList, LazyPostings } from "./artifactPostings.js";
import { checksum32 } from "./checksum.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { type EntryIds, ID_BLOCK_IDS, idBlockRange, LazyEntryIds } from "./denseIds.js";
import { KnowledgeLexicalIndex } from "./knowledgeIndex.js";
import { FIELD_COUNT } from "./postings.js";
import { RankedIdMap } from "./rankedIdMap.js";
import { TermDictionary } from "./termDictionary.js";

/** The index settings an artifact was built with (compared with an engine's before it serves the artifact). */
export type ArtifactIndexOptions = {
  fieldWeights: Record<string, number>;
  k1: number;
  b: number;
  analyzer: string;
  scoring: string;
};

/** What the header records about the lexical sections. */
export type LexicalSectionsMeta = {
  termCount: number;
  postings: { active: boolean; postingCount: number }[];
};

/** A section read on demand: its length, and byte ranges copied into a caller's buffer (checked by the caller). */
export type LazySection = {
  byteLength: number;
  /** Copies the section's bytes from `byteOffset` into `target` (its whole length). */
  readInto(byteOffset: number, target: Uint8Array): void;
};

/** Reads the sections of an artifact (eager ones already checked against their checksums). */
export type SectionReader = {
  has(name: string): boolean;
  /** Whether section `name` exists and is lazy (read on demand). */
  isLazy(name: string): boolean;
  bytes(name: string): Uint8Array;
  json<T>(name: string): T;
  int32(name: string): Int32Array;
  uint32(name: string): Uint32Array;
  float64(name: string): Float64Array;
  /** A lazy section (see the module comment); its reads are checked by the caller, per block. */
  lazy(name: string): LazySection;
  /**
   * Zeroed bytes of lazy section `name`'s length (8-byte aligned), for its blocks to be read into: the same bytes
   * at every call. Untouched pages cost no memory (see `artifactSections.ts`).
   */
  zeroed(name: string): Uint8Array;
  /** A blocked table (`artifactBlocks.ts`): lazy, read per checked block, in format 5; eager in format 4. */
  blockedInt32(name: string): BlockedArray<Int32Array>;
  /** {@link SectionReader.blockedInt32} of a `Float64Array` table. */
  blockedFloat64(name: string): BlockedArray<Float64Array>;
  /** The error a damage found after loading is reported with (the envelope's typed `corrupt` error). */
  corrupt(message: string): Error;
};

/** A section as written: `lazy` sections are read per block on demand, the others at load. */
export type WrittenSection = { name: string; bytes: Uint8Array; lazy?: boolean };

/**
 * Postings per block (at least; a block ends at a term boundary): what a first use of a term reads. Small, so a
 * cold turn reads, checks and copies little beyond its own terms' postings (at 4,096 the first turn of the 10k
 * benchmark read five times its terms' postings; at 1,024 it read 705 KB into ~260 fresh pages, at 256 ~105 pages
 * fewer); the eager block tables grow by 12 bytes per block (10k: 38 KB more read at load). Only the writer uses
 * it: a reader takes the blocks an artifact declares.
 */
const BLOCK_POSTINGS = 256;

/**
 * Block boundaries over the terms of one posting list: block `b` covers terms `[bounds[b], bounds[b + 1])`, at
 * least {@link BLOCK_POSTINGS} postings unless it is the last (a frequent term is a block of its own).
 */
function blockBounds(offsets: Int32Array, termCount: number): Int32Array {
  const bounds = [0];
  let blockStart = 0;
  for (let term = 0; term < termCount; term++) {
    const end = offsets[term + 1]!;
    if (end - blockStart >= BLOCK_POSTINGS) {
      bounds.push(term + 1);
      blockStart = end;
    }
  }
  if (bounds[bounds.length - 1] !== termCount) bounds.push(termCount);
  return Int32Array.from(bounds);
}

/** Per block, the checksum of its postings' bytes in `bytes` (`bytesPerPosting` bytes each). */
function blockChecksums(
  bytes: Uint8Array,
  bytesPerPosting: number,
  offsets: Int32Array,
  bounds: Int32Array,
): Uint32Array {
  const checksums = new Uint32Array(bounds.length - 1);
  for (let block = 0; block + 1 < bounds.length; block++) {
    const start = offsets[bounds[block]!]! * bytesPerPosting;
    const end = offsets[bounds[block + 1]!]! * bytesPerPosting;
    checksums[block] = checksum32(bytes.subarray(start, end));
  }
  return checksums;
}

/** The lazy section `name` with its per-block checksums (`name.checksums`). */
function lazySections(
  name: string,
  array: Int32Array | Float64Array,
  bytesPerPosting: number,
  offsets: Int32Array,
  bounds: Int32Array,
): WrittenSection[] {
  const bytes = bytesOf(array);
  return [
    { name: `${name}.checksums`, bytes: bytesOf(blockChecksums(bytes, bytesPerPosting, offsets, bounds)) },
    { name, bytes, lazy: true },
  ];
}

const encoder = new TextEncoder();

/** Separates the entry ids of `lexical.idList` (ids holding it are written as JSON in `lexical.ids` instead). */
const ID_SEPARATOR = "\u0000";

/**
 * The entry ids: joined by {@link ID_SEPARATOR} in a lazy section read a block of `ID_BLOCK_IDS` ids at a time
 * (`lexical.idList`, its block checksums in `lexical.idList.checksums`: see `idBlockRange`), with where each starts
 * (`lexical.idStarts`: each id's first byte, then the list's length plus one), so that a loaded index decodes an id
 * when it first reads it; and the id of every `ID_BLOCK_IDS`-th rank (`lexical.idFirsts`, NUL-joined), which the id
 * lookup's binary search compares to pick a block (see `rankedIdMap.ts`). Or, when an id holds the separator, a
 * JSON array read at load.
 *
 * Why lazy (format 6): the list was half of what a load read and checked (744 KB of 1.47 MB at 10,000 synthetic
 * entries, 180 page faults and a checksum over all of it at every cold start), while a first turn decodes ids from
 * about a third of its blocks.
 */
function idsSections(ids: readonly string[], ranks: Int32Array): WrittenSection[] {
  if (ids.some((id) => id.includes(ID_SEPARATOR)))
    return [{ name: "lexical.ids", bytes: encoder.encode(JSON.stringify(ids)) }];
  const list = encoder.encode(ids.join(ID_SEPARATOR));
  const starts = new Int32Array(ids.length + 1);
  let next = 1;
  for (let position = 0; position < list.length; position++)
    if (list[position] === 0) starts[next++] = position + 1;
  starts[ids.length] = list.length + 1;
  const checksums = new Uint32Array(Math.ceil(ids.length / ID_BLOCK_IDS));
  for (let block = 0; block < checksums.length; block++) {
    const range = idBlockRange(starts, list.length, block)!;
    checksums[block] = checksum32(list.subarray(range.from, range.to));
  }
  const byRank: string[] = new Array(ids.length);
  ranks.forEach((rank, doc) => {
    byRank[rank] = ids[doc]!;
  });
  const firsts: string[] = [];
  for (let rank = 0; rank < ids.length; rank += ID_BLOCK_IDS) firsts.push(byRank[rank]!);
  return [
    { name: "lexical.idList", bytes: list, lazy: true },
    { name: "lexical.idList.checksums", bytes: bytesOf(checksums) },
    { name: "lexical.idStarts", bytes: bytesOf(starts) },
    { name: "lexical.idFirsts", bytes: encoder.encode(firsts.join(ID_SEPARATOR)) },
  ];
}

/**
 * The entry ids of a loaded index, from whichever sections {@link idsSections} wrote (or a format-4 or -5 artifact's
 * list, read at load), and the ids of the blocks' first ranks when the artifact stores them: a NUL-joined list is
 * decoded an id at a time, when a turn first reads it, and in format 6 read a block at a time then (see
 * `denseIds.ts`).
 */
function readIds(
  read: SectionReader,
  entryCount: number,
): { ids: EntryIds; firsts: readonly string[] | undefined } {
  if (!read.has("lexical.idList")) {
    const ids = read.json<unknown>("lexical.ids");
    if (!isStringArray(ids, entryCount)) throw new RangeError("lexical.ids is not the list of entry ids");
    return { ids, firsts: undefined };
  }
  const corrupt = (message: string) => read.corrupt(message);
  if (read.isLazy("lexical.idList")) {
    const section = read.lazy("lexical.idList");
    const bytes = read.zeroed("lexical.idList");
    const starts = read.int32("lexical.idStarts");
    const checksums = read.uint32("lexical.idList.checksums");
    if (entryCount === 0 && bytes.length !== 0)
      throw new RangeError("lexical.idList does not hold one id per entry");
    const firstsText = strictText(read.bytes("lexical.idFirsts"), "lexical.idFirsts");
    const firsts = entryCount === 0 ? [] : firstsText.split(ID_SEPARATOR);
    const ids = new LazyEntryIds(bytes, entryCount, corrupt, starts, {
      checksums,
      fill: (from, _to, target) => section.readInto(from, target),
      check: checksum32,
    });
    return { ids, firsts };
  }
  const bytes = read.bytes("lexical.idList");
  if (entryCount === 0 && bytes.length !== 0)
    throw new RangeError("lexical.idList does not hold one id per entry");
  // Artifacts written before `lexical.idStarts` existed: the ids' boundaries are found by a scan when first needed.
  const starts = read.has("lexical.idStarts") ? read.int32("lexical.idStarts") : null;
  return { ids: new LazyEntryIds(bytes, entryCount, corrupt, starts), firsts: undefined };
}

const fatalDecoder = new TextDecoder("utf-8", { fatal: true });

/** `bytes` as UTF-8 text; a RangeError naming `name` when they are not. */
function strictText(bytes: Uint8Array, name: string): string {
  try {
    return fatalDecoder.decode(bytes);
  } catch {
    throw new RangeError(`${name} is not valid UTF-8`);
  }
}

/** The lexical sections of a finished index, with the header's options and metadata. */
export function writeLexicalSections(
  lexical: KnowledgeLexicalIndex,
  blockElements: number = TABLE_BLOCK_ELEMENTS,
): {
  options: ArtifactIndexOptions;
  meta: LexicalSectionsMeta;
  ids: readonly string[];
  sections: WrittenSection[];
} {
  const parts = lexical.exportParts();
  const dictionary = parts.dictionary;
  if (!dictionary) throw new TypeError("writeLexicalSections: the index has no term dictionary");
  const tables = dictionary.exportTables();
  // The term dictionary's own tables (they hold the terms): loading them is a copy, where interning every term
  // again means hashing it.
  const sections: WrittenSection[] = [
    ...idsSections(parts.ids, parts.ranks),
    { name: "lexical.averageLengths", bytes: bytesOf(parts.averageLengths) },
    { name: "lexical.ranks", bytes: bytesOf(parts.ranks) },
    ...blockedSections("lexical.dictionary.table", tables.table, blockElements),
    ...blockedSections("lexical.dictionary.records", tables.records, blockElements),
    { name: "lexical.dictionary.pool", bytes: tables.pool },
    { name: "lexical.dictionary.nonAscii", bytes: encoder.encode(JSON.stringify(tables.nonAscii)) },
  ];
  parts.postings.forEach((postings, index) => {
    if (!postings.active) return;
    const bounds = blockBounds(postings.offsets, parts.termCount);
    sections.push(
      ...blockedSections(`lexical.offsets.${index}`, postings.offsets, blockElements),
      { name: `lexical.blocks.${index}`, bytes: bytesOf(bounds) },
      ...lazySections(`lexical.docs.${index}`, postings.docs, 4, postings.offsets, bounds),
      ...lazySections(`lexical.contributions.${index}`, postings.contributions, 8, postings.offsets, bounds),
    );
    if (index === 0 && parts.bm25fShares) {
      sections.push(
        ...lazySections("lexical.bm25fShares", parts.bm25fShares, 8 * FIELD_COUNT, postings.offsets, bounds),
      );
    }
  });
  return {
    options: {
      fieldWeights: { ...parts.fieldWeights },
      k1: parts.k1,
      b: parts.b,
      analyzer: parts.analyzer,
      scoring: parts.scoring,
    },
    meta: {
      termCount: parts.termCount,
      postings: parts.postings.map((postings) => ({
        active: postings.active,
        postingCount: postings.docs.length,
      })),
    },
    ids: parts.ids,
    sections,
  };
}

function isStringArray(value: unknown, length: number): value is string[] {
  return Array.isArray(value) && value.length === length && value.every((item) => typeof item === "string");
}

/**
 * Recreates the finished lexical index from its sections (and returns its entry ids by dense id); its postings
 * are read on demand. Throws a RangeError when the eager sections are inconsistent with each other or with the
 * header (the envelope turns it into a typed "corrupt" error).
 */
export function readLexicalSections(
  options: ArtifactIndexOptions,
  meta: LexicalSectionsMeta,
  entryCount: number,
  read: SectionReader,
): { lexical: KnowledgeLexicalIndex; ids: EntryIds } {
  const { ids, firsts } = readIds(read, entryCount);
  const termCount = meta.termCount;
  const averageLengths = read.float64("lexical.averageLengths");
  if (averageLengths.length !== KNOWLEDGE_FIELD_NAMES.length)
    throw new RangeError("lexical.averageLengths has the wrong length");
  // Used in place and checked where a lookup reads it; a damage found then is the envelope's typed error.
  const dictionaryTable = read.blockedInt32("lexical.dictionary.table");
  const dictionaryRecords = read.blockedInt32("lexical.dictionary.records");
  const dictionary = TermDictionary.fromTables(
    {
      table: dictionaryTable.array,
      records: dictionaryRecords.array,
      pool: read.bytes("lexical.dictionary.pool"),
      nonAscii: read.json<[number, string][]>("lexical.dictionary.nonAscii"),
    },
    (message) => read.corrupt(message),
    { table: dictionaryTable, records: dictionaryRecords },
  );
  if (dictionary.size !== termCount)
    throw new RangeError("the term dictionary does not match the term count");
  const lists: LazyList[] = [];
  const bm25f = options.scoring === "bm25f";
  let bm25fShares: Float64Array | null = null;
  const postings = meta.postings.map((info, index) => {
    if (!info.active) {
      return {
        active: false,
        offsets: new Int32Array(0),
        docs: new Int32Array(0),
        contributions: new Float64Array(0),
      };
    }
    const offsetBlocks = read.blockedInt32(`lexical.offsets.${index}`);
    const offsets = offsetBlocks.array;
    // The ends, checked here (and read by the index's own consistency check); the rest with each block of postings.
    offsetBlocks.ensure(0, 1);
    offsetBlocks.ensure(termCount, termCount + 1);
    const bounds = read.int32(`lexical.blocks.${index}`);
    const postingCount = info.postingCount;
    // Offsets must rise from 0 to the posting count, or a search would read outside the postings: the ends here,
    // the rise per block when the block is filled (before any search reads its terms).
    if (offsets.length !== termCount + 1 || offsets[0] !== 0 || offsets[termCount] !== postingCount)
      throw new RangeError("posting offsets do not match the term and posting counts");
    // Blocks must cover the terms in order, or a term's block would be missing or probed out of range.
    if (bounds.length < 1 || bounds[0] !== 0 || bounds[bounds.length - 1] !== termCount)
      throw new RangeError("posting blocks do not cover the terms");
    for (let block = 1; block < bounds.length; block++)
      if (bounds[block]! <= bounds[block - 1]!) throw new RangeError("posting blocks are not ascending");
    const blockCount = bounds.length - 1;
    const lazyArray = (name: string, per: number, bytes: Uint8Array): LazyArray => {
      const section = read.lazy(name);
      const checksums = read.uint32(`${name}.checksums`);
      if (section.byteLength !== postingCount * per || checksums.length !== blockCount)
        throw new RangeError(`section ${name} does not match its posting count`);
      return { name, section, checksums, bytes, per };
    };
    // Checked against the sections' lengths (which are within the file) before anything is allocated.
    const arrays = [
      lazyArray(`lexical.docs.${index}`, 4, new Uint8Array(0)),
      lazyArray(`lexical.contributions.${index}`, 8, new Uint8Array(0)),
    ];
    if (bm25f && index === 0)
      arrays.push(lazyArray("lexical.bm25fShares", 8 * FIELD_COUNT, new Uint8Array(0)));
    // Zeroed (the pages are committed only when a block is filled), filled block by block.
    for (const array of arrays) array.bytes = read.zeroed(array.name);
    const docsBytes = arrays[0]!.bytes;
    const contributionBytes = arrays[1]!.bytes;
    const docs = new Int32Array(docsBytes.buffer, docsBytes.byteOffset, postingCount);
    const contributions = new Float64Array(
      contributionBytes.buffer,
      contributionBytes.byteOffset,
      postingCount,
    );
    if (arrays[2]) {
      const shareBytes = arrays[2].bytes;
      bm25fShares = new Float64Array(shareBytes.buffer, shareBytes.byteOffset, postingCount * FIELD_COUNT);
    }
    lists.push({ offsets, offsetBlocks, bounds, filled: new Uint8Array(blockCount), docs, arrays });
    return { active: true, offsets, docs, contributions };
  });
  const ranks = read.int32("lexical.ranks");
  const lexical = KnowledgeLexicalIndex.fromParts({
    fieldWeights: options.fieldWeights as never,
    k1: options.k1,
    b: options.b,
    analyzer: options.analyzer as KnowledgeAnalyzerName,
    scoring: options.scoring as KnowledgeScoringMode,
    ids,
    denseIds: RankedIdMap.from(ids, ranks, (message) => read.corrupt(message), firsts),
    termCount,
    averageLengths,
    ranks,
    postings,
    bm25fShares,
    dictionary,
    postingLoader: new LazyPostings(lists, entryCount, (message) => read.corrupt(message)),
  });
  return { lexical, ids };
}
