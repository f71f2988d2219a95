/**
 * The field-aware BM25 index: documents are added (tokenized straight into term ids), finalized once into
 * per-field postings, then searched. Entries get dense integer ids; postings of each field are
 * compressed-sparse-row typed arrays per term whose postings carry their finished BM25 contribution, so a query
 * only adds precomputed numbers for the postings of its own terms. Eligibility is a byte mask applied while
 * scoring, before top-K. The build phase (adding and finalizing) is `lexicalIndexBuilder.ts`.
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
import { compactedBuilders } from "./compactionBuilders.js";
import type { CompactionThread } from "./compactionThread.js";
import { DEFAULT_BM25_B, DEFAULT_BM25_K1, MAX_QUERY_TOKENS } from "./defaults.js";
import { resolveFieldWeights } from "./document.js";
import type { ScatterHelper } from "./fieldPostings.js";
import { addedDenseIdOf, type IndexBase, type IndexChanges } from "./indexChanges.js";
import {
  type FinishedLexicalState,
  type KnowledgeLexicalIndexParts,
  type PostingLoader,
  partsOfState,
  stateFromParts,
} from "./indexParts.js";
import { LexicalIndexBuilder } from "./lexicalIndexBuilder.js";
import { changedState, compactedState } from "./lexicalIndexChanges.js";
import { scoreQueryLive } from "./liveScoring.js";
import {
  createFieldBuilder,
  FIELD_COUNT,
  type FieldBuilder,
  type FieldPostings,
  type FrequencyPostings,
} from "./postings.js";
import { scoreQuery } from "./scoring.js";
import { TermCounter } from "./termCounter.js";
import { TermDictionary } from "./termDictionary.js";

export { MAX_RESERVED_POSTINGS } from "./lexicalIndexBuilder.js";

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
  private dictionary: TermDictionary;
  private ids: string[] = [];
  private denseIds = new Map<string, number>();
  /** The build in progress (documents added, finalize steps taken); null once finalized or when derived. */
  private builder: LexicalIndexBuilder | null;
  /** Per field (sum) or one over all fields (BM25F): postings with precomputed contributions. */
  private postings: FieldPostings[] = [];
  /** Per field: term-frequency postings, what query-time scoring and compaction read. */
  private termPostings: FrequencyPostings[] = [];
  private averageLengths: Float64Array = new Float64Array(FIELD_COUNT);
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
  /** Loaded from an artifact: fills the postings of a term when a search first reads it (null: all present). */
  private postingLoader: PostingLoader | null = null;
  /** Per entry of {@link postings}: each queried term's largest contribution (the pruning's upper bounds). */
  private upperBounds: Map<number, number>[] | null = null;

  /**
   * @param sibling (internal) an index whose parameters this one takes, to adopt a finished state: no build
   *   buffers are allocated (every update and compaction derives an index this way).
   */
  constructor(
    fieldWeights?: Partial<KnowledgeFieldWeights>,
    options: KnowledgeLexicalIndexOptions = {},
    sibling?: KnowledgeLexicalIndex,
  ) {
    this.fieldWeights = sibling ? sibling.fieldWeights : Object.freeze(resolveFieldWeights(fieldWeights));
    this.k1 = sibling ? sibling.k1 : (options.k1 ?? DEFAULT_BM25_K1);
    this.b = sibling ? sibling.b : (options.b ?? DEFAULT_BM25_B);
    this.analyzerName = sibling ? sibling.analyzerName : (options.analyzer ?? "none");
    this.scoring = sibling ? sibling.scoring : (options.scoring ?? "sum");
    this.analyzer = sibling ? sibling.analyzer : getAnalyzer(this.analyzerName);
    if (sibling) {
      this.dictionary = sibling.dictionary;
      this.builder = null;
      return;
    }
    assertIndexParameters(this.fieldWeights, this.k1, this.b);
    this.dictionary = new TermDictionary();
    this.builder = this.startBuild(
      Array.from({ length: FIELD_COUNT }, createFieldBuilder),
      new TermCounter(this.dictionary),
    );
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
    if (this.builder) return this.builder.denseIdOf(id);
    const changes = this.changes;
    if (!changes) return this.denseIds.get(id) ?? -1;
    const doc = this.denseIds.get(id);
    if (doc !== undefined && changes.live[doc] === 1) return doc;
    return addedDenseIdOf(changes, id);
  }

  /** Adds one document. Ids must be unique; documents cannot be added after {@link finalize}. */
  add(document: IndexedKnowledgeDocument): void {
    this.building().add(document);
  }

  /** Sizes the build buffers ahead of a large build (see {@link LexicalIndexBuilder.reserveFor}). @internal */
  reserveFor(documentCount: number, maxReservedPostings?: number): void {
    this.builder?.reserveFor(documentCount, maxReservedPostings);
  }

  /** Lets a parallel build's worker help finalize (see {@link LexicalIndexBuilder.useScatterHelper}). @internal */
  useScatterHelper(helper: ScatterHelper): void {
    if (!this.builder || this.ids.length > 0)
      throw new Error("KnowledgeLexicalIndex.useScatterHelper: call before adding documents");
    this.builder.useScatterHelper(helper);
  }

  /** Adds an entry without the intermediate document (see {@link LexicalIndexBuilder.addEntry}). @internal */
  addEntry(entry: NormalizedKnowledgeEntry): void {
    this.building().addEntry(entry);
  }

  /** Adds a document counted by a build worker (see {@link LexicalIndexBuilder.addCountedDocument}). @internal */
  addCountedDocument(id: string, counts: Int32Array, offset: number, termIds: Int32Array): number {
    return this.building().addCountedDocument(id, counts, offset, termIds);
  }

  /**
   * The ids of `terms` in this index's dictionary, in order, each added when new: where a build worker's new terms
   * get their ids, in the order a single-threaded build would have met them.
   * @internal
   */
  internTerms(terms: readonly string[]): number[] {
    return terms.map((term) => this.dictionary.intern(term));
  }

  /** The build in progress; adding to a finalized index is an error. */
  private building(): LexicalIndexBuilder {
    if (!this.builder) throw new Error("KnowledgeLexicalIndex.add: the index is finalized");
    return this.builder;
  }

  /** A build of this index over the given buffers (a compaction's come filled, and it adds no document). */
  private startBuild(builders: FieldBuilder[], counter: TermCounter | null): LexicalIndexBuilder {
    return new LexicalIndexBuilder(
      {
        fieldWeights: this.fieldWeights,
        k1: this.k1,
        b: this.b,
        scoring: this.scoring,
        analyzer: this.analyzer,
        dictionary: this.dictionary,
        ids: this.ids,
        denseIds: this.denseIds,
      },
      builders,
      counter,
    );
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
    const state = this.builder!.finalizeStep();
    if (!state) return false;
    this.builder = null;
    this.adopt(state);
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
   * this index has no changes and is its own result). `thread`: a worker that writes the fresh postings.
   * @internal
   */
  *compactStepsRenumbered(
    thread: CompactionThread | null = null,
  ): Generator<void, { index: KnowledgeLexicalIndex; newDenseIds: Int32Array | null }, void> {
    if (!this.changes) return { index: this, newDenseIds: null };
    const state = this.finishedState();
    const compacted = yield* compactedState(state, this, thread);
    if (compacted) return { index: this.withState(compacted.state), newDenseIds: compacted.newDenseIds };
    const { ids, newDenseIds, builders } = yield* compactedBuilders(
      state.base!,
      this.changes,
      this.fieldWeights,
    );
    const index = this.sibling();
    index.builder = index.startBuild(builders, null);
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
    return new KnowledgeLexicalIndex(undefined, undefined, this);
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
    index.adopt(state);
    return index;
  }

  /** Makes this index the finished index of `state`. */
  private adopt(state: FinishedLexicalState): void {
    this.dictionary = state.dictionary;
    this.ids = state.ids;
    this.denseIds = state.denseIds;
    this.ranks = state.ranks;
    this.postings = state.postings;
    this.termPostings = state.termPostings;
    this.averageLengths = state.averageLengths;
    this.bm25fShares = state.bm25fShares;
    this.termLimit = state.termLimit;
    this.base = state.base;
    this.changes = state.changes;
    this.postingLoader = state.postingLoader;
    // Bounds computed while finalizing belong to these postings; a changed index scores without them.
    this.upperBounds = state.upperBounds && state.changes === null ? state.upperBounds : null;
    this.finalized = true;
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
