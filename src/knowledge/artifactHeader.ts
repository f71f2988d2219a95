/**
 * The envelope of an index artifact (see `artifact.ts` for the layout): the format's constants, its typed error,
 * the header and its checks, and where the bytes come from (memory or a file read at positions). Everything here
 * runs before a section is read: a header that declares more than the file holds is refused before anything is
 * read or allocated.
 */
import type { KnowledgeStatus } from "../types/knowledge.js";
import type { ArtifactIndexOptions, LexicalSectionsMeta } from "./artifactLexical.js";
import { checksum32 } from "./checksum.js";
import { hasErrorMarker } from "./errors.js";
import { openRandomAccessFile } from "./runtime.js";

/** Version of the artifact layout written; readers refuse versions other than this and format 4. */
export const INDEX_ARTIFACT_FORMAT_VERSION = 7;
/**
 * Format 4 differs only in holding the blocked tables (`artifactBlocks.ts`) as eager sections: it is still read
 * (its tables are checked whole at load, as before).
 */
const OLDEST_READABLE_FORMAT_VERSION = 4;
/** Largest number of elements per block of a blocked table accepted from a header. */
const MAX_TABLE_BLOCK_ELEMENTS = 1 << 20;
/** The first eight bytes of every artifact. */
export const MAGIC = "LXGINDEX";
/** Magic, format version, header length, header checksum, four zero bytes. */
export const PREFIX_BYTES = 24;
/** Largest header accepted (a header holds counts and the section table: kilobytes in practice). */
const MAX_HEADER_BYTES = 16 * 1024 * 1024;
/** Phrase keys per checked block of the lazy `phrases.keys` section. */
export const KEYS_PER_BLOCK = 1024;

/** UTF-8 decoding that refuses malformed bytes (a damaged record is an error, not replacement characters). */
export const strictDecoder = new TextDecoder("utf-8", { fatal: true });

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
  /**
   * Every integration named by an entry (any status), as written, distinct and sorted by code unit: what a tool
   * lists without decoding every entry (the CLI's `--all-integrations` and its hint). Absent in artifacts written
   * before it was added; readers then collect the names from the entries.
   */
  integrationNames?: string[];
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
  /**
   * Elements per checked block of the blocked tables (format 5; a power of two): see `artifactBlocks.ts`. Absent
   * in format 4, whose tables are eager sections.
   */
  tableBlockElements?: number;
};

/** Whether this host stores numbers little-endian (artifacts are written and read only on such hosts). */
export function isLittleEndian(): boolean {
  return new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
}

/** The refusal of a host that is not little-endian (artifacts store typed arrays as they lie in memory). */
export function unsupportedPlatform(): KnowledgeArtifactError {
  return new KnowledgeArtifactError("unsupported-platform", "index artifacts need a little-endian host");
}

/** `value` rounded up to a multiple of 8 (sections start 8-byte aligned, so typed arrays can view them). */
export function align8(value: number): number {
  return Math.ceil(value / 8) * 8;
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

/** Where an artifact's bytes come from: memory, or a file read at positions. */
export type ByteSource = {
  size: number;
  /** Bytes at `position`; 8-byte aligned when `aligned` is set (typed-array views need it). */
  read(position: number, length: number, aligned?: boolean): Uint8Array;
  /** Copies `target.byteLength` bytes at `position` into `target`. */
  readInto(position: number, target: Uint8Array): void;
  /**
   * Whether {@link read} copies (a file, into a new buffer each time) rather than returning bytes in place (memory):
   * a reader that uses the bytes only briefly then reads them into a buffer of its own, reused.
   */
  readonly copies?: boolean;
  close(): void;
};

/** An artifact held in memory as a {@link ByteSource} (its bytes are read in place, not copied). */
export function memorySource(data: Uint8Array): ByteSource {
  // JavaScript callers pass paths and ArrayBuffers here too: a typed error instead of a TypeError deep inside.
  if (!(data instanceof Uint8Array))
    throw new KnowledgeArtifactError(
      "unreadable",
      `an index artifact must be given as bytes (a Uint8Array or Buffer), not ${describeValue(data)}${typeof data === "string" ? "; to read one from a file, use readIndexArtifactHeaderFrom(path) or loadIndexArtifact's file path" : ""}`,
    );
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

/** A {@link ByteSource} that also reads without blocking the event loop: an artifact file. */
export type FileByteSource = ByteSource & {
  /** Reads `length` bytes at `position` into a new buffer, asynchronously. */
  readAsync(position: number, length: number): Promise<Uint8Array>;
};

/** The `unreadable` error of an artifact file that cannot be opened or read. */
export function unreadable(path: string, caught: unknown): KnowledgeArtifactError {
  return new KnowledgeArtifactError(
    "unreadable",
    `index artifact ${path} cannot be read: ${caught instanceof Error ? caught.message : String(caught)}`,
  );
}

/** Opens an artifact file for reads at any position (Node only); `unreadable` when it cannot be opened. */
export function openFileSource(path: string): FileByteSource {
  let file: ReturnType<typeof openRandomAccessFile>;
  try {
    file = openRandomAccessFile(path);
  } catch (caught) {
    throw unreadable(path, caught);
  }
  return {
    size: file.size,
    copies: true,
    read: (position, length) => file.readSync(position, length),
    readInto: (position, target) => file.readIntoSync(position, target),
    readAsync: (position, length) => file.read(position, length),
    close: () => file.close(),
  };
}

/** The `corrupt` error of a damaged or inconsistent artifact. */
export function corrupt(message: string): KnowledgeArtifactError {
  return new KnowledgeArtifactError("corrupt", `index artifact is damaged: ${message}`);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** Checks the parts of the header that decide what is read and allocated, against the artifact's real size. */
function checkHeader(
  header: unknown,
  payloadBytes: number,
  formatVersion: number,
): KnowledgeIndexArtifactHeader {
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
  const blockElements = record.tableBlockElements;
  if (
    formatVersion >= 5 &&
    !(
      isCount(blockElements) &&
      blockElements >= 1 &&
      blockElements <= MAX_TABLE_BLOCK_ELEMENTS &&
      (blockElements & (blockElements - 1)) === 0
    )
  )
    throw corrupt("the header's table block size is not a power of two");
  return header as KnowledgeIndexArtifactHeader;
}

/** Reads and checks the fixed prefix and the header. */
export function readHeaderFrom(source: ByteSource): {
  header: KnowledgeIndexArtifactHeader;
  payloadStart: number;
} {
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
  if (formatVersion < OLDEST_READABLE_FORMAT_VERSION || formatVersion > INDEX_ARTIFACT_FORMAT_VERSION) {
    throw new KnowledgeArtifactError(
      "unsupported-format-version",
      `index artifact format ${formatVersion} is not supported (this lexground reads formats ${OLDEST_READABLE_FORMAT_VERSION} to ${INDEX_ARTIFACT_FORMAT_VERSION}); rebuild it with lexground build --index`,
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
    parsed = JSON.parse(strictDecoder.decode(headerBytes));
  } catch {
    throw corrupt("the header is not valid JSON");
  }
  const payloadStart = align8(PREFIX_BYTES + headerLength);
  if (payloadStart > source.size) throw corrupt("it ends inside its header");
  return { header: checkHeader(parsed, source.size - payloadStart, formatVersion), payloadStart };
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
  const source = typeof artifact === "string" ? openFileSource(artifact) : memorySource(artifact);
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

/** Throws `content-mismatch` or `options-mismatch` when the header does not meet `expected`. */
export function checkExpectations(
  header: KnowledgeIndexArtifactHeader,
  expected: IndexArtifactExpectations,
): void {
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

/** A value's kind, for an error message (never its content). */
function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return "a string";
  if (typeof value !== "object") return typeof value;
  if (value instanceof ArrayBuffer) return "an ArrayBuffer (wrap it: new Uint8Array(buffer))";
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}
