/**
 * The field-aware BM25 index: documents are added (tokenized straight into term ids), finalized once into
 * per-field postings, then searched. Entries get dense integer ids; postings of each field are
 * compressed-sparse-row typed arrays per term whose postings carry their finished BM25 contribution, so a query
 * only adds precomputed numbers for the postings of its own terms. Eligibility is a byte mask applied while
 * scoring, before top-K. The build phase (adding and finalizing) is `lexicalIndexBuilder.ts`; the index's fields,
 * constructor, id lookups and build entry points are `lexicalIndexState.ts`.
 */
import type {
  KnowledgeAnalyzerName,
  KnowledgeLexicalMatch,
  KnowledgeLexicalSearcher,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { compactedBuilders } from "./compactionBuilders.js";
import type { CompactionThread } from "./compactionThread.js";
import { MAX_QUERY_TOKENS } from "./defaults.js";
import {
  type FinishedLexicalState,
  type KnowledgeLexicalIndexParts,
  type LexicalIndexPartsInput,
  partsOfState,
  stateFromParts,
} from "./indexParts.js";
import { changedState, compactedState } from "./lexicalIndexChanges.js";
import { KnowledgeLexicalIndexState } from "./lexicalIndexState.js";
import { scoreQueryLive } from "./liveScoring.js";
import { scoreQuery } from "./scoring.js";

export { MAX_RESERVED_POSTINGS } from "./lexicalIndexBuilder.js";

/** Entry ids a compaction files between two yields (a power of two). */
const IDS_PER_STEP = 1 << 14;

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
export class KnowledgeLexicalIndex extends KnowledgeLexicalIndexState implements KnowledgeLexicalSearcher {
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
    const indexIds = index.ids as string[];
    for (const id of ids) {
      index.denseIds.set(id, indexIds.length);
      indexIds.push(id);
      if ((indexIds.length & (IDS_PER_STEP - 1)) === 0) yield;
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
  static fromParts(parts: LexicalIndexPartsInput): KnowledgeLexicalIndex {
    const index = new KnowledgeLexicalIndex(parts.fieldWeights, {
      k1: parts.k1,
      b: parts.b,
      analyzer: parts.analyzer,
      scoring: parts.scoring,
    });
    return index.withState(stateFromParts(parts));
  }

  /** A finished index with this one's parameters and the given state. */
  private withState(state: FinishedLexicalState): KnowledgeLexicalIndex {
    const index = this.sibling();
    index.adopt(state);
    return index;
  }
}
