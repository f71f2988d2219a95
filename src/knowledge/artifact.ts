/**
 * Prebuilt index artifacts: a built snapshot written as one self-contained binary file (format 5), so a replica
 * starts by loading instead of validating, hashing, tokenizing and indexing every entry, and needs nothing else:
 * the entries travel inside the artifact, and its content key (see `buildKnowledgeIndexCacheKey`) is stored in it.
 *
 * Layout (all integers little-endian):
 *   8 bytes   magic "LXGINDEX"
 *   4 bytes   format version (uint32)
 *   4 bytes   header length in bytes (uint32)
 *   4 bytes   checksum of the header bytes (uint32, see `checksum.ts`)
 *   4 bytes   zero
 *   header    UTF-8 JSON: content key, sources, index options, counts, the blocked tables' block size, and every
 *             section's offset, length and checksum (offsets relative to the payload start, each aligned to 8
 *             bytes; lazy sections are marked)
 *   sections  typed arrays and UTF-8 blobs read at load: the entry ids and ranks, the block tables and per-block
 *             checksums of the lazy sections (`artifactLexical.ts`, `artifactBlocks.ts`), the phrase trie's nodes
 *             and its exact/alias entry lists, the scope lists (status, integrations, domains), the entry table
 *   lazy      the postings (document ids, contributions, BM25F shares: per block of terms), the phrase keys (per
 *             1,024 keys) and the blocked tables (the term dictionary's hash table and records, the phrase trie's
 *             edge table, the posting offsets, the phrase-key offsets: per block of elements), each block read and
 *             checked against its own checksum when a reader first needs it
 *   entries   last: one UTF-8 JSON record per entry, in dense-id order, located by the entry table
 *
 * Loading reads and checks the eager sections only (a few percent of the index); the rest is read (from the file,
 * when the artifact is a path) and checked per block when a turn first needs it: a turn reads the table slots and
 * postings of its terms, the keys its phrase walk compares, and decodes the entries it renders, nothing else. The
 * tables a load would otherwise walk whole are checked where they are used: the posting offsets per block when it
 * is filled, the phrase-key offsets per block of keys, a phrase list when it is read, an entry's place when its
 * record is read, the dictionary's and trie's slots at each probe. Format 4 (the same, with the blocked tables as
 * eager sections) is still read; formats 1 to 3 (eager postings; another checksum) are refused with
 * `unsupported-format-version`.
 *
 * Files: `artifactHeader.ts` (constants, typed error, header checks, byte sources), `artifactWriter.ts` (writing),
 * `artifactSections.ts` (reading sections), `artifactBlocks.ts` (tables read per block), `artifactLexical.ts` and
 * `artifactPostings.ts` (the lexical index's sections and its postings filled per block), `artifactPhrases.ts` (the
 * phrase keys, trie and lists), `artifactEntries.ts` (entry records), this file (loading and assembling).
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { EntryRecords, isStringList, LazyEntryMap } from "./artifactEntries.js";
import {
  type ByteSource,
  checkExpectations,
  corrupt,
  type FileByteSource,
  type IndexArtifactExpectations,
  isLittleEndian,
  KnowledgeArtifactError,
  type KnowledgeIndexArtifactHeader,
  memorySource,
  openFileSource,
  readHeaderFrom,
  unreadable,
  unsupportedPlatform,
} from "./artifactHeader.js";
import { readLexicalSections, type SectionReader } from "./artifactLexical.js";
import { readPhrases } from "./artifactPhrases.js";
import { allBelow } from "./artifactPostings.js";
import { sectionReader } from "./artifactSections.js";
import { RelationMap } from "./derivedMaps.js";
import { type CompiledSnapshot, createEligibilityCache, registerCompiledSnapshot } from "./knowledgeIndex.js";
import { takeLoaderScratch } from "./runtime.js";

/** Index sections up to this size are read from a file in one piece. */
const ONE_READ_BYTES = 1024 * 1024 * 1024;
/** Index sections up to this size are read synchronously (see `loadSections`). */
const SYNC_READ_BYTES = 8 * 1024 * 1024;

/**
 * Closes the file of a loaded snapshot once nothing refers to its entries or its lexical index any more (both
 * read from it on demand): each is registered with the same counter.
 */
const fileCloser =
  typeof FinalizationRegistry === "function"
    ? new FinalizationRegistry<{ source: ByteSource; holders: number }>((held) => {
        if (--held.holders > 0) return;
        try {
          held.source.close();
        } catch {
          // Already closed.
        }
      })
    : null;

/** Name → dense ids lists of the scope sections, checked to name existing entries. */
function readLists(
  read: SectionReader,
  prefix: "integration" | "domain",
  count: number,
): Map<string, Int32Array> {
  const names = read.json<unknown>(`scope.${prefix}Names`);
  const offsets = read.int32(`scope.${prefix}Offsets`);
  const docs = read.int32(`scope.${prefix}Docs`);
  if (!isStringList(names) || offsets.length !== names.length + 1 || offsets[0] !== 0)
    throw corrupt(`the ${prefix} lists do not match their names`);
  const map = new Map<string, Int32Array>();
  names.forEach((name, index) => {
    const start = offsets[index]!;
    const end = offsets[index + 1]!;
    if (start > end || end > docs.length) throw corrupt(`the ${prefix} lists are out of order`);
    map.set(name, docs.subarray(start, end));
  });
  if (!allBelow(docs, 0, docs.length, count)) throw corrupt(`a ${prefix} list names a missing entry`);
  return map;
}

/** Assembles the snapshot from checked sections; the entry records stay in `source` until read. */
function assembleLoaded(
  header: KnowledgeIndexArtifactHeader,
  payloadStart: number,
  source: ByteSource,
  read: SectionReader,
): KnowledgeIndexSnapshot {
  const count = header.entryCount;
  const { lexical, ids } = readLexicalSections(
    header.options,
    { termCount: header.termCount, postings: header.postings },
    count,
    read,
  );

  const entryOffsets = read.float64("entries.offsets");
  const checksums = read.uint32("entries.checksums");
  if (entryOffsets.length !== count + 1 || checksums.length !== count || entryOffsets[0] !== 0)
    throw corrupt("the entry table does not match the entry count");
  if (entryOffsets[count] !== header.entryRecords.length)
    throw corrupt("the entry table does not cover the records");
  const records = new EntryRecords(
    source,
    payloadStart + header.entryRecords.offset,
    header.entryRecords.length,
    entryOffsets,
    checksums,
    ids,
  );

  const phrases = readPhrases(header, read, ids);
  const entriesById = new LazyEntryMap(records, lexical);
  const universalMask = read.bytes("scope.universal");
  if (universalMask.length !== count) throw corrupt("the scope mask does not match the entry count");
  const snapshot: KnowledgeIndexSnapshot = Object.freeze({
    entriesById,
    exactIndex: phrases.exactIndex,
    aliasIndex: phrases.aliasIndex,
    relationIndex: new RelationMap(entriesById, header.relationCount),
    lexical,
    entryCount: count,
  });
  const compiled: CompiledSnapshot = {
    lexical,
    // Entries are read through `entriesById` on demand; the dense list is not materialized.
    entries: [],
    universalMask: universalMask.slice(),
    activeByIntegration: readLists(read, "integration", count),
    byDomain: readLists(read, "domain", count),
    phraseTrie: phrases.trie,
    eligibilityCache: createEligibilityCache(count),
  };
  registerCompiledSnapshot(snapshot, compiled);
  return snapshot;
}

function loadFrom(
  source: ByteSource,
  expected: IndexArtifactExpectations,
  fetch: (name: string, offset: number, length: number) => Uint8Array,
  head: { header: KnowledgeIndexArtifactHeader; payloadStart: number },
): { snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader } {
  checkExpectations(head.header, expected);
  try {
    const read = sectionReader(head.header, head.payloadStart, source, fetch);
    const snapshot = assembleLoaded(head.header, head.payloadStart, source, read);
    return { snapshot, header: head.header };
  } catch (caught) {
    if (KnowledgeArtifactError.isInstance(caught)) throw caught;
    throw corrupt(caught instanceof Error ? caught.message : String(caught));
  }
}

/**
 * Loads a snapshot from an artifact's bytes. Checks the magic, format version, header and section checksums,
 * and (when given) that the artifact was built for `expectedCacheKey`; throws {@link KnowledgeArtifactError}
 * otherwise. Entries are decoded from `data` when first read (their records are checked then), so `data` must
 * not be modified afterwards. (`entries`, accepted for compatibility with format 1, is not needed: the artifact
 * holds its entries, and the key check guarantees they are the caller's.)
 */
export function deserializeIndexSnapshot(
  data: Uint8Array,
  expectedCacheKey?: string,
  _entries?: readonly NormalizedKnowledgeEntry[],
): { snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader } {
  return loadBytesWith(data, expectedCacheKey === undefined ? {} : { cacheKey: expectedCacheKey });
}

/**
 * Loads a snapshot from an artifact given as bytes or as a file path (Node only). A file is opened, its header
 * and eager index sections are read (without blocking the event loop beyond one read of a few megabytes), and it
 * stays open for the lazy sections and the entry records, which are read when a turn needs them; it is closed
 * when the snapshot is garbage-collected. Throws
 * {@link KnowledgeArtifactError} (code `unreadable` when the file cannot be opened or read).
 */
export async function loadIndexArtifact(
  artifact: string | Uint8Array,
  expected: IndexArtifactExpectations = {},
): Promise<{ snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader }> {
  if (typeof artifact !== "string") return loadBytesWith(artifact, expected);
  return openIndexArtifact(artifact, expected).load(expected);
}

/**
 * An artifact file opened, with its header read and checked (see {@link openIndexArtifact}): `load` reads the rest
 * (what {@link loadIndexArtifact} does after opening), `close` releases the file when it is not loaded after all.
 * @internal
 */
export type OpenedIndexArtifact = {
  header: KnowledgeIndexArtifactHeader;
  load(
    expected?: IndexArtifactExpectations,
  ): Promise<{ snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader }>;
  close(): void;
};

/**
 * Opens an artifact file and reads and checks its header against `expected`, so a caller can look at the header
 * (its content key) before loading, without opening and reading the file twice. Throws
 * {@link KnowledgeArtifactError} (the file is closed then).
 * @internal
 */
export function openIndexArtifact(
  path: string,
  expected: IndexArtifactExpectations = {},
): OpenedIndexArtifact {
  if (!isLittleEndian()) throw unsupportedPlatform();
  const source = openFileSource(path);
  let head: { header: KnowledgeIndexArtifactHeader; payloadStart: number };
  try {
    head = readHeaderFrom(source);
    checkExpectations(head.header, expected);
  } catch (caught) {
    source.close();
    if (KnowledgeArtifactError.isInstance(caught)) throw caught;
    throw unreadable(path, caught);
  }
  let used = false;
  return {
    header: head.header,
    close() {
      if (!used) source.close();
      used = true;
    },
    async load(loadExpected = {}) {
      if (used) throw new KnowledgeArtifactError("unreadable", `index artifact ${path} was closed`);
      used = true;
      try {
        checkExpectations(head.header, loadExpected);
        return await loadSections(source, head, loadExpected);
      } catch (caught) {
        source.close();
        if (KnowledgeArtifactError.isInstance(caught)) throw caught;
        throw unreadable(path, caught);
      }
    },
  };
}

/** The sections of an opened file after its header: read, checked and assembled (see {@link loadIndexArtifact}). */
async function loadSections(
  source: FileByteSource,
  head: { header: KnowledgeIndexArtifactHeader; payloadStart: number },
  expected: IndexArtifactExpectations,
): Promise<{ snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader }> {
  // The sections read at load lie first (the lazy postings and the entry records after them): up to a
  // gigabyte, one read (without blocking the event loop) brings them all, and the buffer starts at the payload,
  // so the 8-byte aligned sections stay aligned; beyond, each section is read into a buffer of its own (no
  // buffer may exceed 4 GiB).
  const eager = Object.entries(head.header.sections).filter(([, section]) => !section.lazy);
  const regionLength = eager.reduce((end, [, section]) => Math.max(end, section.offset + section.length), 0);
  let fetch: (name: string, offset: number, length: number) => Uint8Array;
  if (regionLength <= ONE_READ_BYTES) {
    // Up to a few megabytes (the eager sections of registries up to about 50,000 entries) they are read
    // in one synchronous read, about a millisecond: no round trip through libuv's thread pool, which a cold
    // process would first have to start.
    const scratch = regionLength <= SYNC_READ_BYTES ? takeLoaderScratch(regionLength) : null;
    if (scratch !== null) source.readInto(head.payloadStart, scratch);
    const region =
      scratch ??
      (regionLength <= SYNC_READ_BYTES
        ? source.read(head.payloadStart, regionLength)
        : await source.readAsync(head.payloadStart, regionLength));
    fetch = (_name, offset, length) => region.subarray(offset, offset + length);
  } else {
    const buffers = new Map<string, Uint8Array>();
    for (const [name, section] of eager)
      buffers.set(name, await source.readAsync(head.payloadStart + section.offset, section.length));
    fetch = (name) => buffers.get(name)!;
  }
  const loaded = loadFrom(source, expected, fetch, head);
  const held = { source, holders: 2 };
  fileCloser?.register(loaded.snapshot.entriesById, held);
  fileCloser?.register(loaded.snapshot.lexical, held);
  return loaded;
}

function loadBytesWith(
  data: Uint8Array,
  expected: IndexArtifactExpectations,
): { snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader } {
  if (!isLittleEndian()) throw unsupportedPlatform();
  const source = memorySource(data);
  const head = readHeaderFrom(source);
  return loadFrom(
    source,
    expected,
    (_name, offset, length) => source.read(head.payloadStart + offset, length, true),
    head,
  );
}
