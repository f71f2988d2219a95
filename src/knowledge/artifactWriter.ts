/**
 * Writing an index artifact (see `artifact.ts` for the layout): the sections of a built snapshot, the header that
 * places them, and the entry records, as pieces to write one after the other.
 */
import type { KnowledgeIndexSnapshot, KnowledgeStatus } from "../types/knowledge.js";
import { blockedSections, bytesOf, TABLE_BLOCK_ELEMENTS } from "./artifactBlocks.js";
import { entryRecord } from "./artifactEntries.js";
import {
  align8,
  contentKeySources,
  INDEX_ARTIFACT_FORMAT_VERSION,
  isLittleEndian,
  KEYS_PER_BLOCK,
  type KnowledgeIndexArtifactHeader,
  MAGIC,
  PREFIX_BYTES,
  unsupportedPlatform,
} from "./artifactHeader.js";
import { type WrittenSection, writeLexicalSections } from "./artifactLexical.js";
import { checksum32 } from "./checksum.js";
import { PhraseListMap } from "./derivedMaps.js";
import { getCompiledSnapshot, KnowledgeLexicalIndex } from "./knowledgeIndex.js";

const encoder = new TextEncoder();

/** How an artifact is written (tests use small blocks, so that their small registries span many). */
export type ArtifactWriteOptions = {
  /** Elements per checked block of the blocked tables (a power of two; default {@link TABLE_BLOCK_ELEMENTS}). */
  tableBlockElements?: number;
};

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

/**
 * The lists of a {@link PhraseListMap} over `keyCount` keys with dense ids for positions (keys the trie gained
 * after the lists were made have none).
 */
function denseLists(
  map: PhraseListMap,
  keyCount: number,
  denseOf: (id: string) => number,
): { offsets: Int32Array; docs: Int32Array } {
  map.readAll();
  const offsets = new Int32Array(keyCount + 1);
  offsets.set(map.offsets.subarray(0, keyCount + 1));
  offsets.fill(map.offsets[map.offsets.length - 1]!, map.offsets.length);
  const docs = new Int32Array(map.docs.length);
  for (let position = 0; position < docs.length; position++)
    docs[position] = denseOf(map.ids.at(map.docs[position]!)!);
  return { offsets, docs };
}

/**
 * The artifact of a snapshot as pieces to write one after the other (see {@link serializeIndexSnapshot}): no piece
 * is larger than a section or 256 MiB of entry records, so artifacts of any size can be written to a file.
 */
export function serializeIndexSnapshotChunks(
  snapshot: KnowledgeIndexSnapshot,
  cacheKey: string,
  options: ArtifactWriteOptions = {},
): Uint8Array[] {
  const blockElements = options.tableBlockElements ?? TABLE_BLOCK_ELEMENTS;
  if (!(Number.isInteger(blockElements) && blockElements >= 1 && (blockElements & (blockElements - 1)) === 0))
    throw new RangeError("serializeIndexSnapshot: tableBlockElements must be a power of two");
  if (!isLittleEndian()) throw unsupportedPlatform();
  const compiled = getCompiledSnapshot(snapshot);
  if (!(snapshot.lexical instanceof KnowledgeLexicalIndex) || !compiled) {
    throw new TypeError("serializeIndexSnapshot: the snapshot was not built by lexground");
  }
  const lexical = writeLexicalSections(snapshot.lexical, blockElements);
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
  const integrationNames = new Set<string>();
  for (let doc = 0; doc < count; doc++) {
    const entry = snapshot.entriesById.get(ids[doc]!)!;
    records[doc] = entryRecord(entry);
    statusCounts[entry.status]++;
    for (const integration of entry.integrations) integrationNames.add(integration);
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

  const listed: WrittenSection[] = [
    ...lexical.sections,
    // The keys are read when a lookup first needs one (a few per turn), a block of keys at a time.
    { name: "phrases.keys", bytes: keys.blob, lazy: true },
    { name: "phrases.keys.checksums", bytes: bytesOf(keyBlockChecksums(keys.blob, keys.offsets)) },
    ...blockedSections("phrases.keyOffsets", keys.offsets, blockElements),
    { name: "phrases.nodePrefixLength", bytes: bytesOf(trie.nodePrefixLength) },
    { name: "phrases.nodeKey", bytes: bytesOf(trie.nodeKey) },
    { name: "phrases.nodeSample", bytes: bytesOf(trie.nodeSample) },
    ...blockedSections("phrases.table", trie.table, blockElements),
    // Blocked tables (format 6): a turn reads the lists of a few keys.
    ...blockedSections("phrases.exactOffsets", exact.offsets, blockElements),
    ...blockedSections("phrases.exactDocs", exact.docs, blockElements),
    ...blockedSections("phrases.aliasOffsets", alias.offsets, blockElements),
    ...blockedSections("phrases.aliasDocs", alias.docs, blockElements),
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
    integrationNames: [...integrationNames].sort(),
    options: lexical.options,
    postings: lexical.meta.postings,
    payloadLength: offset + entryRecords.length,
    sections: table,
    entryRecords,
    tableBlockElements: blockElements,
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
  options: { includeEntries?: boolean } & ArtifactWriteOptions = {},
): Uint8Array {
  const pieces = serializeIndexSnapshotChunks(snapshot, cacheKey, options);
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
