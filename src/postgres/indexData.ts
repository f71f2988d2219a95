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
  DEFAULT_ANALYZER,
  DEFAULT_BM25_B,
  DEFAULT_BM25_K1,
  DEFAULT_SCORING_MODE,
  KNOWLEDGE_FIELD_NAMES,
} from "../knowledge/defaults.js";
import { entryFieldTexts } from "../knowledge/document.js";
import {
  buildDocument,
  compareCodeUnits,
  type KnowledgeIndexBuildOptions,
  resolveFieldWeights,
} from "../knowledge/knowledgeIndex.js";
import { MAX_RESERVED_POSTINGS } from "../knowledge/lexicalIndexBuilder.js";
import { type BuildSegment, parallelIndexing } from "../knowledge/parallelBuild.js";
import { IntBuffer } from "../knowledge/postings.js";
import { TermCounter } from "../knowledge/termCounter.js";
import { TermDictionary } from "../knowledge/termDictionary.js";
import type {
  KnowledgeAnalyzerName,
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { bm25fRows } from "./bm25fPostings.js";
import { EntryListsCollector, type PhraseLists } from "./entryLists.js";
import { FIELD_COUNT, type FieldPairs } from "./fieldPairs.js";
import { sumRows } from "./sumPostings.js";

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
    analyzer: options.analyzer ?? DEFAULT_ANALYZER,
    scoring: options.scoring ?? DEFAULT_SCORING_MODE,
  };
}

/**
 * One posting list: a term in one field (or `COMBINED_FIELD`), documents ascending. Its arrays may be scratch
 * space that the next row reuses: copy what must outlive the step.
 */
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
  relations: ArrayLike<number>;
  /** Tokens per field (title, aliases, keywords, summary, body), after analysis. */
  fieldLengths: ArrayLike<number>;
};

/** Everything a generation stores. */
export type GenerationData = {
  parameters: PostgresIndexParameters;
  /**
   * The entries' rows in dense-id order, made as they are read (each row's arrays are views valid until the next
   * row): held as the entries and a few typed arrays, not an object and two arrays per entry (see `PhraseLists`).
   */
  entryRows: () => Generator<EntryRow>;
  /** Posting lists of every scored field (computed lazily, field by field; each row's arrays valid until the next). */
  postings: () => Generator<PostingRow>;
  /** Phrase key → dense ids naming it exactly (id, title) and as an alias; keys in first-seen order. */
  phrases: PhraseLists;
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

/** Documents filed before the pair buffers are sized for the whole registry (see `reservePairs`). */
const RESERVE_AFTER_DOCUMENTS = 1024;
/** A pair buffer filled below this fraction is copied to its length at the end. */
const TRIM_BELOW = 0.85;

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
  // Each entry's relations (dense ids), one after another, and where each entry's end.
  const relations = new IntBuffer();
  const relationEnds = new Int32Array(documentCount);
  /** Files one field's counted terms of document `doc`. */
  const fileField = (doc: number, field: number, length: number) => {
    fieldEnds[field]![doc] = fieldTerms[field]!.length;
    lengths[field]![doc] = length;
    totals[field]! += length;
  };
  /** Counts document `doc` on this thread. */
  const countHere = (doc: number, entry: NormalizedKnowledgeEntry) => {
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
      fileField(doc, field, length);
    }
  };
  /**
   * Files document `doc` from a build worker's counts (the in-memory build's format: per field its length, its
   * distinct terms, then (worker term id, frequency) pairs); returns where the next document's counts start.
   */
  const fileCounted = (doc: number, segment: BuildSegment) => {
    const counts = segment.counts!;
    const termIds = segment.termIds!;
    let position = segment.offset;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const length = counts[position++]!;
      const distinct = counts[position++]!;
      const terms = fieldTerms[field]!;
      const frequencies = fieldFrequencies[field]!;
      for (let index = 0; index < distinct; index++) {
        terms.push(termIds[counts[position++]!]!);
        frequencies.push(counts[position++]!);
      }
      fileField(doc, field, length);
    }
    segment.offset = position;
  };
  /**
   * Files entry `doc`'s lists from the phrase keys the worker computed with its counts (see `PartPhrases`: the
   * keys `lists.add` computes, so the main thread, whose heap holds the registry, does not).
   */
  const fileKeys = (entry: NormalizedKnowledgeEntry, doc: number, segment: BuildSegment): number[] => {
    const phrases = segment.phrases;
    if (!phrases) return lists.add(entry, doc);
    const position = 2 * (doc - segment.start);
    const exactCount = phrases.counts[position]!;
    const aliasCount = phrases.counts[position + 1]!;
    const related = lists.addWithKeys(entry, doc, phrases.keys, segment.phraseOffset, exactCount, aliasCount);
    segment.phraseOffset += exactCount + aliasCount;
    return related;
  };
  /**
   * Sizes the pair buffers for the whole registry from the first `filed` documents (as the in-memory build's
   * `reserveFor`), so that they are allocated about once instead of doubling: every large allocation may set off
   * a full garbage collection, which walks the registry's heap (five of them, 3 s, at 100k entries).
   */
  const reservePairs = (filed: number) => {
    const scale = (documentCount / filed) * 1.1;
    const estimates = fieldTerms.map((buffer) => Math.ceil(buffer.length * scale) + 1024);
    const total = estimates.reduce((sum, estimate) => sum + estimate, 0);
    const shrink = total > MAX_RESERVED_POSTINGS ? MAX_RESERVED_POSTINGS / total : 1;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const pairs = Math.ceil(estimates[field]! * shrink);
      fieldTerms[field]!.reserve(pairs);
      fieldFrequencies[field]!.reserve(pairs);
    }
  };
  // Large registries are tokenized and counted by the in-memory build's worker threads (the same counts and term
  // ids as one thread, see `parallelBuild.ts`) while this thread files them in dense-id order.
  const parallel = parallelIndexing(entries, {
    analyzer: parameters.analyzer,
    threads: options.threads,
    ...(options.partEntries !== undefined ? { partEntries: options.partEntries } : {}),
  });
  const internTerms = (newTerms: readonly string[]) => newTerms.map((term) => dictionary.intern(term));
  try {
    let doc = 0;
    while (doc < documentCount) {
      const segment = parallel?.segmentAt(doc) ?? null;
      if (segment) parallel!.await(segment, Number.POSITIVE_INFINITY, internTerms);
      const counted = segment && segment.helper >= 0 ? segment : null;
      const end = segment ? segment.end : documentCount;
      const started = performance.now();
      const from = doc;
      for (; doc < end; doc++) {
        const entry = entries[doc]!;
        let related: number[];
        if (counted) {
          fileCounted(doc, counted);
          related = fileKeys(entry, doc, counted);
        } else {
          countHere(doc, entry);
          related = lists.add(entry, doc);
        }
        for (const other of related) relations.push(other);
        relationEnds[doc] = relations.length;
        if (doc + 1 === RESERVE_AFTER_DOCUMENTS) reservePairs(doc + 1);
      }
      parallel?.record(doc - from, performance.now() - started, counted !== null);
    }
  } finally {
    parallel?.close();
  }
  counter.release();
  // A pair buffer that grew past its reservation by doubling is trimmed to its pairs, so a large registry does not
  // hold up to twice them through the load (one buffer copied at a time); one within a reservation's margin is kept
  // (a copy costs a fresh allocation and its page faults).
  for (const buffer of [...fieldTerms, ...fieldFrequencies]) {
    if (buffer.length < buffer.data.length * TRIM_BELOW) buffer.data = buffer.data.slice(0, buffer.length);
    else buffer.data = buffer.data.subarray(0, buffer.length);
  }
  const terms = dictionary.allTerms();
  const averageLengths = totals.map((total) => (documentCount > 0 ? total / documentCount : 0));
  const pairs: FieldPairs = { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths };
  const postings = (): Generator<PostingRow> =>
    parameters.scoring === "bm25f" ? bm25fRows(parameters, pairs) : sumRows(parameters, pairs);
  const relationIds = relations.data;
  /** The entries' rows, each row's arrays views of scratch space or of the relations (see `entryRows`). */
  const entryRows = function* (): Generator<EntryRow> {
    const fieldLengths = new Int32Array(FIELD_COUNT);
    let start = 0;
    for (let doc = 0; doc < documentCount; doc++) {
      for (let field = 0; field < FIELD_COUNT; field++) fieldLengths[field] = lengths[field]![doc]!;
      const end = relationEnds[doc]!;
      yield { doc, entry: entries[doc]!, relations: relationIds.subarray(start, end), fieldLengths };
      start = end;
    }
  };
  return {
    parameters,
    entryRows,
    postings,
    phrases: lists.phrases,
    maxPhraseWords: lists.maxPhraseWords,
    restricted: lists.restricted,
    byIntegration: lists.byIntegration,
    byDomain: lists.byDomain,
    documentCount,
    averageLengths,
  };
}
