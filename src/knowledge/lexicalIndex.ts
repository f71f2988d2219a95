/**
 * The field-aware BM25 index: documents are added (tokenized straight into term ids), finalized once into
 * per-field postings, then searched. Entries get dense integer ids; postings of each field are
 * compressed-sparse-row typed arrays per term whose postings carry their finished BM25 contribution, so a query
 * only adds precomputed numbers for the postings of its own terms. Eligibility is a byte mask applied while
 * scoring, before top-K.
 */
import type {
  IndexedKnowledgeDocument,
  KnowledgeAnalyzerName,
  KnowledgeFieldWeights,
  KnowledgeLexicalMatch,
  KnowledgeLexicalSearcher,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { getAnalyzer, type TokenAnalyzer } from "./analyzer.js";
import { assertIndexParameters } from "./bm25.js";
import { compactedBuilders } from "./compaction.js";
import { DEFAULT_BM25_B, DEFAULT_BM25_K1, KNOWLEDGE_FIELD_NAMES, MAX_QUERY_TOKENS } from "./defaults.js";
import {
  buildDocument,
  type DocumentWithRawTexts,
  entryFieldTexts,
  RAW_FIELD_TEXTS,
  resolveFieldWeights,
} from "./document.js";
import { bm25fPostings, fieldPostings, type ScatterHelper } from "./fieldPostings.js";
import { addedDenseIdOf, type IndexBase, type IndexChanges } from "./indexChanges.js";
import {
  type FinishedLexicalState,
  type KnowledgeLexicalIndexParts,
  type PostingLoader,
  partsOfState,
  stateFromParts,
} from "./indexParts.js";
import { changedState, compactedState } from "./lexicalIndexChanges.js";
import { scoreQueryLive } from "./liveScoring.js";
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
import { rankIds } from "./ranking.js";
import { scoreQuery } from "./scoring.js";
import { TermCounter } from "./termCounter.js";
import { TermDictionary } from "./termDictionary.js";

/** Parameters of the lexical index. Everything is optional; defaults are NeuroLink's. */
export type KnowledgeLexicalIndexOptions = {
  /** BM25 term-frequency saturation. Default 1.5. */
  k1?: number;
  /** BM25 length normalization. Default 0.75. */
  b?: number;
  /** Analyzer for document and query tokens. Default `"none"`. */
  analyzer?: KnowledgeAnalyzerName;
  /** Evidence combination. Default `"sum"`. */
  scoring?: KnowledgeScoringMode;
};

/**
 * Most postings reserved in advance over all fields (2^28: 2 GiB of term ids and frequencies, what a million
 * synthetic entries need). Below the cap the buffers are allocated once; past it they double as they fill, which
 * at a million entries meant two doublings of the body's buffers (each a copy and a full garbage collection) and a
 * larger peak than the reservation.
 */
export const MAX_RESERVED_POSTINGS = 1 << 28;

/**
 * Field-aware BM25 index (NeuroLink's "BM25F-style" scorer): per field, Okapi BM25 with Lucene's always-positive
 * IDF (see `bm25.ts`), df counted in that field only and N over every document, then summed with the field
 * weights. `k1` (default 1.5) is in [0, ∞), `b` (default 0.75) in [0, 1]. A field whose weight is ≤ 0, or that is
 * empty in every document, is skipped. Use: `add` each document, `finalize` once, then `search`.
 *
 * With `scoring: "bm25f"`, the weighted, length-normalized term frequencies of all fields are summed before one
 * saturation, with one IDF over documents containing the term in any scored field; the per-field breakdown then
 * splits each term's score in proportion to the fields' normalized frequencies.
 */
export class KnowledgeLexicalIndex implements KnowledgeLexicalSearcher {
  /** Resolved field weights. */
  readonly fieldWeights: Readonly<KnowledgeFieldWeights>;
  readonly k1: number;
  readonly b: number;
  readonly analyzerName: KnowledgeAnalyzerName;
  readonly scoring: KnowledgeScoringMode;
  private readonly analyzer: TokenAnalyzer | null;
  /** Term ↔ id; shared (append-only) with the indexes derived from this one. */
  private dictionary = new TermDictionary();
  /** Term frequencies of the document being added (build state, released by finalize). */
  private counter: TermCounter | null = new TermCounter(this.dictionary);
  private ids: string[] = [];
  private denseIds = new Map<string, number>();
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
  /** The finished arrays shared with derived indexes; null before finalize, or when loaded without frequencies. */
  private base: IndexBase | null = null;
  /** What this index changes relative to {@link base}; null for a full build (precomputed contributions apply). */
  private changes: IndexChanges | null = null;
  /** Rank of each dense id in code-unit order of entry ids: the deterministic tie-break. */
  private ranks: Int32Array = new Int32Array(0);
  /** BM25F only: per posting, each field's share of its score (for the breakdown). */
  private bm25fShares: Float64Array | null = null;
  /** Terms the postings cover: the dictionary's size when finalizing started (it may grow afterwards). */
  private termLimit = 0;
  private finalized = false;
  /** Finalize progress: the statistics are computed, and the field whose postings are being finalized. */
  private statisticsReady = false;
  private pendingField: Generator<void, FinishedField, void> | null = null;
  /** Loaded from an artifact: fills the postings of a term when a search first reads it (null: all present). */
  private postingLoader: PostingLoader | null = null;
  /** Per entry of {@link postings}: each queried term's largest contribution (the pruning's upper bounds). */
  private upperBounds: Map<number, number>[] | null = null;

  constructor(fieldWeights?: Partial<KnowledgeFieldWeights>, options: KnowledgeLexicalIndexOptions = {}) {
    this.fieldWeights = Object.freeze(resolveFieldWeights(fieldWeights));
    this.k1 = options.k1 ?? DEFAULT_BM25_K1;
    this.b = options.b ?? DEFAULT_BM25_B;
    this.analyzerName = options.analyzer ?? "none";
    this.scoring = options.scoring ?? "sum";
    this.analyzer = getAnalyzer(this.analyzerName);
    assertIndexParameters(this.fieldWeights, this.k1, this.b);
    this.builders = Array.from({ length: FIELD_COUNT }, createFieldBuilder);
  }

  /** Number of documents (after changes: the live ones). */
  get size(): number {
    return this.changes ? this.changes.documentCount : this.ids.length;
  }

  /** Number of dense ids (after changes, removed documents keep theirs until a compaction). */
  get capacity(): number {
    return this.changes ? this.changes.live.length : this.ids.length;
  }

  /** Whether {@link withChanges} can derive a changed index from this one. */
  get updatable(): boolean {
    return this.base !== null;
  }

  /** Whether this index carries changes that {@link compactSteps} would fold into a fresh index. */
  get hasChanges(): boolean {
    return this.changes !== null;
  }

  /** Entry id of a dense id. */
  idAt(denseId: number): string {
    const baseCount = this.ids.length;
    return denseId < baseCount ? this.ids[denseId]! : this.changes!.added.ids[denseId - baseCount]!;
  }

  /** Whether a dense id belongs to a live document (not removed or replaced by a change). */
  isLiveDocument(denseId: number): boolean {
    return this.changes ? this.changes.live[denseId] === 1 : denseId >= 0 && denseId < this.ids.length;
  }

  /** Dense id of a (live) entry id, or -1. */
  denseIdOf(id: string): number {
    const changes = this.changes;
    if (!changes) return this.denseIds.get(id) ?? -1;
    const doc = this.denseIds.get(id);
    if (doc !== undefined && changes.live[doc] === 1) return doc;
    return addedDenseIdOf(changes, id);
  }

  /** Adds one document. Ids must be unique; documents cannot be added after {@link finalize}. */
  add(document: IndexedKnowledgeDocument): void {
    const rawTexts = this.analyzer ? undefined : (document as DocumentWithRawTexts)[RAW_FIELD_TEXTS];
    this.addDocument(document.id, rawTexts, document);
  }

  /**
   * Sizes the build buffers for `documentCount` documents in all, extrapolated from the documents added so far,
   * so that large builds allocate each buffer about once instead of doubling it: every large allocation can
   * trigger a full garbage collection, which walks the host's whole heap.
   * @internal
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
   * @internal
   */
  useScatterHelper(helper: ScatterHelper): void {
    if (!this.builders || this.ids.length > 0)
      throw new Error("KnowledgeLexicalIndex.useScatterHelper: call before adding documents");
    this.builders = Array.from({ length: FIELD_COUNT }, () => createFieldBuilder(true));
    this.scatterHelper = helper;
  }

  /**
   * Adds an entry's search document straight from the entry's texts (what a snapshot build does), without the
   * intermediate document object.
   * @internal
   */
  addEntry(entry: NormalizedKnowledgeEntry): void {
    if (this.analyzer) this.add(buildDocument(entry));
    else this.addDocument(entry.id, entryFieldTexts(entry), undefined);
  }

  /**
   * Adds a document whose fields were tokenized and counted by a build worker: from `offset`, `counts` holds per
   * field its length in tokens, its number of distinct terms, then (term, frequency) pairs in order of first
   * occurrence, with the worker's term ids, which `termIds` maps to this index's (see {@link internTerms}). The
   * same buffers as {@link addEntry} would fill. Returns the offset after the document.
   * @internal
   */
  addCountedDocument(id: string, counts: Int32Array, offset: number, termIds: Int32Array): number {
    const builders = this.builders;
    if (!builders || !this.counter) throw new Error("KnowledgeLexicalIndex.add: the index is finalized");
    if (this.denseIds.has(id))
      throw new Error(`KnowledgeLexicalIndex.add: duplicate id ${JSON.stringify(id)}`);
    this.denseIds.set(id, this.ids.length);
    this.ids.push(id);
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

  /**
   * The ids of `terms` in this index's dictionary, in order, each added when new: where a build worker's new terms
   * get their ids, in the order a single-threaded build would have met them.
   * @internal
   */
  internTerms(terms: readonly string[]): number[] {
    return terms.map((term) => this.dictionary.intern(term));
  }

  private addDocument(
    id: string,
    rawTexts: readonly (readonly string[])[] | undefined,
    document: IndexedKnowledgeDocument | undefined,
  ): void {
    const builders = this.builders;
    const counter = this.counter;
    if (!builders || !counter) throw new Error("KnowledgeLexicalIndex.add: the index is finalized");
    if (this.denseIds.has(id))
      throw new Error(`KnowledgeLexicalIndex.add: duplicate id ${JSON.stringify(id)}`);
    const docId = this.ids.length;
    this.ids.push(id);
    this.denseIds.set(id, docId);
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
      for (const termId of counter.fieldTerms) {
        builder.terms.push(termId);
        builder.frequencies.push(counter.frequency(termId));
      }
      builder.ends.push(builder.terms.length);
      counter.clearField();
    }
  }

  /** Computes average field lengths, IDF and every posting's contribution, and releases the build state. */
  finalize(): void {
    while (!this.finalizeStep()) {
      // Runs every step synchronously.
    }
  }

  /**
   * One step of {@link finalize}: the statistics first, then one field's postings per call (BM25F: all at once),
   * then the ranks. Returns true when the index is finalized. Lets an async build yield between fields, which are
   * each large at scale.
   * @internal
   */
  finalizeStep(): boolean {
    if (this.finalized) return true;
    const builders = this.builders!;
    const documentCount = this.ids.length;
    if (!this.statisticsReady) this.termLimit = this.dictionary.size;
    const termCount = this.termLimit;
    if (!this.statisticsReady) {
      for (let index = 0; index < FIELD_COUNT; index++) {
        this.averageLengths[index] = documentCount > 0 ? builders[index]!.total / documentCount : 0;
      }
      this.fieldLengths = builders.map((builder) => builder.lengths.data.slice(0, documentCount));
      this.statisticsReady = true;
      return false;
    }
    const field = this.termPostings.length;
    if (field < FIELD_COUNT) {
      const weight = this.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      if (!(weight > 0)) {
        if (this.scoring === "sum") this.postings.push(inactivePostings());
        this.termPostings.push(emptyFrequencyPostings());
        return false;
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
      );
      const step = this.pendingField.next();
      if (step.done) {
        if (this.scoring === "sum") this.postings.push(step.value.postings);
        this.termPostings.push(step.value.frequencies);
        this.pendingField = null;
      }
      return false;
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
      return false;
    }
    this.ranks = rankIds(this.ids);
    this.base = {
      ids: this.ids,
      denseIds: this.denseIds,
      ranks: this.ranks,
      order: null,
      termPostings: this.termPostings,
      lengths: this.fieldLengths,
      totalLengths: Float64Array.from(builders, (builder) => builder.total),
      scratch: null,
    };
    this.builders = null;
    this.scatterHelper = null;
    this.counter?.release();
    this.counter = null;
    this.finalized = true;
    return true;
  }

  /**
   * Searches with an eligibility set of entry ids (the seed's contract). Results are sorted by score descending,
   * ties by entry id in code-unit order; at most `topK`.
   */
  search(
    queryTokens: string[],
    topK: number,
    eligibleEntryIds?: ReadonlySet<string>,
  ): KnowledgeLexicalMatch[] {
    let mask: Uint8Array | null = null;
    if (eligibleEntryIds) {
      mask = new Uint8Array(this.capacity);
      for (const id of eligibleEntryIds) {
        const denseId = this.denseIdOf(id);
        if (denseId >= 0) mask[denseId] = 1;
      }
    }
    return this.searchWithMask(queryTokens, topK, mask);
  }

  /**
   * Searches with an eligibility mask indexed by dense id (1 = eligible; null = all eligible). This is the hot
   * path: it touches only the postings of the query's own terms.
   * @internal
   */
  searchWithMask(
    queryTokens: readonly string[],
    topK: number,
    mask: Uint8Array | null,
  ): KnowledgeLexicalMatch[] {
    if (!this.finalized) throw new Error("KnowledgeLexicalIndex.search: call finalize() first");
    if (this.size === 0 || queryTokens.length === 0 || !(topK > 0)) return [];
    const termIds = this.queryTermIds(queryTokens);
    if (termIds.length === 0) return [];
    this.postingLoader?.ensureTerms(termIds);
    if (this.changes) {
      return scoreQueryLive(
        {
          base: this.base!,
          changes: this.changes,
          fieldWeights: this.fieldWeights,
          k1: this.k1,
          b: this.b,
          bm25f: this.scoring === "bm25f",
        },
        termIds,
        topK,
        mask,
        (doc: number) => this.idAt(doc),
      );
    }
    this.upperBounds ??= this.postings.map(() => new Map<number, number>());
    return scoreQuery(
      {
        ids: this.ids,
        ranks: this.ranks,
        postings: this.postings,
        bm25f: this.scoring === "bm25f",
        bm25fShares: this.bm25fShares,
        upperBounds: this.upperBounds,
      },
      termIds,
      topK,
      mask,
    );
  }

  /** Distinct known term ids of the query, in first-occurrence order, at most {@link MAX_QUERY_TOKENS}. */
  private queryTermIds(queryTokens: readonly string[]): number[] {
    const analyzed = this.analyzer ? this.analyzer(queryTokens) : queryTokens;
    const seen = new Set<string>();
    const termIds: number[] = [];
    for (const token of analyzed) {
      if (seen.has(token)) continue;
      if (seen.size >= MAX_QUERY_TOKENS) break;
      seen.add(token);
      const termId = this.dictionary.get(token);
      // A term added by a later change (the dictionary is shared) has no postings here unless this index has changes.
      if (termId >= 0 && (termId < this.termLimit || this.changes)) termIds.push(termId);
    }
    return termIds;
  }

  /**
   * A new index with the documents of `removedIds` removed (ids not indexed are ignored) and `added` entries
   * indexed (replace an entry by removing its id and adding it). This index is unchanged and keeps serving. The
   * result scores every query exactly as a full build of its entries would: it shares this index's postings and
   * computes contributions at query time with the changed statistics. Cost: tokenizing the added entries, plus
   * one byte per document (see `lexicalIndexChanges.ts`); a {@link compactSteps} compaction folds the changes
   * into a fresh index.
   */
  withChanges(
    removedIds: Iterable<string>,
    added: readonly NormalizedKnowledgeEntry[],
  ): KnowledgeLexicalIndex {
    if (!this.finalized || !this.base)
      throw new Error(
        "KnowledgeLexicalIndex.withChanges: this index cannot be changed (not finalized, or loaded without term frequencies)",
      );
    return this.withState(changedState(this.finishedState(), this.analyzer, removedIds, added));
  }

  /**
   * Compaction: a generator whose result is a fresh index (precomputed contributions, no changes) equal to this
   * one, built from the stored postings without tokenizing; it yields between slices of work so a caller can give
   * the event loop a turn. An index without changes returns itself.
   * @internal
   */
  *compactSteps(): Generator<void, KnowledgeLexicalIndex, void> {
    return (yield* this.compactStepsRenumbered()).index;
  }

  /**
   * {@link compactSteps}, with where each dense id of this index went in the fresh one (-1: not live; null when
   * this index has no changes and is its own result).
   * @internal
   */
  *compactStepsRenumbered(): Generator<
    void,
    { index: KnowledgeLexicalIndex; newDenseIds: Int32Array | null },
    void
  > {
    if (!this.changes) return { index: this, newDenseIds: null };
    const state = this.finishedState();
    const compacted = yield* compactedState(state, this);
    if (compacted) return { index: this.withState(compacted.state), newDenseIds: compacted.newDenseIds };
    const { ids, newDenseIds, builders } = yield* compactedBuilders(
      state.base!,
      this.changes,
      this.fieldWeights,
    );
    const index = this.sibling();
    index.builders = builders;
    for (const id of ids) {
      index.denseIds.set(id, index.ids.length);
      index.ids.push(id);
      if ((index.ids.length & 0x3fff) === 0) yield;
    }
    while (!index.finalizeStep()) yield;
    return { index, newDenseIds };
  }

  /** An empty index with the same parameters that shares this one's term dictionary. */
  private sibling(): KnowledgeLexicalIndex {
    const index = new KnowledgeLexicalIndex(this.fieldWeights, {
      k1: this.k1,
      b: this.b,
      analyzer: this.analyzerName,
      scoring: this.scoring,
    });
    index.dictionary = this.dictionary;
    index.builders = null;
    index.counter = null;
    return index;
  }

  /**
   * The finished state, for an index artifact (a changed index is compacted first). The arrays are the index's
   * own: do not modify them.
   * @internal
   */
  exportParts(): KnowledgeLexicalIndexParts {
    if (!this.finalized) throw new Error("KnowledgeLexicalIndex.exportParts: call finalize() first");
    if (this.changes) {
      const steps = this.compactSteps();
      let step = steps.next();
      while (!step.done) step = steps.next();
      return step.value.exportParts();
    }
    this.postingLoader?.ensureAll();
    return partsOfState(this, this.finishedState());
  }

  /** Recreates a finished index from {@link exportParts} output (checked for consistency). */
  static fromParts(parts: KnowledgeLexicalIndexParts): KnowledgeLexicalIndex {
    const index = new KnowledgeLexicalIndex(parts.fieldWeights, {
      k1: parts.k1,
      b: parts.b,
      analyzer: parts.analyzer,
      scoring: parts.scoring,
    });
    return index.withState(stateFromParts(parts));
  }

  /**
   * What a finished index holds (searching it reads this); shared with the indexes derived from it.
   * @internal
   */
  finishedState(): FinishedLexicalState {
    if (!this.finalized) throw new Error("KnowledgeLexicalIndex: call finalize() first");
    return {
      dictionary: this.dictionary,
      ids: this.ids,
      denseIds: this.denseIds,
      ranks: this.ranks,
      postings: this.postings,
      termPostings: this.termPostings,
      averageLengths: this.averageLengths,
      bm25fShares: this.bm25fShares,
      termLimit: this.termLimit,
      base: this.base,
      changes: this.changes,
      postingLoader: this.postingLoader,
    };
  }

  /** A finished index with this one's parameters and the given state. */
  private withState(state: FinishedLexicalState): KnowledgeLexicalIndex {
    const index = this.sibling();
    index.dictionary = state.dictionary;
    index.ids = state.ids;
    index.denseIds = state.denseIds;
    index.ranks = state.ranks;
    index.postings = state.postings;
    index.termPostings = state.termPostings;
    index.averageLengths = state.averageLengths;
    index.bm25fShares = state.bm25fShares;
    index.termLimit = state.termLimit;
    index.base = state.base;
    index.changes = state.changes;
    index.postingLoader = state.postingLoader;
    index.finalized = true;
    return index;
  }

  /** Approximate bytes held by the finished index (typed arrays plus an estimate for maps and strings). */
  estimateBytes(): number {
    let bytes = 0;
    for (const postings of this.postings) {
      bytes += postings.offsets.byteLength + postings.docs.byteLength + postings.contributions.byteLength;
    }
    if (this.bm25fShares) bytes += this.bm25fShares.byteLength;
    for (const postings of this.termPostings) {
      // Shared with the precomputed postings in sum mode (offsets and docs counted once).
      if (this.scoring === "bm25f") bytes += postings.offsets.byteLength + postings.docs.byteLength;
      bytes += postings.frequencies?.byteLength ?? 0;
    }
    return bytes;
  }
}
