/**
 * The lexical index's part of an index artifact: which sections it writes and how it is read back. Kept apart
 * from the envelope (`artifact.ts`: header, checksums, entries, phrases, scopes) so that a change of what the
 * lexical index stores changes this file and the format version only.
 */
import type { KnowledgeAnalyzerName, KnowledgeScoringMode } from "../types/knowledge.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { KnowledgeLexicalIndex } from "./knowledgeIndex.js";
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

/** Reads the sections of an artifact (already checked against their checksums). */
export type SectionReader = {
  has(name: string): boolean;
  bytes(name: string): Uint8Array;
  json<T>(name: string): T;
  int32(name: string): Int32Array;
  float64(name: string): Float64Array;
};

function bytesOf(array: Int32Array | Float64Array | Uint8Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

const encoder = new TextEncoder();

/** The lexical sections of a finished index, with the header's options and metadata. */
export function writeLexicalSections(lexical: KnowledgeLexicalIndex): {
  options: ArtifactIndexOptions;
  meta: LexicalSectionsMeta;
  ids: readonly string[];
  sections: { name: string; bytes: Uint8Array }[];
} {
  const parts = lexical.exportParts();
  const sections = [
    { name: "lexical.ids", bytes: encoder.encode(JSON.stringify(parts.ids)) },
    { name: "lexical.terms", bytes: encoder.encode(JSON.stringify(parts.terms)) },
    { name: "lexical.averageLengths", bytes: bytesOf(parts.averageLengths) },
    { name: "lexical.ranks", bytes: bytesOf(parts.ranks) },
  ];
  parts.postings.forEach((postings, index) => {
    if (!postings.active) return;
    sections.push({ name: `lexical.offsets.${index}`, bytes: bytesOf(postings.offsets) });
    sections.push({ name: `lexical.docs.${index}`, bytes: bytesOf(postings.docs) });
    sections.push({ name: `lexical.contributions.${index}`, bytes: bytesOf(postings.contributions) });
  });
  if (parts.bm25fShares) sections.push({ name: "lexical.bm25fShares", bytes: bytesOf(parts.bm25fShares) });
  // The term dictionary's own tables: loading them is a copy, where interning every term again means hashing it.
  if (parts.dictionary) {
    const tables = parts.dictionary.exportTables();
    sections.push(
      { name: "lexical.dictionary.table", bytes: bytesOf(tables.table) },
      { name: "lexical.dictionary.records", bytes: bytesOf(tables.records) },
      { name: "lexical.dictionary.pool", bytes: tables.pool },
      { name: "lexical.dictionary.nonAscii", bytes: encoder.encode(JSON.stringify(tables.nonAscii)) },
    );
  }
  return {
    options: {
      fieldWeights: { ...parts.fieldWeights },
      k1: parts.k1,
      b: parts.b,
      analyzer: parts.analyzer,
      scoring: parts.scoring,
    },
    meta: {
      termCount: parts.terms.length,
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
 * Recreates the finished lexical index from its sections (and returns its entry ids by dense id). Throws a RangeError when they are inconsistent with
 * each other or with the header (the envelope turns it into a typed "corrupt" error).
 */
export function readLexicalSections(
  options: ArtifactIndexOptions,
  meta: LexicalSectionsMeta,
  entryCount: number,
  read: SectionReader,
): { lexical: KnowledgeLexicalIndex; ids: readonly string[] } {
  const ids = read.json<unknown>("lexical.ids");
  const terms = read.json<unknown>("lexical.terms");
  if (!isStringArray(ids, entryCount)) throw new RangeError("lexical.ids is not the list of entry ids");
  if (!isStringArray(terms, meta.termCount)) throw new RangeError("lexical.terms is not the list of terms");
  const averageLengths = read.float64("lexical.averageLengths");
  if (averageLengths.length !== KNOWLEDGE_FIELD_NAMES.length)
    throw new RangeError("lexical.averageLengths has the wrong length");
  const postings = meta.postings.map((info, index) => {
    if (!info.active) {
      return {
        active: false,
        offsets: new Int32Array(0),
        docs: new Int32Array(0),
        contributions: new Float64Array(0),
      };
    }
    const offsets = read.int32(`lexical.offsets.${index}`);
    const docs = read.int32(`lexical.docs.${index}`);
    const contributions = read.float64(`lexical.contributions.${index}`);
    // Offsets must rise from 0, or a search would read outside the postings.
    let previous = 0;
    if (offsets[0] !== 0) throw new RangeError("posting offsets do not start at 0");
    for (let term = 1; term < offsets.length; term++) {
      const offset = offsets[term]!;
      if (offset < previous) throw new RangeError("posting offsets are not ascending");
      previous = offset;
    }
    return { active: true, offsets, docs, contributions };
  });
  const lexical = KnowledgeLexicalIndex.fromParts({
    fieldWeights: options.fieldWeights as never,
    k1: options.k1,
    b: options.b,
    analyzer: options.analyzer as KnowledgeAnalyzerName,
    scoring: options.scoring as KnowledgeScoringMode,
    ids,
    terms,
    averageLengths,
    ranks: read.int32("lexical.ranks"),
    postings,
    bm25fShares: read.has("lexical.bm25fShares") ? read.float64("lexical.bm25fShares") : null,
    ...(read.has("lexical.dictionary.table")
      ? {
          dictionary: TermDictionary.fromTables({
            table: read.int32("lexical.dictionary.table"),
            records: read.int32("lexical.dictionary.records"),
            pool: read.bytes("lexical.dictionary.pool"),
            nonAscii: read.json<[number, string][]>("lexical.dictionary.nonAscii"),
          }),
        }
      : {}),
  });
  return { lexical, ids };
}
