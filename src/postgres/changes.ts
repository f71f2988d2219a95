/**
 * An incremental update of a PostgreSQL generation: what JavaScript computes so that the database can write the
 * next generation from the serving one without recomputing the unchanged entries.
 *
 * A full build stores finished BM25 contributions, which depend on the collection statistics (the entry count,
 * each term's document frequency, each field's average length), so changing one entry changes every
 * contribution. The database rewrites them, copying the unchanged entries and their postings (renumbered: dense ids
 * stay in code-unit order of entry ids, as in a full build) and merging in the changed entries' postings, which
 * only JavaScript can compute (the engine's tokenizer and analyzer). The only transcendental function, the IDF's
 * logarithm, is tabulated here per document frequency (`Math.log`, as the full build computes it); each field's
 * length normalization is computed here per document. What the database then does per posting is
 * `weightedIdf · ((tf · (k1 + 1)) / (tf + lengthNormalization))` in IEEE doubles, `bm25TermScore`'s operations in
 * its order, so every stored contribution is bit for bit the full build's (and the in-memory index's). Phrases, scopes and relations come from the final entries.
 */
import { getAnalyzer } from "../knowledge/analyzer.js";
import { bm25Idf, bm25LengthNormalization } from "../knowledge/bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import { buildDocument } from "../knowledge/knowledgeIndex.js";
import { compareCodeUnits } from "../knowledge/ranking.js";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { EntryListsCollector, type PhraseLists } from "./entryLists.js";
import type { PostgresIndexParameters } from "./indexData.js";

const FIELD_COUNT = 5;

/** The serving generation as the update reads it from the database. */
export type BaseGeneration = {
  /** Entry id per dense id (ascending). */
  ids: readonly string[];
  /** Per field, the token count per dense id. */
  fieldLengths: readonly Int32Array[];
  /** The largest document frequency of any posting list. */
  maxDocumentFrequency: number;
};

/** One added posting list: a term in one field, new dense ids ascending. */
export type AddedPostings = { term: string; field: number; docs: number[]; frequencies: number[] };

/** Everything the next generation needs from JavaScript. */
export type DerivedGenerationData = {
  documentCount: number;
  /** Base dense id → new dense id, or -1 when the entry was removed or replaced. */
  map: Int32Array;
  /** Entries that are new or replaced, with their new dense ids (ascending), relations and field lengths. */
  added: { doc: number; entry: NormalizedKnowledgeEntry; relations: number[]; fieldLengths: number[] }[];
  /** Their postings, per scored field and term. */
  addedPostings: AddedPostings[];
  /**
   * Every list that changes besides its contributions: lists of the added entries, and lists of the removed or
   * replaced entries (their previous versions). The others keep their documents (renumbered) and frequencies.
   */
  touched: { term: string; field: number }[];
  /** Relations of every new dense id, flat (ids of related entries, then the parent), and where each ends. */
  relations: Int32Array;
  relationEnds: Int32Array;
  /** Per field, per new dense id: `k1 · (1 − b + b · length / averageLength)` (index field × count + doc). */
  lengthNormalizations: Float64Array;
  /** Per field, per document frequency: the weighted IDF (index field × idfStride + df). */
  weightedIdf: Float64Array;
  idfStride: number;
  saturation: number;
  averageLengths: number[];
  phrases: PhraseLists;
  maxPhraseWords: number;
  restricted: number[];
  byIntegration: Map<string, number[]>;
  byDomain: Map<string, number[]>;
};

/**
 * Computes an update of `base` into the generation of `entries` (the complete final registry). Entries whose ids
 * are in `changed` (upserted) or absent from the base are indexed here; the others are taken from the base.
 */
export function computeDerivedGeneration(
  base: BaseGeneration,
  input: readonly NormalizedKnowledgeEntry[],
  changed: ReadonlySet<string>,
  previous: readonly NormalizedKnowledgeEntry[],
  parameters: PostgresIndexParameters,
): DerivedGenerationData {
  const entries = input.slice().sort((left, right) => compareCodeUnits(left.id, right.id));
  const documentCount = entries.length;
  const denseIds = new Map<string, number>();
  entries.forEach((entry, doc) => {
    denseIds.set(entry.id, doc);
  });
  const map = new Int32Array(base.ids.length).fill(-1);
  const lengths = Array.from({ length: FIELD_COUNT }, () => new Int32Array(documentCount));
  const fromBase = new Uint8Array(documentCount);
  base.ids.forEach((id, old) => {
    const doc = denseIds.get(id);
    if (doc === undefined || changed.has(id)) return;
    map[old] = doc;
    fromBase[doc] = 1;
    for (let field = 0; field < FIELD_COUNT; field++) lengths[field]![doc] = base.fieldLengths[field]![old]!;
  });
  const analyzer = getAnalyzer(parameters.analyzer);
  const added: DerivedGenerationData["added"] = [];
  // Per field: term → its added postings (documents ascending, as they are visited).
  const addedByField = Array.from({ length: FIELD_COUNT }, () => new Map<string, AddedPostings>());
  const lists = new EntryListsCollector(denseIds);
  const relations: number[] = [];
  const relationEnds = new Int32Array(documentCount);
  const counts = new Map<string, number>();
  for (let doc = 0; doc < documentCount; doc++) {
    const entry = entries[doc]!;
    const entryRelations = lists.add(entry, doc);
    relations.push(...entryRelations);
    relationEnds[doc] = relations.length;
    if (fromBase[doc]) continue;
    const document = buildDocument(entry);
    const fieldLengths: number[] = [];
    for (let field = 0; field < FIELD_COUNT; field++) {
      const raw = document.fields[KNOWLEDGE_FIELD_NAMES[field]!];
      const tokens = analyzer ? analyzer(raw) : raw;
      lengths[field]![doc] = tokens.length;
      fieldLengths.push(tokens.length);
      counts.clear();
      for (const token of tokens) counts.set(token, (counts.get(token) ?? 0) + 1);
      const byTerm = addedByField[field]!;
      for (const [term, count] of counts) {
        let list = byTerm.get(term);
        if (!list) {
          list = { term, field, docs: [], frequencies: [] };
          byTerm.set(term, list);
        }
        list.docs.push(doc);
        list.frequencies.push(count);
      }
    }
    added.push({ doc, entry, relations: entryRelations, fieldLengths });
  }
  // Collection statistics and the per-document, per-field length normalizations, as the full build computes them.
  const { k1, b } = parameters;
  const averageLengths: number[] = [];
  const scored: boolean[] = [];
  const lengthNormalizations = new Float64Array(FIELD_COUNT * documentCount);
  for (let field = 0; field < FIELD_COUNT; field++) {
    let total = 0;
    const fieldLengths = lengths[field]!;
    for (let doc = 0; doc < documentCount; doc++) total += fieldLengths[doc]!;
    const averageLength = documentCount > 0 ? total / documentCount : 0;
    averageLengths.push(averageLength);
    const isScored = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!] > 0 && averageLength > 0;
    scored.push(isScored);
    if (!isScored) continue;
    for (let doc = 0; doc < documentCount; doc++) {
      lengthNormalizations[field * documentCount + doc] = bm25LengthNormalization(
        k1,
        b,
        fieldLengths[doc]!,
        averageLength,
      );
    }
  }
  const addedPostings: AddedPostings[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (scored[field]) addedPostings.push(...addedByField[field]!.values());
  }
  const touchedByField = addedByField.map((byTerm) => new Set(byTerm.keys()));
  for (const entry of previous) {
    const document = buildDocument(entry);
    for (let field = 0; field < FIELD_COUNT; field++) {
      const raw = document.fields[KNOWLEDGE_FIELD_NAMES[field]!];
      for (const token of analyzer ? analyzer(raw) : raw) touchedByField[field]!.add(token);
    }
  }
  const touched: { term: string; field: number }[] = [];
  touchedByField.forEach((terms, field) => {
    for (const term of terms) touched.push({ term, field });
  });
  // A list's document frequency after the update is at most its base one plus the added entries.
  const maxDocumentFrequency = Math.min(documentCount, base.maxDocumentFrequency + added.length);
  const idfStride = maxDocumentFrequency + 1;
  const weightedIdf = new Float64Array(FIELD_COUNT * idfStride);
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (!scored[field]) continue;
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    for (let documentFrequency = 1; documentFrequency <= maxDocumentFrequency; documentFrequency++) {
      weightedIdf[field * idfStride + documentFrequency] = weight * bm25Idf(documentCount, documentFrequency);
    }
  }
  return {
    documentCount,
    map,
    added,
    addedPostings,
    touched,
    relations: Int32Array.from(relations),
    relationEnds,
    lengthNormalizations,
    weightedIdf,
    idfStride,
    saturation: k1 + 1,
    averageLengths,
    phrases: lists.phrases,
    maxPhraseWords: lists.maxPhraseWords,
    restricted: lists.restricted,
    byIntegration: lists.byIntegration,
    byDomain: lists.byDomain,
  };
}
