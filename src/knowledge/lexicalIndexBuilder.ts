/**
 * The build phase of a `KnowledgeLexicalIndex`: documents are tokenized straight into term ids and appended to
 * per-field build buffers, then finalized step by step into the index's finished state (postings with their
 * precomputed contributions, term-frequency postings, ranks). The index owns a builder until it is finalized.
 */
import type {
  IndexedKnowledgeDocument,
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import type { TokenAnalyzer } from "./analyzer.js";
import { bm25fPostings } from "./bm25fPostings.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { buildDocument, type DocumentWithRawTexts, entryFieldTexts, RAW_FIELD_TEXTS } from "./document.js";
import { allocateFieldArrays, type FieldArrays, fieldPostings, type ScatterHelper } from "./fieldPostings.js";
import type { FinishedLexicalState } from "./indexParts.js";
import { longListBoundSteps } from "./listBounds.js";
import {
  createFieldBuilder,
  emptyFrequencyPostings,
  FIELD_COUNT,
  type FieldBuilder,
  type FieldPostings,
  type FinishedField,
  type FrequencyPostings,
  inactivePostings,
} from "./postings.js";
import { RankedIdMap } from "./rankedIdMap.js";
import { rankIds } from "./ranking.js";
import type { TermCounter } from "./termCounter.js";
import type { TermDictionary } from "./termDictionary.js";

/**
 * Most postings reserved in advance over all fields (2^28: 2 GiB of term ids and frequencies, what a million
 * synthetic entries need). Below the cap the buffers are allocated once; past it they double as they fill, which
 * at a million entries meant two doublings of the body's buffers (each a copy and a full garbage collection) and a
 * larger peak than the reservation.
 */
export const MAX_RESERVED_POSTINGS = 1 << 28;

/**
 * What a build reads from the index it builds: its parameters, and the term dictionary and id lists it fills
 * (the index's own, so that the index sees the documents added so far).
 * @internal
 */
export type LexicalIndexBuildTarget = {
  readonly fieldWeights: Readonly<KnowledgeFieldWeights>;
  readonly k1: number;
  readonly b: number;
  readonly scoring: KnowledgeScoringMode;
  readonly analyzer: TokenAnalyzer | null;
  readonly dictionary: TermDictionary;
  readonly ids: string[];
  readonly denseIds: Map<string, number>;
};

/**
 * The build state of one index: add documents, then call {@link finalizeStep} until it returns the finished state.
 * @internal
 */
export class LexicalIndexBuilder {
  private readonly fieldWeights: Readonly<KnowledgeFieldWeights>;
  private readonly k1: number;
  private readonly b: number;
  private readonly scoring: KnowledgeScoringMode;
  private readonly analyzer: TokenAnalyzer | null;
  private readonly dictionary: TermDictionary;
  private readonly ids: string[];
  /**
   * Id → dense id while ids come out of order (filled from the first id that does not follow the previous one in
   * code-unit order; a compaction fills it itself). Empty while ids come strictly ascending, as a snapshot build adds
   * them: then a binary search over {@link ids} finds them, and the finished index keeps that instead of a map.
   */
  private readonly denseIds: Map<string, number>;
  /** Whether every id so far followed the previous one in code-unit order (then {@link denseIds} is empty). */
  private ascending = true;
  /** Term frequencies of the document being added (null for a compaction's builder, which adds no document). */
  private counter: TermCounter | null;
  /** Per-field build buffers; null once finalized. */
  private builders: FieldBuilder[] | null;
  /** A parallel build's worker, which scatters part of each large field's postings when finalizing. */
  private scatterHelper: ScatterHelper | null = null;
  /** Per field (sum) or one over all fields (BM25F): postings with precomputed contributions. */
  private postings: FieldPostings[] = [];
  /** Per field: term-frequency postings, what query-time scoring and compaction read. */
  private termPostings: FrequencyPostings[] = [];
  private averageLengths: Float64Array = new Float64Array(FIELD_COUNT);
  /** Per field: each document's length in tokens (set when finalizing starts). */
  private fieldLengths: Int32Array[] = [];
  /** BM25F only: per posting, each field's share of its score (for the breakdown). */
  private bm25fShares: Float64Array | null = null;
  /** Terms the postings cover: the dictionary's size when finalizing started (it may grow afterwards). */
  private termLimit = 0;
  /** Finalize progress: the statistics are computed, and the field whose postings are being finalized. */
  private statisticsReady = false;
  private pendingField: Generator<void, FinishedField, void> | null = null;
  /** Finalize progress: the upper bounds of the long lists, computed after the postings. */
  private pendingBounds: Generator<void, Map<number, number>[], void> | null = null;
  /** Per field: the arrays its finished postings are written into, allocated when finalizing starts. */
  private fieldArrays: (FieldArrays | null)[] = [];

  constructor(target: LexicalIndexBuildTarget, builders: FieldBuilder[], counter: TermCounter | null) {
    this.fieldWeights = target.fieldWeights;
    this.k1 = target.k1;
    this.b = target.b;
    this.scoring = target.scoring;
    this.analyzer = target.analyzer;
    this.dictionary = target.dictionary;
    this.ids = target.ids;
    this.denseIds = target.denseIds;
    this.builders = builders;
    this.counter = counter;
  }

  /** See `KnowledgeLexicalIndex.add`. */
  add(document: IndexedKnowledgeDocument): void {
    const rawTexts = this.analyzer ? undefined : (document as DocumentWithRawTexts)[RAW_FIELD_TEXTS];
    this.addDocument(document.id, rawTexts, document);
  }

  /**
   * Sizes the build buffers for `documentCount` documents in all, extrapolated from the documents added so far,
   * so that large builds allocate each buffer about once instead of doubling it: every large allocation can
   * trigger a full garbage collection, which walks the host's whole heap.
   */
  reserveFor(documentCount: number, maxReservedPostings = MAX_RESERVED_POSTINGS): void {
    const builders = this.builders;
    const added = this.ids.length;
    if (!builders || added === 0 || documentCount <= added) return;
    const scale = (documentCount / added) * 1.1;
    const estimates = builders.map((builder) => Math.ceil(builder.terms.length * scale) + 1024);
    // Unusual first documents (say, a run of megabyte bodies) must not make the estimate a huge allocation:
    // past the cap the buffers are scaled down and simply keep doubling when they fill.
    const total = estimates.reduce((sum, estimate) => sum + estimate, 0);
    const shrink = total > maxReservedPostings ? maxReservedPostings / total : 1;
    builders.forEach((builder, field) => {
      const postings = Math.ceil(estimates[field]! * shrink);
      builder.terms.reserve(postings);
      builder.frequencies.reserve(postings);
      builder.ends.reserve(documentCount);
      builder.lengths.reserve(documentCount);
    });
  }

  /**
   * Lets a parallel build's worker scatter part of each large field's postings when finalizing: the build buffers
   * move to shared memory (call before adding any document).
   */
  useScatterHelper(helper: ScatterHelper): void {
    this.builders = Array.from({ length: FIELD_COUNT }, () => createFieldBuilder(true));
    this.scatterHelper = helper;
  }

  /**
   * Adds an entry's search document straight from the entry's texts (what a snapshot build does), without the
   * intermediate document object.
   */
  addEntry(entry: NormalizedKnowledgeEntry): void {
    if (this.analyzer) this.add(buildDocument(entry));
    else this.addDocument(entry.id, entryFieldTexts(entry), undefined);
  }

  /**
   * Adds a document whose fields were tokenized and counted by a build worker: from `offset`, `counts` holds per
   * field its length in tokens, its number of distinct terms, then (term, frequency) pairs in order of first
   * occurrence, with the worker's term ids, which `termIds` maps to this index's (see
   * `KnowledgeLexicalIndex.internTerms`). The same buffers as {@link addEntry} would fill. Returns the offset
   * after the document.
   */
  addCountedDocument(id: string, counts: Int32Array, offset: number, termIds: Int32Array): number {
    const builders = this.builders;
    if (!builders || !this.counter) throw new Error("KnowledgeLexicalIndex.add: the index is finalized");
    this.register(id);
    let position = offset;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const builder = builders[field]!;
      const length = counts[position++]!;
      const distinct = counts[position++]!;
      builder.lengths.push(length);
      builder.total += length;
      const terms = builder.terms;
      const frequencies = builder.frequencies;
      for (let index = 0; index < distinct; index++) {
        terms.push(termIds[counts[position++]!]!);
        frequencies.push(counts[position++]!);
      }
      builder.ends.push(terms.length);
    }
    return position;
  }

  /** Gives `id` the next dense id; a duplicate is an error. */
  private register(id: string): void {
    const ids = this.ids;
    if (this.ascending) {
      // An id after the previous one in code-unit order is new (every earlier id is smaller).
      if (ids.length === 0 || ids[ids.length - 1]! < id) {
        ids.push(id);
        return;
      }
      this.ascending = false;
      for (let doc = 0; doc < ids.length; doc++) this.denseIds.set(ids[doc]!, doc);
    }
    if (this.denseIds.has(id))
      throw new Error(`KnowledgeLexicalIndex.add: duplicate id ${JSON.stringify(id)}`);
    this.denseIds.set(id, ids.length);
    ids.push(id);
  }

  /** Dense id of an id added so far, or -1. */
  denseIdOf(id: string): number {
    if (this.denseIds.size > 0 || !this.ascending) return this.denseIds.get(id) ?? -1;
    const ids = this.ids;
    let low = 0;
    let high = ids.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const found = ids[middle]!;
      if (found === id) return middle;
      if (found < id) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  private addDocument(
    id: string,
    rawTexts: readonly (readonly string[])[] | undefined,
    document: IndexedKnowledgeDocument | undefined,
  ): void {
    const builders = this.builders;
    const counter = this.counter;
    if (!builders || !counter) throw new Error("KnowledgeLexicalIndex.add: the index is finalized");
    const docId = this.ids.length;
    this.register(id);
    for (let field = 0; field < FIELD_COUNT; field++) {
      const builder = builders[field]!;
      const marker = docId * FIELD_COUNT + field + 1;
      let length: number;
      if (rawTexts) length = counter.countTexts(rawTexts[field]!, marker);
      else {
        const raw = document?.fields[KNOWLEDGE_FIELD_NAMES[field]!] ?? [];
        length = counter.countTokens(this.analyzer ? this.analyzer(raw) : raw, marker);
      }
      builder.lengths.push(length);
      builder.total += length;
      const termIds = counter.fieldTermIds;
      for (let index = 0; index < counter.fieldTermCount; index++) {
        const termId = termIds[index]!;
        builder.terms.push(termId);
        builder.frequencies.push(counter.frequency(termId));
      }
      builder.ends.push(builder.terms.length);
      counter.clearField();
    }
  }

  /**
   * See `KnowledgeLexicalIndex.finalizeStep`. Returns null while steps remain, then the finished state, once
   * (the build state is released).
   */
  finalizeStep(): FinishedLexicalState | null {
    const builders = this.builders!;
    const documentCount = this.ids.length;
    if (!this.statisticsReady) this.termLimit = this.dictionary.size;
    const termCount = this.termLimit;
    if (!this.statisticsReady) {
      for (let index = 0; index < FIELD_COUNT; index++) {
        this.averageLengths[index] = documentCount > 0 ? builders[index]!.total / documentCount : 0;
      }
      this.fieldLengths = builders.map((builder) => builder.lengths.data.slice(0, documentCount));
      // Every field's finished arrays at once (see FieldArrays): one burst of external memory, not one per field.
      const cursor = new Int32Array(termCount);
      this.fieldArrays = builders.map((builder, index) => {
        if (!(this.fieldWeights[KNOWLEDGE_FIELD_NAMES[index]!] > 0)) return null;
        const scored = this.scoring === "sum" && this.averageLengths[index]! > 0;
        return allocateFieldArrays(builder.terms.length, termCount, scored, cursor);
      });
      this.statisticsReady = true;
      return null;
    }
    const field = this.termPostings.length;
    if (field < FIELD_COUNT) {
      const weight = this.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      if (!(weight > 0)) {
        if (this.scoring === "sum") this.postings.push(inactivePostings());
        this.termPostings.push(emptyFrequencyPostings());
        return null;
      }
      const averageLength = this.averageLengths[field]!;
      // Contributions are precomputed for scored fields in sum mode; BM25F precomputes its own postings below.
      this.pendingField ??= fieldPostings(
        builders[field]!,
        this.fieldLengths[field]!,
        termCount,
        documentCount,
        this.scoring === "sum" && averageLength > 0
          ? { weight, averageLength, k1: this.k1, b: this.b }
          : null,
        this.scatterHelper,
        this.fieldArrays[field] ?? null,
      );
      const step = this.pendingField.next();
      if (step.done) {
        if (this.scoring === "sum") this.postings.push(step.value.postings);
        this.termPostings.push(step.value.frequencies);
        this.pendingField = null;
        this.fieldArrays[field] = null;
      }
      return null;
    }
    if (this.scoring === "bm25f" && this.postings.length === 0) {
      const { shares, ...postings } = bm25fPostings(
        builders,
        termCount,
        documentCount,
        this.fieldWeights,
        this.averageLengths,
        this.k1,
        this.b,
      );
      this.bm25fShares = shares;
      this.postings.push(postings);
      return null;
    }
    // The pruning's bounds of the long lists, in slices (see listBounds.ts).
    this.pendingBounds ??= longListBoundSteps(this.postings, termCount);
    const boundStep = this.pendingBounds.next();
    if (!boundStep.done) return null;
    const ranks = rankIds(this.ids);
    // Ids added in code-unit order (a snapshot build) are found by binary search; a compaction filled the map.
    const denseIds =
      this.denseIds.size === 0 && this.ids.length > 0 ? RankedIdMap.ofSorted(this.ids) : this.denseIds;
    const state: FinishedLexicalState = {
      dictionary: this.dictionary,
      ids: this.ids,
      denseIds,
      ranks,
      postings: this.postings,
      termPostings: this.termPostings,
      averageLengths: this.averageLengths,
      bm25fShares: this.bm25fShares,
      termLimit: this.termLimit,
      base: {
        ids: this.ids,
        denseIds,
        ranks,
        order: null,
        termPostings: this.termPostings,
        lengths: this.fieldLengths,
        totalLengths: Float64Array.from(builders, (builder) => builder.total),
        scratch: null,
      },
      changes: null,
      postingLoader: null,
      upperBounds: boundStep.value,
    };
    this.builders = null;
    this.pendingBounds = null;
    this.scatterHelper = null;
    this.counter?.release();
    this.counter = null;
    return state;
  }
}
