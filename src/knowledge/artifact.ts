/**
 * Prebuilt index artifacts: a built snapshot written as one self-contained binary file (format 3), so a replica
 * starts by loading instead of validating, hashing, tokenizing and indexing every entry, and needs nothing else:
 * the entries travel inside the artifact, and its content key (see `buildKnowledgeIndexCacheKey`) is stored in it.
 *
 * Layout (all integers little-endian):
 *   8 bytes   magic "LXGINDEX"
 *   4 bytes   format version (uint32)
 *   4 bytes   header length in bytes (uint32)
 *   4 bytes   checksum of the header bytes (uint32, see `checksum.ts`)
 *   4 bytes   zero
 *   header    UTF-8 JSON: content key, sources, index options, counts, and every section's offset, length and
 *             checksum (offsets relative to the payload start, each aligned to 8 bytes; lazy sections are marked)
 *   sections  typed arrays and UTF-8 blobs read at load: the lexical index's dictionary, offsets and block tables
 *             (`artifactLexical.ts`), the phrase trie and its exact/alias entry lists, the scope lists (status,
 *             integrations, domains), the entry table
 *   lazy      the postings (document ids, contributions, BM25F shares): read per block of terms, and checked
 *             against that block's checksum, when a search first needs one of its terms
 *   entries   last: one UTF-8 JSON record per entry, in dense-id order, located by the entry table
 *
 * Loading reads and checks the eager sections only; posting blocks and entry records are read (from the file,
 * when the artifact is a path) and checked against their own checksums when a turn first needs them: a turn reads
 * the postings of its terms and decodes the entries it renders, nothing else. Formats 1 and 2 (which read every
 * posting at load) are refused with `unsupported-format-version`.
 */
import type {
  KnowledgeEntryKind,
  KnowledgeIndexSnapshot,
  KnowledgeStatus,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import {
  type ArtifactIndexOptions,
  type LexicalSectionsMeta,
  readLexicalSections,
  type SectionReader,
  type WrittenSection,
  writeLexicalSections,
} from "./artifactLexical.js";
import { checksum32 } from "./checksum.js";
import { KNOWLEDGE_ENTRY_KINDS, KNOWLEDGE_STATUSES } from "./defaults.js";
import { DerivedReadOnlyMap, PhraseListMap, RelationMap } from "./derivedMaps.js";
import { hasErrorMarker } from "./errors.js";
import {
  type CompiledSnapshot,
  createEligibilityCache,
  getCompiledSnapshot,
  KnowledgeLexicalIndex,
  registerCompiledSnapshot,
} from "./knowledgeIndex.js";
import { PhraseTrie } from "./phraseTrie.js";
import { openRandomAccessFile } from "./runtime.js";

export type { ArtifactIndexOptions } from "./artifactLexical.js";

/** Version of the artifact layout; readers refuse other versions. */
export const INDEX_ARTIFACT_FORMAT_VERSION = 4;
const MAGIC = "LXGINDEX";
const PREFIX_BYTES = 24;
/** Largest header accepted (a header holds counts and the section table: kilobytes in practice). */
const MAX_HEADER_BYTES = 16 * 1024 * 1024;
/** Decoded entries kept per loaded snapshot (least recently used dropped), and their characters at most. */
const ENTRY_CACHE_LIMIT = 4_096;
const ENTRY_CACHE_MAX_CHARS = 32_000_000;

/** Why an artifact could not be used. */
export type KnowledgeArtifactErrorCode =
  | "not-an-index-artifact"
  | "unsupported-format-version"
  | "corrupt"
  | "content-mismatch"
  | "options-mismatch"
  | "entries-required"
  | "unsupported-platform"
  | "unreadable";

const ARTIFACT_ERROR_MARKER = Symbol.for("lexground.KnowledgeArtifactError");

/** An artifact that cannot be loaded, with a machine-readable `code`. */
export class KnowledgeArtifactError extends Error {
  override readonly name = "KnowledgeArtifactError";
  readonly [ARTIFACT_ERROR_MARKER] = true;
  constructor(
    readonly code: KnowledgeArtifactErrorCode,
    message: string,
  ) {
    super(message);
  }

  /** True for a `KnowledgeArtifactError` from any copy of the package. */
  static isInstance(error: unknown): error is KnowledgeArtifactError {
    return hasErrorMarker(error, ARTIFACT_ERROR_MARKER);
  }
}

/** One source the artifact's entries came from (parsed from its content key). */
export type KnowledgeArtifactSource = { id: string; version: string; entryCount: number };

/** The artifact header (informational fields plus the section table). */
export type KnowledgeIndexArtifactHeader = {
  formatVersion: number;
  /** The content key of the sources and index settings the artifact was built from. */
  cacheKey: string;
  createdBy: string;
  entryCount: number;
  /** The sources (id, version, entry count) the entries came from, in the key's order. */
  sources: KnowledgeArtifactSource[];
  termCount: number;
  /** Distinct exact and alias phrase keys. */
  phraseKeyCount: number;
  /** Edges of the phrase trie. */
  phraseEdgeCount: number;
  /** Entries with at least one related or parent entry. */
  relationCount: number;
  /** Entries per status. */
  statusCounts: Record<KnowledgeStatus, number>;
  options: ArtifactIndexOptions;
  postings: LexicalSectionsMeta["postings"];
  /** Byte length of everything after the header (sections and entry records). */
  payloadLength: number;
  /**
   * Every section's place and checksum; a `lazy` section (postings) is read per block when first needed and
   * checked against its per-block checksums instead (its `checksum` is 0).
   */
  sections: Record<string, { offset: number; length: number; checksum: number; lazy?: boolean }>;
  /** Where the entry records start and how many bytes they take (located by the `entries.offsets` section). */
  entryRecords: { offset: number; length: number };
};

type Section = WrittenSection;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

function isLittleEndian(): boolean {
  return new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
}

function bytesOf(array: Int32Array | Uint32Array | Float64Array | Uint8Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

function align8(value: number): number {
  return Math.ceil(value / 8) * 8;
}

/** Largest piece of encoded text held in one buffer (typed arrays stop at 4 GiB; smaller pieces grow cheaply). */
const CHUNK_BYTES = 256 * 1024 * 1024;

/**
 * UTF-8 encodings of `strings`, back to back, in pieces of at most {@link CHUNK_BYTES} (a string longer than that
 * gets a piece of its own), with each string's start and the total as offsets into the concatenation.
 */
function encodeStrings(strings: readonly string[]): {
  chunks: Uint8Array[];
  offsets: Float64Array;
  length: number;
} {
  const offsets = new Float64Array(strings.length + 1);
  const chunks: Uint8Array[] = [];
  let buffer = new Uint8Array(1 << 16);
  let used = 0;
  let total = 0;
  for (let index = 0; index < strings.length; index++) {
    const text = strings[index]!;
    const needed = used + text.length * 3;
    if (needed > buffer.length) {
      if (needed <= CHUNK_BYTES) {
        const grown = new Uint8Array(Math.min(CHUNK_BYTES, Math.max(needed, buffer.length * 2)));
        grown.set(buffer.subarray(0, used));
        buffer = grown;
      } else {
        if (used > 0) chunks.push(buffer.subarray(0, used));
        buffer = new Uint8Array(Math.max(CHUNK_BYTES, text.length * 3));
        used = 0;
      }
    }
    const written = encoder.encodeInto(text, buffer.subarray(used)).written;
    used += written;
    total += written;
    offsets[index + 1] = total;
  }
  if (used > 0 || chunks.length === 0) chunks.push(buffer.subarray(0, used));
  return { chunks, offsets, length: total };
}

/** One buffer holding `chunks` (for sections, which are read back in one piece). */
function joinChunks(chunks: readonly Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const joined = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return joined;
}

/** An entry as the JSON array of its fields (field names are not repeated per entry). */
function entryRecord(entry: NormalizedKnowledgeEntry): string {
  return JSON.stringify([
    entry.id,
    entry.title,
    entry.summary,
    entry.domain,
    entry.integrations,
    entry.kind,
    entry.status,
    entry.body,
    entry.aliases,
    entry.keywords,
    entry.relatedEntryIds,
    entry.version,
    entry.parentEntryId ?? null,
  ]);
}

/** Phrase keys per checked block of the lazy `phrases.keys` section. */
const KEYS_PER_BLOCK = 1024;

/** Per block of {@link KEYS_PER_BLOCK} keys, the checksum of their bytes in `blob` (`offsets`: each key's start). */
function keyBlockChecksums(blob: Uint8Array, offsets: Float64Array): Uint32Array {
  const keyCount = offsets.length - 1;
  const checksums = new Uint32Array(Math.ceil(keyCount / KEYS_PER_BLOCK));
  for (let block = 0; block < checksums.length; block++) {
    const start = offsets[block * KEYS_PER_BLOCK]!;
    const end = offsets[Math.min(keyCount, (block + 1) * KEYS_PER_BLOCK)]!;
    checksums[block] = checksum32(blob.subarray(start, end));
  }
  return checksums;
}

/** The sources of a content key: its `id:version:count:sha256` parts, decoded. */
export function contentKeySources(cacheKey: string): KnowledgeArtifactSource[] {
  const sources: KnowledgeArtifactSource[] = [];
  for (const part of cacheKey.split("|")) {
    const fields = part.split(":");
    if (fields.length !== 4 || !/^\d+$/.test(fields[2]!) || !/^[0-9a-f]{64}$/.test(fields[3]!)) continue;
    try {
      sources.push({
        id: decodeURIComponent(fields[0]!),
        version: decodeURIComponent(fields[1]!),
        entryCount: Number(fields[2]),
      });
    } catch {
      // Not a source part.
    }
  }
  return sources;
}

/**
 * The lists of a {@link PhraseListMap} over `keyCount` keys with dense ids for positions (keys the trie gained
 * after the lists were made have none).
 */
function denseLists(
  map: PhraseListMap,
  keyCount: number,
  denseOf: (id: string) => number,
): { offsets: Int32Array; docs: Int32Array } {
  const offsets = new Int32Array(keyCount + 1);
  offsets.set(map.offsets.subarray(0, keyCount + 1));
  offsets.fill(map.offsets[map.offsets.length - 1]!, map.offsets.length);
  const docs = new Int32Array(map.docs.length);
  for (let position = 0; position < docs.length; position++)
    docs[position] = denseOf(map.ids[map.docs[position]!]!);
  return { offsets, docs };
}

/**
 * The artifact of a snapshot as pieces to write one after the other (see {@link serializeIndexSnapshot}): no piece
 * is larger than a section or 256 MiB of entry records, so artifacts of any size can be written to a file.
 */
export function serializeIndexSnapshotChunks(
  snapshot: KnowledgeIndexSnapshot,
  cacheKey: string,
): Uint8Array[] {
  if (!isLittleEndian())
    throw new KnowledgeArtifactError("unsupported-platform", "index artifacts need a little-endian host");
  const compiled = getCompiledSnapshot(snapshot);
  if (!(snapshot.lexical instanceof KnowledgeLexicalIndex) || !compiled) {
    throw new TypeError("serializeIndexSnapshot: the snapshot was not built by lexground");
  }
  const lexical = writeLexicalSections(snapshot.lexical);
  const ids = lexical.ids;
  const count = ids.length;
  const denseOf = (id: string): number =>
    snapshot.lexical instanceof KnowledgeLexicalIndex ? snapshot.lexical.denseIdOf(id) : -1;

  // Phrases: the trie's arrays, its keys, and per key the dense ids of the entries it names (exact, alias).
  const trie = compiled.phraseTrie.exportParts();
  const encodedKeys = encodeStrings(trie.keys);
  const keys = { blob: joinChunks(encodedKeys.chunks, encodedKeys.length), offsets: encodedKeys.offsets };
  const phraseLists = (map: Map<string, Set<string>>): { offsets: Int32Array; docs: Int32Array } => {
    // A built snapshot's maps are lists over this trie already: only positions become dense ids.
    if (map instanceof PhraseListMap && map.trie === compiled.phraseTrie)
      return denseLists(map, trie.keys.length, denseOf);
    const offsets = new Int32Array(trie.keys.length + 1);
    const docs: number[] = [];
    trie.keys.forEach((key, index) => {
      for (const id of map.get(key) ?? []) docs.push(denseOf(id));
      offsets[index + 1] = docs.length;
    });
    return { offsets, docs: Int32Array.from(docs) };
  };
  const exact = phraseLists(snapshot.exactIndex);
  const alias = phraseLists(snapshot.aliasIndex);

  // Scopes: what eligibility masks are built from.
  const lists = (map: Map<string, Int32Array>) => {
    const names = [...map.keys()];
    const offsets = new Int32Array(names.length + 1);
    let total = 0;
    names.forEach((name, index) => {
      total += map.get(name)!.length;
      offsets[index + 1] = total;
    });
    const docs = new Int32Array(total);
    names.forEach((name, index) => {
      docs.set(map.get(name)!, offsets[index]!);
    });
    return { names, offsets, docs };
  };
  const integrations = lists(compiled.activeByIntegration);
  const domains = lists(compiled.byDomain);

  // Entries: one record each, in dense order, with a checksum per record.
  const records: string[] = new Array(count);
  let relationCount = 0;
  const statusCounts: Record<KnowledgeStatus, number> = { active: 0, draft: 0, deprecated: 0 };
  for (let doc = 0; doc < count; doc++) {
    const entry = snapshot.entriesById.get(ids[doc]!)!;
    records[doc] = entryRecord(entry);
    statusCounts[entry.status]++;
    if (entry.relatedEntryIds.length > 0 || entry.parentEntryId !== undefined) relationCount++;
  }
  const encodedEntries = encodeStrings(records);
  records.length = 0;
  const entryChecksums = new Uint32Array(count);
  let chunkIndex = 0;
  let chunkStart = 0;
  for (let doc = 0; doc < count; doc++) {
    // A record never spans two pieces.
    let chunk = encodedEntries.chunks[chunkIndex]!;
    while (
      encodedEntries.offsets[doc]! >= chunkStart + chunk.byteLength &&
      chunkIndex + 1 < encodedEntries.chunks.length
    ) {
      chunkStart += chunk.byteLength;
      chunk = encodedEntries.chunks[++chunkIndex]!;
    }
    entryChecksums[doc] = checksum32(
      chunk.subarray(
        encodedEntries.offsets[doc]! - chunkStart,
        encodedEntries.offsets[doc + 1]! - chunkStart,
      ),
    );
  }

  const listed: Section[] = [
    ...lexical.sections,
    // The keys are read when a lookup first needs one (a few per turn), a block of keys at a time.
    { name: "phrases.keys", bytes: keys.blob, lazy: true },
    { name: "phrases.keys.checksums", bytes: bytesOf(keyBlockChecksums(keys.blob, keys.offsets)) },
    { name: "phrases.keyOffsets", bytes: bytesOf(keys.offsets) },
    { name: "phrases.nodePrefixLength", bytes: bytesOf(trie.nodePrefixLength) },
    { name: "phrases.nodeKey", bytes: bytesOf(trie.nodeKey) },
    { name: "phrases.nodeSample", bytes: bytesOf(trie.nodeSample) },
    { name: "phrases.table", bytes: bytesOf(trie.table) },
    { name: "phrases.exactOffsets", bytes: bytesOf(exact.offsets) },
    { name: "phrases.exactDocs", bytes: bytesOf(exact.docs) },
    { name: "phrases.aliasOffsets", bytes: bytesOf(alias.offsets) },
    { name: "phrases.aliasDocs", bytes: bytesOf(alias.docs) },
    { name: "scope.universal", bytes: compiled.universalMask },
    { name: "scope.integrationNames", bytes: encoder.encode(JSON.stringify(integrations.names)) },
    { name: "scope.integrationOffsets", bytes: bytesOf(integrations.offsets) },
    { name: "scope.integrationDocs", bytes: bytesOf(integrations.docs) },
    { name: "scope.domainNames", bytes: encoder.encode(JSON.stringify(domains.names)) },
    { name: "scope.domainOffsets", bytes: bytesOf(domains.offsets) },
    { name: "scope.domainDocs", bytes: bytesOf(domains.docs) },
    { name: "entries.offsets", bytes: bytesOf(encodedEntries.offsets) },
    { name: "entries.checksums", bytes: bytesOf(entryChecksums) },
  ];
  // The sections read at load first (one read brings them all), then the lazy postings, then the entry records.
  const sections = [
    ...listed.filter((section) => !section.lazy),
    ...listed.filter((section) => section.lazy),
  ];
  const table: KnowledgeIndexArtifactHeader["sections"] = {};
  let offset = 0;
  for (const section of sections) {
    table[section.name] = section.lazy
      ? { offset, length: section.bytes.byteLength, checksum: 0, lazy: true }
      : { offset, length: section.bytes.byteLength, checksum: checksum32(section.bytes) };
    offset += align8(section.bytes.byteLength);
  }
  const entryRecords = { offset, length: encodedEntries.length };
  const header: KnowledgeIndexArtifactHeader = {
    formatVersion: INDEX_ARTIFACT_FORMAT_VERSION,
    cacheKey,
    createdBy: "lexground",
    entryCount: count,
    sources: contentKeySources(cacheKey),
    termCount: lexical.meta.termCount,
    phraseKeyCount: trie.keys.length,
    phraseEdgeCount: trie.edgeCount,
    relationCount,
    statusCounts,
    options: lexical.options,
    postings: lexical.meta.postings,
    payloadLength: offset + entryRecords.length,
    sections: table,
    entryRecords,
  };
  const headerBytes = encoder.encode(JSON.stringify(header));
  const payloadStart = align8(PREFIX_BYTES + headerBytes.byteLength);
  const head = new Uint8Array(payloadStart);
  head.set(encoder.encode(MAGIC), 0);
  const view = new DataView(head.buffer);
  view.setUint32(8, INDEX_ARTIFACT_FORMAT_VERSION, true);
  view.setUint32(12, headerBytes.byteLength, true);
  view.setUint32(16, checksum32(headerBytes), true);
  head.set(headerBytes, PREFIX_BYTES);
  const pieces: Uint8Array[] = [head];
  for (const section of sections) {
    pieces.push(section.bytes);
    const padding = align8(section.bytes.byteLength) - section.bytes.byteLength;
    if (padding > 0) pieces.push(new Uint8Array(padding));
  }
  pieces.push(...encodedEntries.chunks);
  return pieces;
}

/**
 * Serializes a snapshot built by lexground into a self-contained artifact tagged with its content key: the
 * lexical index, the phrase and scope structures and every entry. (`options` is accepted for compatibility with
 * format 1, whose artifacts could leave the entries out; format 2 always holds them.) An artifact over 4 GiB (a
 * million entries and more) does not fit one buffer: write {@link serializeIndexSnapshotChunks} instead.
 */
export function serializeIndexSnapshot(
  snapshot: KnowledgeIndexSnapshot,
  cacheKey: string,
  _options: { includeEntries?: boolean } = {},
): Uint8Array {
  const pieces = serializeIndexSnapshotChunks(snapshot, cacheKey);
  const total = pieces.reduce((sum, piece) => sum + piece.byteLength, 0);
  if (total > MAX_SINGLE_BUFFER_BYTES) {
    throw new RangeError(
      `the artifact takes ${total} bytes, more than one buffer holds: write serializeIndexSnapshotChunks() to a file instead`,
    );
  }
  return joinChunks(pieces, total);
}

/** Largest artifact returned as one buffer (typed arrays stop at 4 GiB). */
const MAX_SINGLE_BUFFER_BYTES = 2 ** 32 - 1;

/** Where an artifact's bytes come from: memory, or a file read at positions. */
type ByteSource = {
  size: number;
  /** Bytes at `position`; 8-byte aligned when `aligned` is set (typed-array views need it). */
  read(position: number, length: number, aligned?: boolean): Uint8Array;
  /** Copies `target.byteLength` bytes at `position` into `target`. */
  readInto(position: number, target: Uint8Array): void;
  close(): void;
};

function memorySource(data: Uint8Array): ByteSource {
  return {
    size: data.byteLength,
    read(position, length, aligned) {
      const view = data.subarray(position, position + length);
      // A Buffer from Node's pool may start anywhere; a copy is aligned.
      return aligned && view.byteOffset % 8 !== 0 ? view.slice() : view;
    },
    readInto(position, target) {
      if (position < 0 || position + target.byteLength > data.byteLength)
        throw new RangeError(`read of ${target.byteLength} bytes at ${position} is outside the artifact`);
      target.set(data.subarray(position, position + target.byteLength));
    },
    close() {},
  };
}

function corrupt(message: string): KnowledgeArtifactError {
  return new KnowledgeArtifactError("corrupt", `index artifact is damaged: ${message}`);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** Checks the parts of the header that decide what is read and allocated, against the artifact's real size. */
function checkHeader(header: unknown, payloadBytes: number): KnowledgeIndexArtifactHeader {
  if (typeof header !== "object" || header === null || Array.isArray(header))
    throw corrupt("the header is not an object");
  const record = header as Record<string, unknown>;
  for (const key of [
    "entryCount",
    "termCount",
    "phraseKeyCount",
    "phraseEdgeCount",
    "relationCount",
    "payloadLength",
  ] as const) {
    if (!isCount(record[key])) throw corrupt(`header field ${key} is not a count`);
  }
  if (typeof record.cacheKey !== "string") throw corrupt("the header has no content key");
  if (record.payloadLength !== payloadBytes) {
    throw corrupt(
      `the file holds ${payloadBytes} bytes after its header where ${record.payloadLength as number} were written (truncated or extended)`,
    );
  }
  const sections = record.sections;
  if (typeof sections !== "object" || sections === null || Array.isArray(sections))
    throw corrupt("the header has no section table");
  for (const [name, section] of Object.entries(sections as Record<string, unknown>)) {
    const value = section as Record<string, unknown> | null;
    if (
      typeof value !== "object" ||
      value === null ||
      !isCount(value.offset) ||
      !isCount(value.length) ||
      !isCount(value.checksum) ||
      (value.lazy !== undefined && value.lazy !== true) ||
      value.offset % 8 !== 0 ||
      value.offset + value.length > payloadBytes
    ) {
      throw corrupt(`section ${name} is outside the file`);
    }
  }
  const entryRecords = record.entryRecords as Record<string, unknown> | null;
  if (
    typeof entryRecords !== "object" ||
    entryRecords === null ||
    !isCount(entryRecords.offset) ||
    !isCount(entryRecords.length) ||
    entryRecords.offset + entryRecords.length > payloadBytes
  ) {
    throw corrupt("the entry records are outside the file");
  }
  // The index sections come first, the entry records last (a file's loader reads the sections in one piece).
  for (const [name, section] of Object.entries(
    sections as Record<string, { offset: number; length: number }>,
  )) {
    if (section.offset + section.length > (entryRecords.offset as number))
      throw corrupt(`section ${name} overlaps the entry records`);
  }
  const options = record.options as Record<string, unknown> | null;
  if (typeof options !== "object" || options === null || typeof options.fieldWeights !== "object")
    throw corrupt("the header has no index options");
  if (!Array.isArray(record.postings) || !Array.isArray(record.sources))
    throw corrupt("the header has no posting or source table");
  return header as KnowledgeIndexArtifactHeader;
}

/** Reads and checks the fixed prefix and the header. */
function readHeaderFrom(source: ByteSource): { header: KnowledgeIndexArtifactHeader; payloadStart: number } {
  if (source.size < PREFIX_BYTES) {
    throw new KnowledgeArtifactError("not-an-index-artifact", "not a lexground index artifact (too short)");
  }
  const prefix = source.read(0, PREFIX_BYTES);
  let magic = "";
  for (let index = 0; index < 8; index++) magic += String.fromCharCode(prefix[index]!);
  if (magic !== MAGIC) {
    throw new KnowledgeArtifactError(
      "not-an-index-artifact",
      "not a lexground index artifact (bad magic bytes)",
    );
  }
  const view = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  const formatVersion = view.getUint32(8, true);
  if (formatVersion !== INDEX_ARTIFACT_FORMAT_VERSION) {
    throw new KnowledgeArtifactError(
      "unsupported-format-version",
      `index artifact format ${formatVersion} is not supported (this lexground reads format ${INDEX_ARTIFACT_FORMAT_VERSION}); rebuild it with lexground build --index`,
    );
  }
  const headerLength = view.getUint32(12, true);
  if (headerLength > MAX_HEADER_BYTES || PREFIX_BYTES + headerLength > source.size)
    throw corrupt(`its header length (${headerLength} bytes) exceeds the file`);
  const headerBytes = source.read(PREFIX_BYTES, headerLength);
  if (checksum32(headerBytes) !== view.getUint32(16, true))
    throw corrupt("the header checksum does not match");
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(headerBytes));
  } catch {
    throw corrupt("the header is not valid JSON");
  }
  const payloadStart = align8(PREFIX_BYTES + headerLength);
  if (payloadStart > source.size) throw corrupt("it ends inside its header");
  return { header: checkHeader(parsed, source.size - payloadStart), payloadStart };
}

/** Reads only the header of an artifact (for a cheap compatibility check). */
export function readIndexArtifactHeader(data: Uint8Array): KnowledgeIndexArtifactHeader {
  return readHeaderFrom(memorySource(data)).header;
}

/**
 * Reads and checks the header of an artifact given as bytes or a file path (only the header is read), and that
 * it meets `expected`; throws {@link KnowledgeArtifactError} otherwise.
 */
export function readIndexArtifactHeaderFrom(
  artifact: string | Uint8Array,
  expected: IndexArtifactExpectations = {},
): KnowledgeIndexArtifactHeader {
  let source: ByteSource;
  if (typeof artifact === "string") {
    try {
      const file = openRandomAccessFile(artifact);
      source = {
        size: file.size,
        read: (position, length) => file.readSync(position, length),
        readInto: (position, target) => file.readIntoSync(position, target),
        close: () => file.close(),
      };
    } catch (caught) {
      throw new KnowledgeArtifactError(
        "unreadable",
        `index artifact ${artifact} cannot be read: ${caught instanceof Error ? caught.message : String(caught)}`,
      );
    }
  } else {
    source = memorySource(artifact);
  }
  try {
    const { header } = readHeaderFrom(source);
    checkExpectations(header, expected);
    return header;
  } finally {
    source.close();
  }
}

/** What a caller may require of an artifact before it is used. */
export type IndexArtifactExpectations = {
  /** The content key of the caller's sources and settings: a different key is a `content-mismatch`. */
  cacheKey?: string;
  /** The caller's index settings: different settings are an `options-mismatch`. */
  options?: ArtifactIndexOptions;
};

/** Whether two sets of index settings build the same index. */
export function sameIndexOptions(left: ArtifactIndexOptions, right: ArtifactIndexOptions): boolean {
  const fields = new Set([...Object.keys(left.fieldWeights), ...Object.keys(right.fieldWeights)]);
  for (const field of fields) if (left.fieldWeights[field] !== right.fieldWeights[field]) return false;
  return (
    left.k1 === right.k1 &&
    left.b === right.b &&
    left.analyzer === right.analyzer &&
    left.scoring === right.scoring
  );
}

function describeOptions(options: ArtifactIndexOptions): string {
  const weights = Object.entries(options.fieldWeights)
    .map(([field, weight]) => `${field} ${weight}`)
    .join(", ");
  return `weights ${weights}; k1 ${options.k1}, b ${options.b}, analyzer ${options.analyzer}, scoring ${options.scoring}`;
}

function checkExpectations(header: KnowledgeIndexArtifactHeader, expected: IndexArtifactExpectations): void {
  if (expected.cacheKey !== undefined && header.cacheKey !== expected.cacheKey) {
    throw new KnowledgeArtifactError(
      "content-mismatch",
      "index artifact was built from different content or index settings than the configured sources",
    );
  }
  if (expected.options !== undefined && !sameIndexOptions(header.options, expected.options)) {
    throw new KnowledgeArtifactError(
      "options-mismatch",
      `index artifact was built with other index settings (${describeOptions(header.options)}) than this engine's (${describeOptions(expected.options)}); rebuild it with the same preset and retrieval settings`,
    );
  }
}

/** A loaded artifact's entries, decoded from their records on demand. */
class EntryRecords {
  private readonly cache = new Map<number, NormalizedKnowledgeEntry>();
  private cachedChars = 0;

  constructor(
    private readonly source: ByteSource,
    private readonly start: number,
    private readonly length: number,
    private readonly offsets: Float64Array,
    private readonly checksums: Uint32Array,
    readonly ids: readonly string[],
  ) {}

  /** The entry of a dense id (decoded, checked and frozen on first use; kept in a bounded cache). */
  at(doc: number): NormalizedKnowledgeEntry {
    const cached = this.cache.get(doc);
    if (cached) {
      this.cache.delete(doc);
      this.cache.set(doc, cached);
      return cached;
    }
    const from = this.offsets[doc]!;
    const to = this.offsets[doc + 1]!;
    // The entry table is checked per record when it is read (not all of it at load).
    if (!(from >= 0 && to >= from && to <= this.length))
      throw corrupt(`the entry table places entry ${JSON.stringify(this.ids[doc])} outside the records`);
    const bytes = this.source.read(this.start + from, to - from);
    if (checksum32(bytes) !== this.checksums[doc])
      throw corrupt(`the record of entry ${JSON.stringify(this.ids[doc])} does not match its checksum`);
    const entry = decodeEntryRecord(bytes, this.ids[doc]!);
    const chars = entry.body.length + entry.summary.length + entry.title.length;
    this.cache.set(doc, entry);
    this.cachedChars += chars;
    while (
      this.cache.size > ENTRY_CACHE_LIMIT ||
      (this.cachedChars > ENTRY_CACHE_MAX_CHARS && this.cache.size > 1)
    ) {
      const [oldest, evicted] = this.cache.entries().next().value!;
      this.cache.delete(oldest);
      this.cachedChars -= evicted.body.length + evicted.summary.length + evicted.title.length;
    }
    return entry;
  }
}

const KINDS = new Set<string>(KNOWLEDGE_ENTRY_KINDS);
const STATUSES = new Set<string>(KNOWLEDGE_STATUSES);

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

/** An entry from its record, checked field by field (a record that passed its checksum was written by us). */
function decodeEntryRecord(bytes: Uint8Array, expectedId: string): NormalizedKnowledgeEntry {
  let record: unknown;
  try {
    record = JSON.parse(decoder.decode(bytes));
  } catch {
    throw corrupt(`the record of entry ${JSON.stringify(expectedId)} is not valid JSON`);
  }
  const fields = record as unknown[];
  if (
    !Array.isArray(fields) ||
    fields.length !== 13 ||
    fields[0] !== expectedId ||
    ![1, 2, 3, 7, 11].every((index) => typeof fields[index] === "string") ||
    !KINDS.has(fields[5] as string) ||
    !STATUSES.has(fields[6] as string) ||
    ![4, 8, 9, 10].every((index) => isStringList(fields[index])) ||
    (fields[12] !== null && typeof fields[12] !== "string")
  ) {
    throw corrupt(`the record of entry ${JSON.stringify(expectedId)} is not an entry`);
  }
  const entry: NormalizedKnowledgeEntry = {
    id: expectedId,
    title: fields[1] as string,
    summary: fields[2] as string,
    domain: fields[3] as string,
    integrations: Object.freeze(fields[4] as string[]) as string[],
    kind: fields[5] as KnowledgeEntryKind,
    status: fields[6] as KnowledgeStatus,
    body: fields[7] as string,
    aliases: Object.freeze(fields[8] as string[]) as string[],
    keywords: Object.freeze(fields[9] as string[]) as string[],
    relatedEntryIds: Object.freeze(fields[10] as string[]) as string[],
    version: fields[11] as string,
  };
  if (fields[12] !== null) entry.parentEntryId = fields[12] as string;
  return Object.freeze(entry);
}

/** `entriesById` of a loaded snapshot: entries are decoded when read, in dense (id) order when iterated. */
class LazyEntryMap extends DerivedReadOnlyMap<NormalizedKnowledgeEntry> {
  constructor(
    private readonly records: EntryRecords,
    private readonly lexical: KnowledgeLexicalIndex,
  ) {
    super();
  }
  override get(id: string): NormalizedKnowledgeEntry | undefined {
    const doc = typeof id === "string" ? this.lexical.denseIdOf(id) : -1;
    return doc < 0 ? undefined : this.records.at(doc);
  }
  override has(id: string): boolean {
    return typeof id === "string" && this.lexical.denseIdOf(id) >= 0;
  }
  override get size(): number {
    return this.records.ids.length;
  }
  override *entries(): MapIterator<[string, NormalizedKnowledgeEntry]> {
    for (let doc = 0; doc < this.records.ids.length; doc++)
      yield [this.records.ids[doc]!, this.records.at(doc)];
  }
  override *keys(): MapIterator<string> {
    yield* this.records.ids;
  }
  override *values(): MapIterator<NormalizedKnowledgeEntry> {
    for (let doc = 0; doc < this.records.ids.length; doc++) yield this.records.at(doc);
  }
}

/** Index sections up to this size are read from a file in one piece. */
const ONE_READ_BYTES = 1024 * 1024 * 1024;

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
  return {
    has: (name) => header.sections[name] !== undefined,
    bytes,
    json<T>(name: string): T {
      try {
        return JSON.parse(decoder.decode(bytes(name))) as T;
      } catch (caught) {
        if (KnowledgeArtifactError.isInstance(caught)) throw caught;
        throw corrupt(`section ${name} is not valid JSON`);
      }
    },
    int32: (name) => typed(name, 4, (buffer, offset, length) => new Int32Array(buffer, offset, length)),
    uint32: (name) => typed(name, 4, (buffer, offset, length) => new Uint32Array(buffer, offset, length)),
    float64: (name) => typed(name, 8, (buffer, offset, length) => new Float64Array(buffer, offset, length)),
    lazy(name) {
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
    },
    corrupt,
  };
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

  const keyOffsets = read.float64("phrases.keyOffsets");
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
      return decoder.decode(keyBytes.subarray(keyOffsets[index]!, keyOffsets[index + 1]!));
    } catch {
      throw corrupt(`phrase key ${index} is not valid UTF-8`);
    }
  };
  const trie = PhraseTrie.fromParts(
    {
      nodePrefixLength: read.int32("phrases.nodePrefixLength"),
      nodeKey: read.int32("phrases.nodeKey"),
      nodeSample: read.int32("phrases.nodeSample"),
      table: read.int32("phrases.table"),
      edgeCount: header.phraseEdgeCount,
    },
    keyCount,
    decodeKey,
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
 * and index sections are read without blocking the event loop, and it stays open for the entry records, which
 * are read when a turn needs them; it is closed when the snapshot is garbage-collected. Throws
 * {@link KnowledgeArtifactError} (code `unreadable` when the file cannot be opened or read).
 */
export async function loadIndexArtifact(
  artifact: string | Uint8Array,
  expected: IndexArtifactExpectations = {},
): Promise<{ snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader }> {
  if (typeof artifact !== "string") return loadBytesWith(artifact, expected);
  if (!isLittleEndian())
    throw new KnowledgeArtifactError("unsupported-platform", "index artifacts need a little-endian host");
  let file: ReturnType<typeof openRandomAccessFile>;
  try {
    file = openRandomAccessFile(artifact);
  } catch (caught) {
    throw new KnowledgeArtifactError(
      "unreadable",
      `index artifact ${artifact} cannot be read: ${caught instanceof Error ? caught.message : String(caught)}`,
    );
  }
  const source: ByteSource = {
    size: file.size,
    read: (position, length) => file.readSync(position, length),
    readInto: (position, target) => file.readIntoSync(position, target),
    close: () => file.close(),
  };
  try {
    const head = readHeaderFrom(source);
    checkExpectations(head.header, expected);
    // The sections read at load lie first (the lazy postings and the entry records after them): up to a
    // gigabyte, one read (without blocking the event loop) brings them all, and the buffer starts at the payload,
    // so the 8-byte aligned sections stay aligned; beyond, each section is read into a buffer of its own (no
    // buffer may exceed 4 GiB).
    const eager = Object.entries(head.header.sections).filter(([, section]) => !section.lazy);
    const regionLength = eager.reduce(
      (end, [, section]) => Math.max(end, section.offset + section.length),
      0,
    );
    let fetch: (name: string, offset: number, length: number) => Uint8Array;
    if (regionLength <= ONE_READ_BYTES) {
      const region = await file.read(head.payloadStart, regionLength);
      fetch = (_name, offset, length) => region.subarray(offset, offset + length);
    } else {
      const buffers = new Map<string, Uint8Array>();
      for (const [name, section] of eager)
        buffers.set(name, await file.read(head.payloadStart + section.offset, section.length));
      fetch = (name) => buffers.get(name)!;
    }
    const loaded = loadFrom(source, expected, fetch, head);
    const held = { source, holders: 2 };
    fileCloser?.register(loaded.snapshot.entriesById, held);
    fileCloser?.register(loaded.snapshot.lexical, held);
    return loaded;
  } catch (caught) {
    file.close();
    if (KnowledgeArtifactError.isInstance(caught)) throw caught;
    throw new KnowledgeArtifactError(
      "unreadable",
      `index artifact ${artifact} cannot be read: ${caught instanceof Error ? caught.message : String(caught)}`,
    );
  }
}

function loadBytesWith(
  data: Uint8Array,
  expected: IndexArtifactExpectations,
): { snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader } {
  if (!isLittleEndian())
    throw new KnowledgeArtifactError("unsupported-platform", "index artifacts need a little-endian host");
  const source = memorySource(data);
  const head = readHeaderFrom(source);
  return loadFrom(
    source,
    expected,
    (_name, offset, length) => source.read(head.payloadStart + offset, length, true),
    head,
  );
}
