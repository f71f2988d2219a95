/**
 * The lexical index's state (see `lexicalIndex.ts`): every field, the constructor, the id lookups, the build's
 * entry points (adding, reserving, finalizing, delegated to `lexicalIndexBuilder.ts`) and the finished state that
 * an index adopts and shares with the indexes derived from it. `KnowledgeLexicalIndex` adds searching, changes,
 * compaction and export on top.
 */
import type {
  IndexedKnowledgeDocument,
  KnowledgeAnalyzerName,
  KnowledgeFieldWeights,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { getAnalyzer, type TokenAnalyzer } from "./analyzer.js";
import { assertIndexParameters } from "./bm25.js";
import { DEFAULT_ANALYZER, DEFAULT_BM25_B, DEFAULT_BM25_K1, DEFAULT_SCORING_MODE } from "./defaults.js";
import type { EntryIds } from "./denseIds.js";
import { resolveFieldWeights } from "./document.js";
import type { ScatterHelper } from "./fieldPostings.js";
import { addedDenseIdOf, type IndexBase, type IndexChanges } from "./indexChanges.js";
import type { FinishedLexicalState, PostingLoader } from "./indexParts.js";
import type { KnowledgeLexicalIndexOptions } from "./lexicalIndex.js";
import { LexicalIndexBuilder } from "./lexicalIndexBuilder.js";
import {
  createFieldBuilder,
  FIELD_COUNT,
  type FieldBuilder,
  type FieldPostings,
  type FrequencyPostings,
} from "./postings.js";
import { TermCounter } from "./termCounter.js";
import { TermDictionary } from "./termDictionary.js";

/**
 * The fields, build and finished state of a {@link KnowledgeLexicalIndex} (not exported from the package: that
 * class is the public name).
 */
export abstract class KnowledgeLexicalIndexState {
  /** Resolved field weights. */
  readonly fieldWeights: Readonly<KnowledgeFieldWeights>;
  readonly k1: number;
  readonly b: number;
  readonly analyzerName: KnowledgeAnalyzerName;
  readonly scoring: KnowledgeScoringMode;
  protected readonly analyzer: TokenAnalyzer | null;
  /** Term ↔ id; shared (append-only) with the indexes derived from this one. */
  protected dictionary: TermDictionary;
  protected ids: EntryIds = [];
  protected denseIds = new Map<string, number>();
  /** The build in progress (documents added, finalize steps taken); null once finalized or when derived. */
  protected builder: LexicalIndexBuilder | null;
  /** Per field (sum) or one over all fields (BM25F): postings with precomputed contributions. */
  protected postings: FieldPostings[] = [];
  /** Per field: term-frequency postings, what query-time scoring and compaction read. */
  private termPostings: FrequencyPostings[] = [];
  private averageLengths: Float64Array = new Float64Array(FIELD_COUNT);
  /** The finished arrays shared with derived indexes; null before finalize, or when loaded without frequencies. */
  protected base: IndexBase | null = null;
  /** What this index changes relative to {@link base}; null for a full build (precomputed contributions apply). */
  protected changes: IndexChanges | null = null;
  /** Rank of each dense id in code-unit order of entry ids: the deterministic tie-break. */
  protected ranks: Int32Array = new Int32Array(0);
  /** BM25F only: per posting, each field's share of its score (for the breakdown). */
  protected bm25fShares: Float64Array | null = null;
  /** Terms the postings cover: the dictionary's size when finalizing started (it may grow afterwards). */
  protected termLimit = 0;
  protected finalized = false;
  /** Loaded from an artifact: fills the postings of a term when a search first reads it (null: all present). */
  protected postingLoader: PostingLoader | null = null;
  /** Per entry of {@link postings}: each queried term's largest contribution (the pruning's upper bounds). */
  protected upperBounds: Map<number, number>[] | null = null;

  /**
   * @param sibling (internal) an index whose parameters this one takes, to adopt a finished state: no build
   *   buffers are allocated (every update and compaction derives an index this way).
   */
  constructor(
    fieldWeights?: Partial<KnowledgeFieldWeights>,
    options: KnowledgeLexicalIndexOptions = {},
    sibling?: KnowledgeLexicalIndexState,
  ) {
    this.fieldWeights = sibling ? sibling.fieldWeights : Object.freeze(resolveFieldWeights(fieldWeights));
    this.k1 = sibling ? sibling.k1 : (options.k1 ?? DEFAULT_BM25_K1);
    this.b = sibling ? sibling.b : (options.b ?? DEFAULT_BM25_B);
    this.analyzerName = sibling ? sibling.analyzerName : (options.analyzer ?? DEFAULT_ANALYZER);
    this.scoring = sibling ? sibling.scoring : (options.scoring ?? DEFAULT_SCORING_MODE);
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
    return denseId < baseCount ? this.ids.at(denseId)! : this.changes!.added.ids[denseId - baseCount]!;
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
  protected startBuild(builders: FieldBuilder[], counter: TermCounter | null): LexicalIndexBuilder {
    // A build starts empty and appends its ids to this array.
    const ids: string[] = [];
    this.ids = ids;
    return new LexicalIndexBuilder(
      {
        fieldWeights: this.fieldWeights,
        k1: this.k1,
        b: this.b,
        scoring: this.scoring,
        analyzer: this.analyzer,
        dictionary: this.dictionary,
        ids,
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

  /** Makes this index the finished index of `state`. */
  protected adopt(state: FinishedLexicalState): void {
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
