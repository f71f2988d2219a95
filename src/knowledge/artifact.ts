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
 * `artifactEntries.ts` (entry records), `artifactLexical.ts` (the lexical index's sections), `artifactBlocks.ts`
 * (tables read per block), this file (loading).
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { type BlockedArray, eagerBlockedArray, lazyBlockedArray } from "./artifactBlocks.js";
import { EntryRecords, isStringList, LazyEntryMap } from "./artifactEntries.js";
import {
  type ByteSource,
  checkExpectations,
  corrupt,
  type FileByteSource,
  type IndexArtifactExpectations,
  isLittleEndian,
  KEYS_PER_BLOCK,
  KnowledgeArtifactError,
  type KnowledgeIndexArtifactHeader,
  memorySource,
  openFileSource,
  readHeaderFrom,
  strictDecoder,
  unreadable,
  unsupportedPlatform,
} from "./artifactHeader.js";
import { type LazySection, readLexicalSections, type SectionReader } from "./artifactLexical.js";
import { checksum32 } from "./checksum.js";
import { PhraseListMap, RelationMap } from "./derivedMaps.js";
import { type CompiledSnapshot, createEligibilityCache, registerCompiledSnapshot } from "./knowledgeIndex.js";
import { PhraseTrie } from "./phraseTrie.js";

export {
  contentKeySources,
  INDEX_ARTIFACT_FORMAT_VERSION,
  type IndexArtifactExpectations,
  KnowledgeArtifactError,
  type KnowledgeArtifactErrorCode,
  type KnowledgeArtifactSource,
  type KnowledgeIndexArtifactHeader,
  readIndexArtifactHeader,
  readIndexArtifactHeaderFrom,
  sameIndexOptions,
} from "./artifactHeader.js";
export type { ArtifactIndexOptions } from "./artifactLexical.js";
export { serializeIndexSnapshot, serializeIndexSnapshotChunks } from "./artifactWriter.js";

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

/**
 * Sections read for a load: eager ones checked against their checksums, lazy ones read from `source` on demand
 * (their reads are checked per block by the lexical index).
 */
function sectionReader(
  header: KnowledgeIndexArtifactHeader,
  payloadStart: number,
  source: ByteSource,
  fetch: (name: string, offset: number, length: number) => Uint8Array,
): SectionReader {
  const bytes = (name: string): Uint8Array => {
    const found = header.sections[name];
    if (!found) throw corrupt(`section ${name} is missing`);
    if (found.lazy) throw corrupt(`section ${name} is lazy where it should be read at load`);
    const data = fetch(name, found.offset, found.length);
    if (checksum32(data) !== found.checksum) throw corrupt(`section ${name} does not match its checksum`);
    return data;
  };
  const typed = <T>(
    name: string,
    size: number,
    make: (buffer: ArrayBufferLike, offset: number, length: number) => T,
  ): T => {
    const data = bytes(name);
    if (data.byteLength % size !== 0) throw corrupt(`section ${name} has a partial element`);
    return make(data.buffer, data.byteOffset, data.byteLength / size);
  };
  const lazy = (name: string): LazySection => {
    const found = header.sections[name];
    if (!found) throw corrupt(`section ${name} is missing`);
    if (!found.lazy) throw corrupt(`section ${name} is read at load where it should be lazy`);
    const start = payloadStart + found.offset;
    return {
      byteLength: found.length,
      readInto(byteOffset, target) {
        if (byteOffset < 0 || byteOffset + target.byteLength > found.length)
          throw corrupt(`a read outside section ${name}`);
        try {
          source.readInto(start + byteOffset, target);
        } catch (caught) {
          throw new KnowledgeArtifactError(
            "unreadable",
            `index artifact section ${name} cannot be read: ${caught instanceof Error ? caught.message : String(caught)}`,
          );
        }
      },
    };
  };
  // Lazy in format 5 (its blocks read and checked on demand), eager in format 4 (checked whole here).
  const blocked = <T extends Int32Array | Float64Array>(
    name: string,
    make: (length: number) => T,
    size: number,
    viewOf: (buffer: ArrayBufferLike, offset: number, length: number) => T,
  ): BlockedArray<T> => {
    const found = header.sections[name];
    if (!found?.lazy) return eagerBlockedArray(typed(name, size, viewOf));
    if (header.tableBlockElements === undefined)
      throw corrupt(`section ${name} is lazy without a table block size`);
    return lazyBlockedArray(
      name,
      lazy(name),
      read.uint32(`${name}.checksums`),
      header.tableBlockElements,
      make,
      corrupt,
    );
  };
  const read: SectionReader = {
    has: (name) => header.sections[name] !== undefined,
    bytes,
    json<T>(name: string): T {
      try {
        return JSON.parse(strictDecoder.decode(bytes(name))) as T;
      } catch (caught) {
        if (KnowledgeArtifactError.isInstance(caught)) throw caught;
        throw corrupt(`section ${name} is not valid JSON`);
      }
    },
    int32: (name) => typed(name, 4, (buffer, offset, length) => new Int32Array(buffer, offset, length)),
    uint32: (name) => typed(name, 4, (buffer, offset, length) => new Uint32Array(buffer, offset, length)),
    float64: (name) => typed(name, 8, (buffer, offset, length) => new Float64Array(buffer, offset, length)),
    blockedInt32: (name) =>
      blocked(
        name,
        (length) => new Int32Array(length),
        4,
        (buffer, offset, length) => new Int32Array(buffer, offset, length),
      ),
    blockedFloat64: (name) =>
      blocked(
        name,
        (length) => new Float64Array(length),
        8,
        (buffer, offset, length) => new Float64Array(buffer, offset, length),
      ),
    lazy,
    corrupt,
  };
  return read;
}

/**
 * The exact or alias lists of a loaded artifact: each key's list is checked (its bounds, and that it names existing
 * entries) when it is first read, instead of every list at load.
 */
class CheckedPhraseListMap extends PhraseListMap {
  constructor(
    trie: PhraseTrie,
    offsets: Int32Array,
    docs: Int32Array,
    ids: readonly string[],
    private readonly name: "exact" | "alias",
  ) {
    super(trie, offsets, docs, ids);
  }
  override idsAt(index: number): Set<string> | undefined {
    if (index >= 0 && index + 1 < this.offsets.length) {
      const start = this.offsets[index]!;
      const end = this.offsets[index + 1]!;
      if (!(start >= 0 && end >= start && end <= this.docs.length))
        throw corrupt(`the ${this.name} phrase lists are out of order`);
      const count = this.ids.length;
      for (let position = start; position < end; position++)
        if (this.docs[position]! >>> 0 >= count)
          throw corrupt(`an ${this.name} phrase names a missing entry`);
    }
    return super.idsAt(index);
  }
}

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
  for (let position = 0; position < docs.length; position++)
    if (docs[position]! >>> 0 >= count) throw corrupt(`a ${prefix} list names a missing entry`);
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

  const keyOffsetBlocks = read.blockedFloat64("phrases.keyOffsets");
  const keyOffsets = keyOffsetBlocks.array;
  // The ends, checked here; each block of keys' offsets when the block is first read.
  keyOffsetBlocks.ensure(0, 1);
  keyOffsetBlocks.ensure(header.phraseKeyCount, header.phraseKeyCount + 1);
  const keySection = read.lazy("phrases.keys");
  const keyChecksums = read.uint32("phrases.keys.checksums");
  const keyCount = header.phraseKeyCount;
  if (
    keyOffsets.length !== keyCount + 1 ||
    keyOffsets[0] !== 0 ||
    keyOffsets[keyCount] !== keySection.byteLength ||
    keyChecksums.length !== Math.ceil(keyCount / KEYS_PER_BLOCK)
  )
    throw corrupt("the phrase key table does not match its keys");
  // Filled a block of keys at a time, each checked against its checksum (and its part of the key table checked to
  // rise within the section) before any key of it is decoded.
  const keyBytes = new Uint8Array(keySection.byteLength);
  const keyBlockFilled = new Uint8Array(keyChecksums.length);
  const decodeKey = (index: number): string => {
    const block = Math.floor(index / KEYS_PER_BLOCK);
    if (keyBlockFilled[block] === 0) {
      const firstKey = block * KEYS_PER_BLOCK;
      const endKey = Math.min(keyCount, firstKey + KEYS_PER_BLOCK);
      keyOffsetBlocks.ensure(firstKey, endKey + 1);
      const start = keyOffsets[firstKey]!;
      const end = keyOffsets[endKey]!;
      if (!(start >= 0 && end <= keyBytes.length)) throw corrupt("the phrase key table is out of order");
      for (let key = firstKey; key < endKey; key++)
        if (!(keyOffsets[key + 1]! >= keyOffsets[key]!))
          throw corrupt("the phrase key table is out of order");
      const target = keyBytes.subarray(start, end);
      keySection.readInto(start, target);
      if (checksum32(target) !== keyChecksums[block])
        throw corrupt(`block ${block} of section phrases.keys does not match its checksum`);
      keyBlockFilled[block] = 1;
    }
    try {
      return strictDecoder.decode(keyBytes.subarray(keyOffsets[index]!, keyOffsets[index + 1]!));
    } catch {
      throw corrupt(`phrase key ${index} is not valid UTF-8`);
    }
  };
  const trieTable = read.blockedInt32("phrases.table");
  const trie = PhraseTrie.fromParts(
    {
      nodePrefixLength: read.int32("phrases.nodePrefixLength"),
      nodeKey: read.int32("phrases.nodeKey"),
      nodeSample: read.int32("phrases.nodeSample"),
      table: trieTable.array,
      edgeCount: header.phraseEdgeCount,
    },
    keyCount,
    decodeKey,
    corrupt,
    trieTable,
  );
  const phraseLists = (name: "exact" | "alias") => {
    const offsets = read.int32(`phrases.${name}Offsets`);
    const docs = read.int32(`phrases.${name}Docs`);
    if (offsets.length !== keyCount + 1 || offsets[0] !== 0 || offsets[keyCount] !== docs.length)
      throw corrupt(`the ${name} phrase lists do not match the keys`);
    return new CheckedPhraseListMap(trie, offsets, docs, ids, name);
  };
  const entriesById = new LazyEntryMap(records, lexical);
  const universalMask = read.bytes("scope.universal");
  if (universalMask.length !== count) throw corrupt("the scope mask does not match the entry count");
  const snapshot: KnowledgeIndexSnapshot = Object.freeze({
    entriesById,
    exactIndex: phraseLists("exact"),
    aliasIndex: phraseLists("alias"),
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
    phraseTrie: trie,
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
    const region =
      regionLength <= SYNC_READ_BYTES
        ? source.read(head.payloadStart, regionLength)
        : await source.readAsync(head.payloadStart, regionLength);
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
