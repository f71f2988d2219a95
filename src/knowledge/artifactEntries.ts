/**
 * The entries of an index artifact: each written as one JSON record (an array of its fields; names are not
 * repeated per entry), and read back from a loaded artifact only when a turn needs it, checked against its own
 * checksum, and kept in a bounded cache.
 */
import type { KnowledgeEntryKind, KnowledgeStatus, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { type ByteSource, corrupt, strictDecoder } from "./artifactHeader.js";
import { checksum32 } from "./checksum.js";
import { KNOWLEDGE_ENTRY_KINDS, KNOWLEDGE_STATUSES } from "./defaults.js";
import type { EntryIds } from "./denseIds.js";
import { DerivedReadOnlyMap } from "./derivedMaps.js";
import type { KnowledgeLexicalIndex } from "./knowledgeIndex.js";

/** Decoded entries kept per loaded snapshot (least recently used dropped), and their characters at most. */
const ENTRY_CACHE_LIMIT = 4_096;
const ENTRY_CACHE_MAX_CHARS = 32_000_000;
/** Records up to this size are read into one buffer reused for each (see `EntryRecords.recordBytes`). */
const RECORD_SCRATCH_BYTES = 16 * 1024;

/** An entry as the JSON array of its fields (field names are not repeated per entry). */
export function entryRecord(entry: NormalizedKnowledgeEntry): string {
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

/** A loaded artifact's entries, decoded from their records on demand. */
export class EntryRecords {
  private readonly cache = new Map<number, NormalizedKnowledgeEntry>();
  private cachedChars = 0;
  /** Where records read from a file go (see {@link recordBytes}). */
  private scratch: Uint8Array | null = null;

  constructor(
    private readonly source: ByteSource,
    private readonly start: number,
    private readonly length: number,
    private readonly offsets: Float64Array,
    private readonly checksums: Uint32Array,
    readonly ids: EntryIds,
  ) {}

  /**
   * The bytes of a record: read from a file into {@link scratch}, reused by every record up to its size (a record is
   * decoded right away and its bytes not kept: read into a new buffer each, a 10k first turn's 15 records touched
   * ~15 fresh pages, ~15 microseconds each on some virtual machines); from memory in place.
   */
  private recordBytes(position: number, length: number): Uint8Array {
    if (!this.source.copies || length > RECORD_SCRATCH_BYTES) return this.source.read(position, length);
    this.scratch ??= new Uint8Array(RECORD_SCRATCH_BYTES);
    const bytes = this.scratch.subarray(0, length);
    this.source.readInto(position, bytes);
    return bytes;
  }

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
      throw corrupt(`the entry table places entry ${JSON.stringify(this.ids.at(doc))} outside the records`);
    const bytes = this.recordBytes(this.start + from, to - from);
    if (checksum32(bytes) !== this.checksums[doc])
      throw corrupt(`the record of entry ${JSON.stringify(this.ids.at(doc))} does not match its checksum`);
    const entry = decodeEntryRecord(bytes, this.ids.at(doc)!);
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

export function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

/** An entry from its record, checked field by field (a record that passed its checksum was written by us). */
function decodeEntryRecord(bytes: Uint8Array, expectedId: string): NormalizedKnowledgeEntry {
  let record: unknown;
  try {
    record = JSON.parse(strictDecoder.decode(bytes));
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
export class LazyEntryMap extends DerivedReadOnlyMap<NormalizedKnowledgeEntry> {
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
      yield [this.records.ids.at(doc)!, this.records.at(doc)];
  }
  override *keys(): MapIterator<string> {
    for (let doc = 0; doc < this.records.ids.length; doc++) yield this.records.ids.at(doc)!;
  }
  override *values(): MapIterator<NormalizedKnowledgeEntry> {
    for (let doc = 0; doc < this.records.ids.length; doc++) yield this.records.at(doc);
  }
}
