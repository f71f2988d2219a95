/**
 * Prebuilt index artifacts: a built snapshot written as one binary file, so replicas start by loading instead of
 * tokenizing and indexing every entry.
 *
 * Layout (all integers little-endian):
 *   8 bytes   magic "LXGINDEX"
 *   4 bytes   format version (uint32)
 *   4 bytes   header length in bytes (uint32)
 *   header    UTF-8 JSON: format version, cache key, index options, counts, and the sections' offsets/lengths
 *   sections  typed arrays and UTF-8 JSON blobs, each aligned to 8 bytes, offsets relative to the payload start
 *   32 bytes  SHA-256 of everything before it
 *
 * The cache key (see `buildKnowledgeIndexCacheKey`) identifies the content and index parameters the artifact was
 * built from; a loader compares it with the key of the sources it was configured with and refuses a mismatch.
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { assembleSnapshot, compareCodeUnits, KnowledgeLexicalIndex } from "./knowledgeIndex.js";
import { createSha256 } from "./sha256.js";

/** Version of the artifact layout; readers refuse other versions. */
export const INDEX_ARTIFACT_FORMAT_VERSION = 1;
const MAGIC = "LXGINDEX";
const DIGEST_BYTES = 32;

/** Why an artifact could not be used. */
export type KnowledgeArtifactErrorCode =
  | "not-an-index-artifact"
  | "unsupported-format-version"
  | "corrupt"
  | "content-mismatch"
  | "entries-required"
  | "unsupported-platform";

/** An artifact that cannot be loaded, with a machine-readable `code`. */
export class KnowledgeArtifactError extends Error {
  override readonly name = "KnowledgeArtifactError";
  constructor(
    readonly code: KnowledgeArtifactErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The artifact header (informational fields plus the section table). */
export type KnowledgeIndexArtifactHeader = {
  formatVersion: number;
  cacheKey: string;
  createdBy: string;
  entryCount: number;
  termCount: number;
  options: {
    fieldWeights: Record<string, number>;
    k1: number;
    b: number;
    analyzer: string;
    scoring: string;
  };
  postings: { active: boolean; postingCount: number }[];
  sections: Record<string, { offset: number; length: number }>;
};

type Section = { name: string; bytes: Uint8Array };

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

function isLittleEndian(): boolean {
  return new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
}

function bytesEqual(left: Uint8Array, right: Uint8Array): boolean {
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index++) if (left[index] !== right[index]) return false;
  return true;
}

function bytesOf(array: Int32Array | Float64Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/**
 * Serializes a snapshot built by lexground into an artifact tagged with its cache key. By default the entries
 * themselves are left out: whoever loads the artifact has them already (the manifest or sources it was built
 * from, which the cache key check compares anyway), and they are often most of the size. Pass
 * `{ includeEntries: true }` for an artifact that loads on its own.
 */
export function serializeIndexSnapshot(
  snapshot: KnowledgeIndexSnapshot,
  cacheKey: string,
  options: { includeEntries?: boolean } = {},
): Uint8Array {
  if (!isLittleEndian())
    throw new KnowledgeArtifactError("unsupported-platform", "index artifacts need a little-endian host");
  if (!(snapshot.lexical instanceof KnowledgeLexicalIndex)) {
    throw new TypeError("serializeIndexSnapshot: the snapshot's lexical index was not built by lexground");
  }
  const parts = snapshot.lexical.exportParts();
  const entries = parts.ids.map((id) => snapshot.entriesById.get(id)!);
  const sections: Section[] = [
    ...(options.includeEntries ? [{ name: "entries", bytes: encoder.encode(JSON.stringify(entries)) }] : []),
    { name: "ids", bytes: encoder.encode(JSON.stringify(parts.ids)) },
    { name: "terms", bytes: encoder.encode(JSON.stringify(parts.terms)) },
    { name: "averageLengths", bytes: bytesOf(parts.averageLengths) },
    { name: "ranks", bytes: bytesOf(parts.ranks) },
  ];
  parts.postings.forEach((postings, index) => {
    if (!postings.active) return;
    sections.push({ name: `offsets.${index}`, bytes: bytesOf(postings.offsets) });
    sections.push({ name: `docs.${index}`, bytes: bytesOf(postings.docs) });
    sections.push({ name: `contributions.${index}`, bytes: bytesOf(postings.contributions) });
  });
  if (parts.bm25fShares) sections.push({ name: "bm25fShares", bytes: bytesOf(parts.bm25fShares) });

  const table: KnowledgeIndexArtifactHeader["sections"] = {};
  let offset = 0;
  for (const section of sections) {
    table[section.name] = { offset, length: section.bytes.byteLength };
    offset += align8(section.bytes.byteLength);
  }
  const header: KnowledgeIndexArtifactHeader = {
    formatVersion: INDEX_ARTIFACT_FORMAT_VERSION,
    cacheKey,
    createdBy: "lexground",
    entryCount: parts.ids.length,
    termCount: parts.terms.length,
    options: {
      fieldWeights: { ...parts.fieldWeights },
      k1: parts.k1,
      b: parts.b,
      analyzer: parts.analyzer,
      scoring: parts.scoring,
    },
    postings: parts.postings.map((postings) => ({
      active: postings.active,
      postingCount: postings.docs.length,
    })),
    sections: table,
  };
  const headerBytes = encoder.encode(JSON.stringify(header));
  const payloadStart = align8(16 + headerBytes.byteLength);
  const total = payloadStart + offset + DIGEST_BYTES;
  const output = new Uint8Array(total);
  output.set(encoder.encode(MAGIC), 0);
  const view = new DataView(output.buffer);
  view.setUint32(8, INDEX_ARTIFACT_FORMAT_VERSION, true);
  view.setUint32(12, headerBytes.byteLength, true);
  output.set(headerBytes, 16);
  for (const section of sections) output.set(section.bytes, payloadStart + table[section.name]!.offset);
  output.set(
    createSha256()
      .update(output.subarray(0, total - DIGEST_BYTES))
      .digest(),
    total - DIGEST_BYTES,
  );
  return output;
}

function align8(value: number): number {
  return (value + 7) & ~7;
}

/** Reads only the header of an artifact (for a cheap compatibility check). */
export function readIndexArtifactHeader(data: Uint8Array): KnowledgeIndexArtifactHeader {
  if (data.byteLength < 16 + DIGEST_BYTES || decoder.decode(data.subarray(0, 8)) !== MAGIC) {
    throw new KnowledgeArtifactError(
      "not-an-index-artifact",
      "not a lexground index artifact (bad magic bytes)",
    );
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const formatVersion = view.getUint32(8, true);
  if (formatVersion !== INDEX_ARTIFACT_FORMAT_VERSION) {
    throw new KnowledgeArtifactError(
      "unsupported-format-version",
      `index artifact format ${formatVersion} is not supported (this lexground reads format ${INDEX_ARTIFACT_FORMAT_VERSION}); rebuild it`,
    );
  }
  const headerLength = view.getUint32(12, true);
  if (16 + headerLength > data.byteLength - DIGEST_BYTES)
    throw new KnowledgeArtifactError("corrupt", "index artifact header is truncated");
  try {
    return JSON.parse(decoder.decode(data.subarray(16, 16 + headerLength))) as KnowledgeIndexArtifactHeader;
  } catch {
    throw new KnowledgeArtifactError("corrupt", "index artifact header is not valid JSON");
  }
}

/**
 * Loads a snapshot from an artifact. Checks the magic, format version and SHA-256 digest, and (when given) that
 * the artifact was built for `expectedCacheKey`; throws {@link KnowledgeArtifactError} otherwise.
 *
 * `entries`, when given together with `expectedCacheKey`, are the caller's normalized entries of exactly the
 * content that key names (the engine has them from validation); they are used instead of decoding the artifact's
 * own copy, which is the larger part of loading.
 */
export function deserializeIndexSnapshot(
  data: Uint8Array,
  expectedCacheKey?: string,
  entries?: readonly NormalizedKnowledgeEntry[],
): { snapshot: KnowledgeIndexSnapshot; header: KnowledgeIndexArtifactHeader } {
  if (!isLittleEndian())
    throw new KnowledgeArtifactError("unsupported-platform", "index artifacts need a little-endian host");
  const header = readIndexArtifactHeader(data);
  if (expectedCacheKey !== undefined && header.cacheKey !== expectedCacheKey) {
    throw new KnowledgeArtifactError(
      "content-mismatch",
      "index artifact was built from different content or index settings than the configured sources",
    );
  }
  const digestAt = data.byteLength - DIGEST_BYTES;
  const digest = createSha256().update(data.subarray(0, digestAt)).digest();
  if (!bytesEqual(digest, data.subarray(digestAt)))
    throw new KnowledgeArtifactError("corrupt", "index artifact checksum does not match");
  // Typed-array views need 8-byte alignment; a Buffer from a pool may start anywhere.
  const aligned = data.byteOffset % 8 === 0 ? data : data.slice();
  const headerLength = new DataView(aligned.buffer, aligned.byteOffset).getUint32(12, true);
  const payloadStart = aligned.byteOffset + align8(16 + headerLength);
  const section = (name: string): { offset: number; length: number } => {
    const found = header.sections[name];
    if (!found || payloadStart + found.offset + found.length > aligned.byteOffset + digestAt) {
      throw new KnowledgeArtifactError(
        "corrupt",
        `index artifact section ${name} is missing or out of bounds`,
      );
    }
    return found;
  };
  const int32 = (name: string): Int32Array => {
    const { offset, length } = section(name);
    return new Int32Array(aligned.buffer, payloadStart + offset, length / 4);
  };
  const float64 = (name: string): Float64Array => {
    const { offset, length } = section(name);
    return new Float64Array(aligned.buffer, payloadStart + offset, length / 8);
  };
  const json = <T>(name: string): T => {
    const { offset, length } = section(name);
    return JSON.parse(decoder.decode(new Uint8Array(aligned.buffer, payloadStart + offset, length))) as T;
  };
  try {
    if ((entries === undefined || expectedCacheKey === undefined) && !header.sections.entries) {
      throw new KnowledgeArtifactError(
        "entries-required",
        "this index artifact does not contain its entries: load it together with the sources used to build it",
      );
    }
    const denseEntries =
      entries !== undefined && expectedCacheKey !== undefined
        ? entries.slice().sort((left, right) => compareCodeUnits(left.id, right.id))
        : json<NormalizedKnowledgeEntry[]>("entries").map((entry) => {
            for (const key of ["integrations", "aliases", "keywords", "relatedEntryIds"] as const) {
              Object.freeze(entry[key]);
            }
            return Object.freeze(entry);
          });
    const ids = json<string[]>("ids");
    if (denseEntries.length !== ids.length || denseEntries.some((entry, index) => entry.id !== ids[index])) {
      throw new KnowledgeArtifactError(
        "content-mismatch",
        "index artifact entries do not match the given entries",
      );
    }
    const postings = header.postings.map((info, index) =>
      info.active
        ? {
            active: true,
            offsets: int32(`offsets.${index}`),
            docs: int32(`docs.${index}`),
            contributions: float64(`contributions.${index}`),
          }
        : {
            active: false,
            offsets: new Int32Array(0),
            docs: new Int32Array(0),
            contributions: new Float64Array(0),
          },
    );
    const lexical = KnowledgeLexicalIndex.fromParts({
      fieldWeights: header.options.fieldWeights as never,
      k1: header.options.k1,
      b: header.options.b,
      analyzer: header.options.analyzer as never,
      scoring: header.options.scoring as never,
      ids: denseEntries.map((entry) => entry.id),
      terms: json<string[]>("terms"),
      averageLengths: float64("averageLengths"),
      ranks: int32("ranks"),
      postings,
      bm25fShares: header.sections.bm25fShares ? float64("bm25fShares") : null,
    });
    return { snapshot: assembleSnapshot(denseEntries, lexical), header };
  } catch (caught) {
    if (caught instanceof KnowledgeArtifactError) throw caught;
    throw new KnowledgeArtifactError("corrupt", `index artifact could not be read: ${String(caught)}`);
  }
}
