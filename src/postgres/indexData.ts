/**
 * What a PostgreSQL generation stores, computed in JavaScript with the engine's own tokenizer and analyzer and
 * the exact expressions of the in-memory index (`knowledgeIndex.ts`), so every stored BM25 contribution is
 * bit-identical to the one the in-memory engine adds, and the database only sums and ranks them.
 *
 * Documents get dense ids in code-unit order of their entry ids (as in memory), so "lower dense id first" is the
 * engine's tie-break and the database can order ties by an integer.
 */
import { getAnalyzer } from "../knowledge/analyzer.js";
import {
  bm25fFieldFrequency,
  bm25fTermScore,
  bm25Idf,
  bm25LengthNormalization,
  bm25LengthRatio,
  bm25TermScore,
} from "../knowledge/bm25.js";
import { DEFAULT_BM25_B, DEFAULT_BM25_K1, KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import { entryFieldTexts } from "../knowledge/document.js";
import {
  buildDocument,
  compareCodeUnits,
  type KnowledgeIndexBuildOptions,
  resolveFieldWeights,
} from "../knowledge/knowledgeIndex.js";
import { normalizePhrases, phraseKey, phraseWordCount } from "../knowledge/normalize.js";
import { IntBuffer } from "../knowledge/postings.js";
import { TermCounter } from "../knowledge/termCounter.js";
import { TermDictionary } from "../knowledge/termDictionary.js";
import type {
  KnowledgeAnalyzerName,
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { FORWARD_KEY_STRIDE, IMPACT_BLOCK_ENDS } from "./sql.js";

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

/**
 * One document's postings: `keys[i]` is term id × {@link FORWARD_KEY_STRIDE} + field (0 to 4, or
 * {@link COMBINED_FIELD} for BM25F's term score), `contributions[i]` the value its posting list holds for the
 * document. Keys come field by field (sum), or term by term (BM25F: the combined score, then the shares).
 */
export type ForwardRow = {
  doc: number;
  keys: Int32Array;
  contributions: Float64Array;
  /** Term ids of the document, each once, with its impact: the sum of its keys' contributions (the score it adds). */
  impactTerms: Int32Array;
  impacts: Float64Array;
};

/** One stored impact block of a term (see `IMPACT_BLOCK_ENDS`). */
export type ImpactRow = {
  term: string;
  termId: number;
  block: number;
  /** Documents with the term in a scored field. */
  documentFrequency: number;
  /** The block's documents in impact order: impact descending, then dense id ascending. */
  docs: Int32Array;
  impacts: Float64Array;
  /** The impact of the first posting after the block, 0 when the term has no more. */
  nextImpact: number;
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
  /** Posting lists of every scored field (computed lazily, field by field). */
  postings: () => Generator<PostingRow>;
  /** The same postings document by document, for the forward table (computed lazily, in dense-id order). */
  documents: () => Generator<ForwardRow>;
  /** The terms by term id (forward keys and impact rows name terms by these ids). */
  terms: readonly string[];
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
  // Tokenized and counted as the in-memory build does (its term counter and dictionary), so terms, frequencies and
  // lengths are the same, at the same speed.
  const dictionary = new TermDictionary();
  const counter = new TermCounter(dictionary);
  // Per field: (term, frequency) pairs document by document, and where each document's pairs end.
  const fieldTerms = Array.from({ length: FIELD_COUNT }, () => new IntBuffer());
  const fieldFrequencies = Array.from({ length: FIELD_COUNT }, () => new IntBuffer());
  const fieldEnds = Array.from({ length: FIELD_COUNT }, () => new Int32Array(documentCount));
  const lengths = Array.from({ length: FIELD_COUNT }, () => new Int32Array(documentCount));
  const totals = new Array<number>(FIELD_COUNT).fill(0);
  const lists = new EntryListsCollector(denseIds);
  const rows: EntryRow[] = new Array(documentCount);
  for (let doc = 0; doc < documentCount; doc++) {
    const entry = entries[doc]!;
    const fieldLengths: number[] = [];
    const texts = analyzer ? null : entryFieldTexts(entry);
    const document = analyzer ? buildDocument(entry) : null;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const marker = doc * FIELD_COUNT + field + 1;
      const length = texts
        ? counter.countTexts(texts[field]!, marker)
        : counter.countTokens(analyzer!(document!.fields[KNOWLEDGE_FIELD_NAMES[field]!]), marker);
      for (const termId of counter.fieldTerms) {
        fieldTerms[field]!.push(termId);
        fieldFrequencies[field]!.push(counter.frequency(termId));
      }
      counter.clearField();
      fieldEnds[field]![doc] = fieldTerms[field]!.length;
      lengths[field]![doc] = length;
      totals[field]! += length;
      fieldLengths.push(length);
    }
    rows[doc] = { doc, entry, relations: lists.add(entry, doc), fieldLengths };
  }
  counter.release();
  const terms = dictionary.allTerms();
  const averageLengths = totals.map((total) => (documentCount > 0 ? total / documentCount : 0));
  const pairs: FieldPairs = { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths };
  const postings = (): Generator<PostingRow> =>
    parameters.scoring === "bm25f" ? bm25fRows(parameters, pairs) : sumRows(parameters, pairs);
  const documents = (): Generator<ForwardRow> =>
    parameters.scoring === "bm25f" ? bm25fDocuments(parameters, pairs) : sumDocuments(parameters, pairs);
  return {
    parameters,
    entries: rows,
    postings,
    documents,
    terms,
    phrases: lists.phrases,
    maxPhraseWords: lists.maxPhraseWords,
    restricted: lists.restricted,
    byIntegration: lists.byIntegration,
    byDomain: lists.byDomain,
    documentCount,
    averageLengths,
  };
}

/**
 * The lists a generation stores beside its postings, filed entry by entry in dense-id order (a full publication
 * and an update file them the same way): phrase keys with the entries naming them exactly or as an alias, the
 * scope lists, and each entry's relations as dense ids.
 */
export class EntryListsCollector {
  /** Phrase key → dense ids naming it exactly (id, title) and as an alias; keys in first-seen order. */
  readonly phrases = new Map<string, { exact: number[]; alias: number[] }>();
  /** Words of the longest phrase key. */
  maxPhraseWords = 0;
  /** Dense ids not eligible in every scope: not active, or bound to integrations. */
  readonly restricted: number[] = [];
  /** Lowercased integration → dense ids of active entries bound to it. */
  readonly byIntegration = new Map<string, number[]>();
  /** Domain → dense ids. */
  readonly byDomain = new Map<string, number[]>();

  /** @param denseIds Entry id → dense id of every entry of the generation. */
  constructor(private readonly denseIds: ReadonlyMap<string, number>) {}

  /**
   * Files entry `doc` (dense ids must come in ascending order); returns the dense ids of its related entries then
   * its parent, in order, leaving out ids without an entry.
   */
  add(entry: NormalizedKnowledgeEntry, doc: number): number[] {
    for (const key of normalizePhrases([entry.id, entry.title])) this.addPhrase(key, doc, "exact");
    for (const alias of entry.aliases) this.addPhrase(phraseKey(alias), doc, "alias");
    pushTo(this.byDomain, entry.domain, doc);
    if (entry.status !== "active" || entry.integrations.length > 0) this.restricted.push(doc);
    if (entry.status === "active") {
      const seen = new Set<string>();
      for (const integration of entry.integrations) {
        const key = integration.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        pushTo(this.byIntegration, key, doc);
      }
    }
    const relationIds =
      entry.parentEntryId !== undefined
        ? [...entry.relatedEntryIds, entry.parentEntryId]
        : entry.relatedEntryIds;
    const relations: number[] = [];
    for (const id of relationIds) {
      const related = this.denseIds.get(id);
      if (related !== undefined) relations.push(related);
    }
    return relations;
  }

  private addPhrase(key: string, doc: number, kind: "exact" | "alias"): void {
    if (key === "") return;
    let ids = this.phrases.get(key);
    if (!ids) {
      ids = { exact: [], alias: [] };
      this.phrases.set(key, ids);
      this.maxPhraseWords = Math.max(this.maxPhraseWords, phraseWordCount(key));
    }
    const list = ids[kind];
    if (list[list.length - 1] !== doc) list.push(doc);
  }
}

function pushTo(map: Map<string, number[]>, key: string, doc: number): void {
  const list = map.get(key);
  if (list) list.push(doc);
  else map.set(key, [doc]);
}

/** A field's (document, term) pairs as the build gathered them, document by document. */
type FieldPairs = {
  terms: readonly string[];
  /** Per field: term ids, document by document. */
  fieldTerms: IntBuffer[];
  /** Per field: the term frequency of each pair. */
  fieldFrequencies: IntBuffer[];
  /** Per field, per document: where its pairs end. */
  fieldEnds: Int32Array[];
  /** Per field, per document: its token count. */
  lengths: Int32Array[];
  averageLengths: readonly number[];
};

/** Whether a field is scored: positive weight and some tokens in some document (as in memory). */
function scoredField(parameters: PostgresIndexParameters, averageLengths: readonly number[], field: number) {
  const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
  return weight > 0 && averageLengths[field]! > 0;
}

/** Groups a field's (document, term) pairs by term: per term its slice of documents, ascending. */
function groupByTerm(
  termCount: number,
  terms: IntBuffer,
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

/** Documents per term id among a field's pairs. */
function fieldDocumentFrequencies(termCount: number, terms: IntBuffer): Int32Array {
  const frequencies = new Int32Array(termCount);
  for (let index = 0; index < terms.length; index++) frequencies[terms.data[index]!]!++;
  return frequencies;
}

// The BM25 operations of the in-memory index (`fieldPostings`, `bm25fPostings`), through `bm25.ts`'s functions
// as it calls them, so the posting lists and the forward rows hold its bits.

/** Sum mode: a field's weight times the term's idf in that field. */
function weightedIdf(weight: number, documentCount: number, documentFrequency: number): number {
  return weight * bm25Idf(documentCount, documentFrequency);
}

/** Sum mode: one posting's contribution. */
function sumContribution(
  parameters: PostgresIndexParameters,
  termWeightedIdf: number,
  frequency: number,
  fieldLength: number,
  averageLength: number,
): number {
  const { k1, b } = parameters;
  return bm25TermScore(
    termWeightedIdf,
    frequency,
    k1,
    bm25LengthNormalization(k1, b, fieldLength, averageLength),
  );
}

/** BM25F: a field's weighted, length-normalized term frequency. */
function bm25fPart(
  parameters: PostgresIndexParameters,
  weight: number,
  frequency: number,
  fieldLength: number,
  averageLength: number,
): number {
  return bm25fFieldFrequency(weight, frequency, bm25LengthRatio(parameters.b, fieldLength, averageLength));
}

/** BM25F: a term's idf over the documents holding it in any scored field. */
function bm25fIdf(documentCount: number, documentFrequency: number): number {
  return bm25Idf(documentCount, documentFrequency);
}

/** BM25F: the term score of a document from its fields' parts (summed in field order). */
function bm25fScore(parameters: PostgresIndexParameters, idf: number, parts: Float64Array): number {
  let pseudoFrequency = 0;
  for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += parts[field]!;
  return bm25fTermScore(idf, pseudoFrequency, parameters.k1);
}

/** BM25F: a field's share of the term score (only positive shares are stored). */
function bm25fShare(score: number, part: number, parts: Float64Array): number {
  let pseudoFrequency = 0;
  for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += parts[field]!;
  return pseudoFrequency > 0 ? (score * part) / pseudoFrequency : 0;
}

/** Field-by-field BM25 ("sum"): the contribution of each posting exactly as `fieldPostings` computes it. */
function* sumRows(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<PostingRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
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
      const termWeightedIdf = weightedIdf(weight, documentCount, documentFrequency);
      const docs = grouped.docs.slice(start, end);
      const tfs = new Int32Array(documentFrequency);
      const contributions = new Float64Array(documentFrequency);
      for (let index = 0; index < documentFrequency; index++) {
        const tf = frequencies[grouped.sources[start + index]!]!;
        tfs[index] = tf;
        contributions[index] = sumContribution(
          parameters,
          termWeightedIdf,
          tf,
          fieldLengths[docs[index]!]!,
          averageLength,
        );
      }
      yield { term: terms[term]!, field, documentFrequency, docs, frequencies: tfs, contributions };
    }
  }
}

/** Sum mode, document by document: the same contributions as {@link sumRows}, keyed by term and field. */
function* sumDocuments(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<ForwardRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const documentCount = fieldEnds[0]!.length;
  const idfs: (Float64Array | null)[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (!scoredField(parameters, averageLengths, field)) {
      idfs.push(null);
      continue;
    }
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    const frequencies = fieldDocumentFrequencies(terms.length, fieldTerms[field]!);
    const weighted = new Float64Array(terms.length);
    for (let term = 0; term < terms.length; term++) {
      if (frequencies[term]! > 0) weighted[term] = weightedIdf(weight, documentCount, frequencies[term]!);
    }
    idfs.push(weighted);
  }
  const impactOf = new Float64Array(terms.length);
  const seen = new Uint8Array(terms.length);
  for (let doc = 0; doc < documentCount; doc++) {
    let count = 0;
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (!idfs[field]) continue;
      count += fieldEnds[field]![doc]! - (doc > 0 ? fieldEnds[field]![doc - 1]! : 0);
    }
    const keys = new Int32Array(count);
    const contributions = new Float64Array(count);
    const order: number[] = [];
    let position = 0;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const idf = idfs[field];
      if (!idf) continue;
      const begin = doc > 0 ? fieldEnds[field]![doc - 1]! : 0;
      const end = fieldEnds[field]![doc]!;
      const fieldLength = lengths[field]![doc]!;
      for (let index = begin; index < end; index++) {
        const term = fieldTerms[field]!.data[index]!;
        const contribution = sumContribution(
          parameters,
          idf[term]!,
          fieldFrequencies[field]!.data[index]!,
          fieldLength,
          averageLengths[field]!,
        );
        keys[position] = term * FORWARD_KEY_STRIDE + field;
        contributions[position++] = contribution;
        if (seen[term] === 0) {
          seen[term] = 1;
          order.push(term);
        }
        impactOf[term]! += contribution;
      }
    }
    const impactTerms = Int32Array.from(order);
    const impacts = new Float64Array(order.length);
    order.forEach((term, index) => {
      impacts[index] = impactOf[term]!;
      impactOf[term] = 0;
      seen[term] = 0;
    });
    yield { doc, keys, contributions, impactTerms, impacts };
  }
}

/** Per term and document of a BM25F index: each field's part (weighted, length-normalized frequency). */
function bm25fSetup(parameters: PostgresIndexParameters, pairs: FieldPairs) {
  const { terms, fieldTerms, fieldEnds, averageLengths } = pairs;
  const scored: boolean[] = [];
  for (let field = 0; field < FIELD_COUNT; field++)
    scored.push(scoredField(parameters, averageLengths, field));
  const grouped = scored.map((isScored, field) =>
    isScored ? groupByTerm(terms.length, fieldTerms[field]!, fieldEnds[field]!) : null,
  );
  // Documents holding the term in any scored field: the union of the fields' sorted document slices.
  const documentFrequencies = new Int32Array(terms.length);
  const mark = new Int32Array(fieldEnds[0]!.length).fill(-1);
  for (let term = 0; term < terms.length; term++) {
    let count = 0;
    for (const group of grouped) {
      if (!group) continue;
      for (let position = group.offsets[term]!; position < group.offsets[term + 1]!; position++) {
        const doc = group.docs[position]!;
        if (mark[doc] !== term) {
          mark[doc] = term;
          count++;
        }
      }
    }
    documentFrequencies[term] = count;
  }
  return { scored, grouped, documentFrequencies };
}

/**
 * True BM25F: per term one combined posting list (the complete term score) and, per field, the shares of the
 * breakdown (only where positive), exactly as `finalizeBm25f` computes them.
 */
function* bm25fRows(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<PostingRow> {
  const { terms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const documentCount = fieldEnds[0]!.length;
  const { grouped, documentFrequencies } = bm25fSetup(parameters, pairs);
  for (let term = 0; term < terms.length; term++) {
    const documentFrequency = documentFrequencies[term]!;
    if (documentFrequency === 0) continue;
    // Per document of this term: the part and the term frequency per field.
    const parts = new Map<number, Float64Array>();
    const fieldFrequency = new Map<number, Int32Array>();
    for (let field = 0; field < FIELD_COUNT; field++) {
      const group = grouped[field];
      if (!group) continue;
      const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      for (let position = group.offsets[term]!; position < group.offsets[term + 1]!; position++) {
        const doc = group.docs[position]!;
        const tf = fieldFrequencies[field]!.data[group.sources[position]!]!;
        let docParts = parts.get(doc);
        if (!docParts) {
          docParts = new Float64Array(FIELD_COUNT);
          parts.set(doc, docParts);
          fieldFrequency.set(doc, new Int32Array(FIELD_COUNT));
        }
        docParts[field] = bm25fPart(parameters, weight, tf, lengths[field]![doc]!, averageLengths[field]!);
        fieldFrequency.get(doc)![field] = tf;
      }
    }
    const idf = bm25fIdf(documentCount, documentFrequency);
    const docs = Int32Array.from([...parts.keys()].sort((left, right) => left - right));
    const tfs = new Int32Array(docs.length);
    const scores = new Float64Array(docs.length);
    const shareDocs: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    const shareValues: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    const shareTfs: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    docs.forEach((doc, index) => {
      const docParts = parts.get(doc)!;
      const frequencies = fieldFrequency.get(doc)!;
      const score = bm25fScore(parameters, idf, docParts);
      let total = 0;
      for (let field = 0; field < FIELD_COUNT; field++) total += frequencies[field]!;
      tfs[index] = total;
      scores[index] = score;
      for (let field = 0; field < FIELD_COUNT; field++) {
        const share = bm25fShare(score, docParts[field]!, docParts);
        if (share > 0) {
          shareDocs[field]!.push(doc);
          shareValues[field]!.push(share);
          shareTfs[field]!.push(frequencies[field]!);
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

/** BM25F, document by document: per term the combined score (the impact), then its positive field shares. */
function* bm25fDocuments(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<ForwardRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const documentCount = fieldEnds[0]!.length;
  const { scored, documentFrequencies } = bm25fSetup(parameters, pairs);
  const idfs = Float64Array.from(documentFrequencies, (frequency) =>
    frequency > 0 ? bm25fIdf(documentCount, frequency) : 0,
  );
  const slot = new Int32Array(terms.length).fill(-1);
  for (let doc = 0; doc < documentCount; doc++) {
    const order: number[] = [];
    const parts: Float64Array[] = [];
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (!scored[field]) continue;
      const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      const begin = doc > 0 ? fieldEnds[field]![doc - 1]! : 0;
      for (let index = begin; index < fieldEnds[field]![doc]!; index++) {
        const term = fieldTerms[field]!.data[index]!;
        if (slot[term] === -1) {
          slot[term] = order.length;
          order.push(term);
          parts.push(new Float64Array(FIELD_COUNT));
        }
        parts[slot[term]!]![field] = bm25fPart(
          parameters,
          weight,
          fieldFrequencies[field]!.data[index]!,
          lengths[field]![doc]!,
          averageLengths[field]!,
        );
      }
    }
    const keys: number[] = [];
    const contributions: number[] = [];
    const impacts = new Float64Array(order.length);
    order.forEach((term, index) => {
      slot[term] = -1;
      const docParts = parts[index]!;
      const score = bm25fScore(parameters, idfs[term]!, docParts);
      impacts[index] = score;
      keys.push(term * FORWARD_KEY_STRIDE + COMBINED_FIELD);
      contributions.push(score);
      for (let field = 0; field < FIELD_COUNT; field++) {
        const share = bm25fShare(score, docParts[field]!, docParts);
        if (share > 0) {
          keys.push(term * FORWARD_KEY_STRIDE + field);
          contributions.push(share);
        }
      }
    });
    yield {
      doc,
      keys: Int32Array.from(keys),
      contributions: Float64Array.from(contributions),
      impactTerms: Int32Array.from(order),
      impacts,
    };
  }
}

/**
 * Collects each term's best postings by impact (descending, then dense id) from the forward rows, keeping at
 * most the deepest block end per term, and cuts them into the stored blocks.
 */
export class ImpactCollector {
  private readonly limit = IMPACT_BLOCK_ENDS[IMPACT_BLOCK_ENDS.length - 1]!;
  private readonly docs: (number[] | undefined)[];
  private readonly impacts: (number[] | undefined)[];
  private readonly frequencies: Int32Array;
  /**
   * Per term, once its postings were cut: the impact of the last one kept. A later posting (a higher dense id)
   * with an impact no higher ranks after it, so it can never be kept: it is skipped without being stored.
   */
  private readonly floors: Float64Array;
  /** False once an impact was negative or not finite: the blocks then bound nothing. */
  bounded = true;

  constructor(private readonly terms: readonly string[]) {
    this.docs = new Array(terms.length);
    this.impacts = new Array(terms.length);
    this.frequencies = new Int32Array(terms.length);
    this.floors = new Float64Array(terms.length).fill(Number.NEGATIVE_INFINITY);
  }

  add(row: ForwardRow): void {
    for (let index = 0; index < row.impactTerms.length; index++) {
      const term = row.impactTerms[index]!;
      this.frequencies[term]!++;
      let docs = this.docs[term];
      let impacts = this.impacts[term];
      if (!docs || !impacts) {
        docs = [];
        impacts = [];
        this.docs[term] = docs;
        this.impacts[term] = impacts;
      }
      const impact = row.impacts[index]!;
      if (!(impact >= 0 && impact < Number.POSITIVE_INFINITY)) this.bounded = false;
      if (impact <= this.floors[term]!) continue;
      docs.push(row.doc);
      impacts.push(impact);
      if (docs.length >= 2 * this.limit + 1) this.cut(term);
    }
  }

  /** Sorts a term's postings by impact and keeps the best `limit` plus the next one (whose impact is the cut). */
  private cut(term: number): void {
    const docs = this.docs[term]!;
    const impacts = this.impacts[term]!;
    const order = Array.from(docs.keys()).sort(
      (left, right) => impacts[right]! - impacts[left]! || docs[left]! - docs[right]!,
    );
    const kept = order.slice(0, this.limit + 1);
    this.docs[term] = kept.map((index) => docs[index]!);
    this.impacts[term] = kept.map((index) => impacts[index]!);
    if (kept.length === this.limit + 1) this.floors[term] = impacts[kept[this.limit]!]!;
  }

  /** The impact rows, term by term. */
  *rows(): Generator<ImpactRow> {
    for (let term = 0; term < this.terms.length; term++) {
      if (!this.docs[term]) continue;
      this.cut(term);
      const docs = this.docs[term]!;
      const impacts = this.impacts[term]!;
      const documentFrequency = this.frequencies[term]!;
      let start = 0;
      for (
        let block = 0;
        block < IMPACT_BLOCK_ENDS.length && start < Math.min(documentFrequency, this.limit);
        block++
      ) {
        const end = Math.min(IMPACT_BLOCK_ENDS[block]!, documentFrequency);
        yield {
          term: this.terms[term]!,
          termId: term,
          block,
          documentFrequency,
          docs: Int32Array.from(docs.slice(start, end)),
          impacts: Float64Array.from(impacts.slice(start, end)),
          nextImpact: end < docs.length ? impacts[end]! : 0,
        };
        start = end;
      }
      this.docs[term] = undefined;
      this.impacts[term] = undefined;
    }
  }
}
