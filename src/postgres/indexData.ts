/**
 * What a PostgreSQL generation stores, computed in JavaScript with the engine's own tokenizer and analyzer and
 * the exact expressions of the in-memory index (`knowledgeIndex.ts`), so every stored BM25 contribution is
 * bit-identical to the one the in-memory engine adds, and the database only sums and ranks them.
 *
 * Documents get dense ids in code-unit order of their entry ids (as in memory), so "lower dense id first" is the
 * engine's tie-break and the database can order ties by an integer.
 */
import { getAnalyzer } from "../knowledge/analyzer.js";
import { bm25TermScore } from "../knowledge/bm25.js";
import { DEFAULT_BM25_B, DEFAULT_BM25_K1, KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import {
  buildDocument,
  compareCodeUnits,
  type KnowledgeIndexBuildOptions,
  resolveFieldWeights,
} from "../knowledge/knowledgeIndex.js";
import { normalizePhrases, phraseKey, phraseWordCount } from "../knowledge/normalize.js";
import type {
  KnowledgeAnalyzerName,
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";

const FIELD_COUNT = 5;
/** The field number of BM25F's combined postings (its per-field rows hold the shares of the breakdown). */
export const COMBINED_FIELD = 5;

/** The resolved parameters of a generation (stored with it; readers use the analyzer and scoring mode). */
export type PostgresIndexParameters = {
  fieldWeights: KnowledgeFieldWeights;
  k1: number;
  b: number;
  analyzer: KnowledgeAnalyzerName;
  scoring: KnowledgeScoringMode;
};

/** Resolves build options as the in-memory index does. */
export function resolveIndexParameters(options: KnowledgeIndexBuildOptions): PostgresIndexParameters {
  return {
    fieldWeights: resolveFieldWeights(options.fieldWeights),
    k1: options.k1 ?? DEFAULT_BM25_K1,
    b: options.b ?? DEFAULT_BM25_B,
    analyzer: options.analyzer ?? "none",
    scoring: options.scoring ?? "sum",
  };
}

/** One posting list: a term in one field (or {@link COMBINED_FIELD}), documents ascending. */
export type PostingRow = {
  term: string;
  field: number;
  /** Documents containing the term in this field (BM25F combined rows: in any scored field). */
  documentFrequency: number;
  docs: Int32Array;
  /** Term frequency per document (BM25F combined rows: over every scored field). */
  frequencies: Int32Array;
  /** The finished BM25 contribution per document (BM25F per-field rows: the field's share of the term score). */
  contributions: Float64Array;
};

/** One entry as stored. */
export type EntryRow = {
  doc: number;
  entry: NormalizedKnowledgeEntry;
  /** Dense ids of its related entries then its parent, in order (ids without an entry are left out). */
  relations: number[];
  /** Tokens per field (title, aliases, keywords, summary, body), after analysis. */
  fieldLengths: number[];
};

/** Everything a generation stores. */
export type GenerationData = {
  parameters: PostgresIndexParameters;
  entries: EntryRow[];
  /** Posting lists of every scored field (computed lazily, field by field, by {@link postingRows}). */
  postings: () => Generator<PostingRow>;
  /** Phrase key → dense ids naming it exactly (id, title) and as an alias; keys in first-seen order. */
  phrases: Map<string, { exact: number[]; alias: number[] }>;
  /** Words of the longest phrase key (phrase lookup never builds longer n-grams). */
  maxPhraseWords: number;
  /** Dense ids not eligible in every scope: not active, or bound to integrations. */
  restricted: number[];
  /** Lowercased integration → dense ids of active entries bound to it. */
  byIntegration: Map<string, number[]>;
  /** Domain → dense ids. */
  byDomain: Map<string, number[]>;
  documentCount: number;
  averageLengths: number[];
};

/** A growable Int32 buffer. */
class IntList {
  data = new Int32Array(1024);
  length = 0;
  push(value: number): void {
    if (this.length === this.data.length) {
      const next = new Int32Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = value;
  }
}

/** Computes a generation's data from validated entries (any order; duplicates are not allowed). */
export function computeGenerationData(
  input: readonly NormalizedKnowledgeEntry[],
  options: KnowledgeIndexBuildOptions,
): GenerationData {
  const parameters = resolveIndexParameters(options);
  const analyzer = getAnalyzer(parameters.analyzer);
  const entries = input.slice().sort((left, right) => compareCodeUnits(left.id, right.id));
  const documentCount = entries.length;
  const denseIds = new Map<string, number>();
  entries.forEach((entry, doc) => {
    denseIds.set(entry.id, doc);
  });
  const termIds = new Map<string, number>();
  const terms: string[] = [];
  // Per field: (term, frequency) pairs document by document, and where each document's pairs end.
  const fieldTerms = Array.from({ length: FIELD_COUNT }, () => new IntList());
  const fieldFrequencies = Array.from({ length: FIELD_COUNT }, () => new IntList());
  const fieldEnds = Array.from({ length: FIELD_COUNT }, () => new Int32Array(documentCount));
  const lengths = Array.from({ length: FIELD_COUNT }, () => new Int32Array(documentCount));
  const totals = new Array<number>(FIELD_COUNT).fill(0);
  const phrases = new Map<string, { exact: number[]; alias: number[] }>();
  let maxPhraseWords = 0;
  const addPhrase = (key: string, doc: number, kind: "exact" | "alias"): void => {
    if (key === "") return;
    let ids = phrases.get(key);
    if (!ids) {
      ids = { exact: [], alias: [] };
      phrases.set(key, ids);
      maxPhraseWords = Math.max(maxPhraseWords, phraseWordCount(key));
    }
    const list = ids[kind];
    if (list[list.length - 1] !== doc) list.push(doc);
  };
  const restricted: number[] = [];
  const byIntegration = new Map<string, number[]>();
  const byDomain = new Map<string, number[]>();
  const rows: EntryRow[] = new Array(documentCount);
  const counts = new Map<number, number>();
  for (let doc = 0; doc < documentCount; doc++) {
    const entry = entries[doc]!;
    const document = buildDocument(entry);
    const fieldLengths: number[] = [];
    for (let field = 0; field < FIELD_COUNT; field++) {
      const raw = document.fields[KNOWLEDGE_FIELD_NAMES[field]!];
      const tokens = analyzer ? analyzer(raw) : raw;
      counts.clear();
      for (const token of tokens) {
        let termId = termIds.get(token);
        if (termId === undefined) {
          termId = terms.length;
          terms.push(token);
          termIds.set(token, termId);
        }
        counts.set(termId, (counts.get(termId) ?? 0) + 1);
      }
      for (const [termId, count] of counts) {
        fieldTerms[field]!.push(termId);
        fieldFrequencies[field]!.push(count);
      }
      fieldEnds[field]![doc] = fieldTerms[field]!.length;
      lengths[field]![doc] = tokens.length;
      totals[field]! += tokens.length;
      fieldLengths.push(tokens.length);
    }
    for (const key of normalizePhrases([entry.id, entry.title])) addPhrase(key, doc, "exact");
    for (const alias of entry.aliases) addPhrase(phraseKey(alias), doc, "alias");
    const relationIds =
      entry.parentEntryId !== undefined
        ? [...entry.relatedEntryIds, entry.parentEntryId]
        : entry.relatedEntryIds;
    const relations: number[] = [];
    for (const id of relationIds) {
      const related = denseIds.get(id);
      if (related !== undefined) relations.push(related);
    }
    rows[doc] = { doc, entry, relations, fieldLengths };
    pushTo(byDomain, entry.domain, doc);
    if (entry.status !== "active" || entry.integrations.length > 0) restricted.push(doc);
    if (entry.status === "active") {
      const seen = new Set<string>();
      for (const integration of entry.integrations) {
        const key = integration.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        pushTo(byIntegration, key, doc);
      }
    }
  }
  const averageLengths = totals.map((total) => (documentCount > 0 ? total / documentCount : 0));
  const postings = (): Generator<PostingRow> =>
    parameters.scoring === "bm25f"
      ? bm25fRows(parameters, terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths)
      : sumRows(parameters, terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths);
  return {
    parameters,
    entries: rows,
    postings,
    phrases,
    maxPhraseWords,
    restricted,
    byIntegration,
    byDomain,
    documentCount,
    averageLengths,
  };
}

function pushTo(map: Map<string, number[]>, key: string, doc: number): void {
  const list = map.get(key);
  if (list) list.push(doc);
  else map.set(key, [doc]);
}

/** Whether a field is scored: positive weight and some tokens in some document (as in memory). */
function scoredField(parameters: PostgresIndexParameters, averageLengths: readonly number[], field: number) {
  const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
  return weight > 0 && averageLengths[field]! > 0;
}

/** Groups a field's (document, term) pairs by term: per term its slice of documents, ascending. */
function groupByTerm(
  termCount: number,
  terms: IntList,
  ends: Int32Array,
): { offsets: Int32Array; docs: Int32Array; sources: Int32Array } {
  const offsets = new Int32Array(termCount + 1);
  for (let index = 0; index < terms.length; index++) offsets[terms.data[index]! + 1]!++;
  for (let term = 0; term < termCount; term++) offsets[term + 1]! += offsets[term]!;
  const cursor = offsets.slice(0, termCount);
  const docs = new Int32Array(terms.length);
  const sources = new Int32Array(terms.length);
  let begin = 0;
  for (let doc = 0; doc < ends.length; doc++) {
    const end = ends[doc]!;
    for (let index = begin; index < end; index++) {
      const position = cursor[terms.data[index]!]!++;
      docs[position] = doc;
      sources[position] = index;
    }
    begin = end;
  }
  return { offsets, docs, sources };
}

/** Field-by-field BM25 ("sum"): the contribution of each posting exactly as `fieldPostings` computes it. */
function* sumRows(
  parameters: PostgresIndexParameters,
  terms: readonly string[],
  fieldTerms: IntList[],
  fieldFrequencies: IntList[],
  fieldEnds: Int32Array[],
  lengths: Int32Array[],
  averageLengths: readonly number[],
): Generator<PostingRow> {
  const { k1, b } = parameters;
  const documentCount = fieldEnds[0]!.length;
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (!scoredField(parameters, averageLengths, field)) continue;
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    const averageLength = averageLengths[field]!;
    const grouped = groupByTerm(terms.length, fieldTerms[field]!, fieldEnds[field]!);
    const frequencies = fieldFrequencies[field]!.data;
    const fieldLengths = lengths[field]!;
    for (let term = 0; term < terms.length; term++) {
      const start = grouped.offsets[term]!;
      const end = grouped.offsets[term + 1]!;
      if (end === start) continue;
      const documentFrequency = end - start;
      const weightedIdf =
        weight * Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
      const docs = grouped.docs.slice(start, end);
      const tfs = new Int32Array(documentFrequency);
      const contributions = new Float64Array(documentFrequency);
      for (let index = 0; index < documentFrequency; index++) {
        const doc = docs[index]!;
        const tf = frequencies[grouped.sources[start + index]!]!;
        const lengthNormalization = k1 * (1 - b + (b * fieldLengths[doc]!) / averageLength);
        tfs[index] = tf;
        contributions[index] = bm25TermScore(weightedIdf, tf, k1, lengthNormalization);
      }
      yield { term: terms[term]!, field, documentFrequency, docs, frequencies: tfs, contributions };
    }
  }
}

/**
 * True BM25F: per term one combined posting list (the complete term score) and, per field, the shares of the
 * breakdown (only where positive), exactly as `finalizeBm25f` computes them.
 */
function* bm25fRows(
  parameters: PostgresIndexParameters,
  terms: readonly string[],
  fieldTerms: IntList[],
  fieldFrequencies: IntList[],
  fieldEnds: Int32Array[],
  lengths: Int32Array[],
  averageLengths: readonly number[],
): Generator<PostingRow> {
  const { k1, b } = parameters;
  const documentCount = fieldEnds[0]!.length;
  const grouped: ({ offsets: Int32Array; docs: Int32Array; sources: Int32Array } | null)[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    grouped.push(
      scoredField(parameters, averageLengths, field)
        ? groupByTerm(terms.length, fieldTerms[field]!, fieldEnds[field]!)
        : null,
    );
  }
  for (let term = 0; term < terms.length; term++) {
    // Per document of this term: the weighted, length-normalized frequency per field.
    const parts = new Map<number, Float64Array>();
    const frequencies = new Map<number, number>();
    const fieldFrequency: Map<number, number>[] = [];
    for (let field = 0; field < FIELD_COUNT; field++) {
      const perDoc = new Map<number, number>();
      fieldFrequency.push(perDoc);
      const group = grouped[field];
      if (!group) continue;
      const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      const averageLength = averageLengths[field]!;
      for (let position = group.offsets[term]!; position < group.offsets[term + 1]!; position++) {
        const doc = group.docs[position]!;
        const tf = fieldFrequencies[field]!.data[group.sources[position]!]!;
        const len = lengths[field]![doc]!;
        let docParts = parts.get(doc);
        if (!docParts) {
          docParts = new Float64Array(FIELD_COUNT);
          parts.set(doc, docParts);
        }
        docParts[field] = (weight * tf) / (1 - b + (b * len) / averageLength);
        frequencies.set(doc, (frequencies.get(doc) ?? 0) + tf);
        perDoc.set(doc, tf);
      }
    }
    if (parts.size === 0) continue;
    const documentFrequency = parts.size;
    const idf = Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
    const sorted = [...parts.keys()].sort((left, right) => left - right);
    const docs = Int32Array.from(sorted);
    const tfs = new Int32Array(sorted.length);
    const scores = new Float64Array(sorted.length);
    const shareDocs: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    const shareValues: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    const shareTfs: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    sorted.forEach((doc, index) => {
      const docParts = parts.get(doc)!;
      let pseudoFrequency = 0;
      for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += docParts[field]!;
      const score = (idf * (pseudoFrequency * (k1 + 1))) / (pseudoFrequency + k1);
      docs[index] = doc;
      tfs[index] = frequencies.get(doc)!;
      scores[index] = score;
      for (let field = 0; field < FIELD_COUNT; field++) {
        const share = pseudoFrequency > 0 ? (score * docParts[field]!) / pseudoFrequency : 0;
        if (share > 0) {
          shareDocs[field]!.push(doc);
          shareValues[field]!.push(share);
          shareTfs[field]!.push(fieldFrequency[field]!.get(doc) ?? 0);
        }
      }
    });
    const name = terms[term]!;
    yield {
      term: name,
      field: COMBINED_FIELD,
      documentFrequency,
      docs,
      frequencies: tfs,
      contributions: scores,
    };
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (shareDocs[field]!.length === 0) continue;
      yield {
        term: name,
        field,
        documentFrequency: shareDocs[field]!.length,
        docs: Int32Array.from(shareDocs[field]!),
        frequencies: Int32Array.from(shareTfs[field]!),
        contributions: Float64Array.from(shareValues[field]!),
      };
    }
  }
}
