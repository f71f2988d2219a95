/**
 * The per-query scoring of the in-memory index. {@link scoreQuery} (the turn's path) gathers the query's posting
 * lists and their upper bounds, ranks them with the pruned window loop (`scoreLists.ts`: MaxScore, see below) and
 * reads the ranked documents' per-field breakdowns; `scoreQueryExhaustive` (`exhaustiveScoring.ts`)
 * accumulates every posting into entry-sized accumulators and is the reference the pruning is tested against.
 * Both return the same matches: same documents, bit-identical scores and per-field breakdowns, same order.
 */
import type { KnowledgeFieldName, KnowledgeLexicalMatch } from "../types/knowledge.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import type { EntryIds } from "./denseIds.js";
import { bm25fBreakdownAt } from "./fieldScores.js";
import { listUpperBound } from "./listBounds.js";
import { FIELD_COUNT, type FieldPostings } from "./postings.js";
import {
  contributionAt,
  DEFAULT_WINDOWS,
  type QueryLists,
  type ScoringList,
  type ScoringWindows,
  scoreLists,
} from "./scoreLists.js";
import { scoreListsSplit } from "./splitScoring.js";

export {
  matchesFromAccumulators,
  type ScoreAccumulators,
  type ScoringScratch,
  scoreQueryExhaustive,
} from "./exhaustiveScoring.js";
export {
  contributionAt,
  type QueryLists,
  type ScoringList,
  type ScoringWindows,
  scoreLists,
} from "./scoreLists.js";

/** What the scoring loop reads from a finished index. */
export type ScoredIndex = {
  ids: EntryIds;
  ranks: Int32Array;
  /** One per field (sum mode), or one over all fields (BM25F). */
  postings: readonly FieldPostings[];
  /** True BM25F (one posting list over all fields) instead of the per-field sum. */
  bm25f: boolean;
  /** BM25F only: per posting, each field's share of its score. */
  bm25fShares: Float64Array | null;
  /**
   * Per entry of `postings`: term id → the largest contribution of the term's postings (computed when a query
   * first needs it, kept for the index's life; `Infinity` when a contribution is negative or not a number, which
   * turns pruning off for queries with that term). Omitted: computed per query.
   */
  upperBounds?: Map<number, number>[];
};

/**
 * Scores the documents matching `termIds` (distinct, known) and returns the best `topK` by score descending, ties
 * by rank, each with its per-field breakdown. `mask` (by dense id, 1 = eligible) filters before ranking.
 *
 * The query's posting lists (one per field and term, or one per term in BM25F) are read window by window of
 * document ids; within a window each document's score is summed list by list in the exhaustive scorer's order
 * (field, then query term), so scores are bit-identical to it. Pruning (MaxScore): each list's upper bound is its
 * largest contribution; once K documents are held, the lists with the smallest bounds whose bounds sum below the
 * K-th score (the threshold) are "non-essential": a document in those lists alone cannot reach the threshold, so
 * they are not read, only probed (binary search) for documents found in the other lists whose partial score plus
 * the bounds still left could reach it. A document that does reach it enters the top K with that sum, which adds
 * the same contributions in another order (approximate in its last bits; see `topDocuments.ts`); once every
 * window is read, the documents ranked are summed exactly, each list searched once in the exhaustive order, and
 * the positions found give their per-field breakdowns (most documents that enter the top K are pushed out later,
 * so this sums far fewer documents than summing each on entry). Ties at the K-th place are kept exactly: only
 * documents certainly below the threshold are skipped. Everything the result carries (ids, scores, field
 * breakdowns) comes from the selected documents alone.
 */
export function scoreQuery(
  index: ScoredIndex,
  termIds: readonly number[],
  topK: number,
  mask: Uint8Array | null,
  windows: ScoringWindows = DEFAULT_WINDOWS,
): KnowledgeLexicalMatch[] {
  const lists = queryLists(index, termIds);
  // Each selected document's posting position in every list, found while its exact score is summed: its
  // per-field breakdown reads them instead of searching every list again.
  const positions = new Map<number, Int32Array>();
  // A long search may be split with the scoring worker (`splitScoring.ts`): the same documents, scores and
  // positions.
  const ranked =
    scoreListsSplit(
      { postings: index.postings, ranks: index.ranks, documentCount: index.ids.length },
      lists,
      topK,
      mask,
      positions,
      windows,
    ) ?? scoreLists(lists, index.ids.length, index.ranks, topK, mask, windows, positions);
  return ranked.map(({ doc, score }) => ({
    id: index.ids.at(doc)!,
    score,
    fieldScores: index.bm25f
      ? bm25fBreakdownAt(index.bm25fShares!, positions.get(doc)!)
      : sumBreakdown(lists.postings, lists.fields, positions.get(doc)!),
  }));
}

/** A query's lists over an in-memory index, each with its field (0 for BM25F's one list per term). */
type IndexQueryLists = QueryLists & { fields: Int32Array };

/**
 * The non-empty posting lists of a query in the exhaustive order (field, then term), with their upper bounds. The
 * lists are counted first so that each array is made once at its size (growing five arrays list by list was a
 * long query's largest allocation after the scoring loop's).
 */
function queryLists(index: ScoredIndex, termIds: readonly number[]): IndexQueryLists {
  const fields = index.bm25f ? 1 : FIELD_COUNT;
  let listCount = 0;
  for (let field = 0; field < fields; field++) {
    const fieldPostings = index.postings[field]!;
    if (!fieldPostings.active) continue;
    const offsets = fieldPostings.offsets;
    for (let term = 0; term < termIds.length; term++) {
      const id = termIds[term]!;
      if (offsets[id] !== offsets[id + 1]) listCount++;
    }
  }
  const postings = new Array<FieldPostings>(listCount);
  const listFields = new Int32Array(listCount);
  const starts = new Int32Array(listCount);
  const ends = new Int32Array(listCount);
  const upper = new Float64Array(listCount);
  let list = 0;
  for (let field = 0; field < fields; field++) {
    const fieldPostings = index.postings[field]!;
    if (!fieldPostings.active) continue;
    const { offsets, contributions } = fieldPostings;
    const cache = index.upperBounds?.[field];
    for (let term = 0; term < termIds.length; term++) {
      const id = termIds[term]!;
      const start = offsets[id]!;
      const end = offsets[id + 1]!;
      if (start === end) continue;
      let bound = cache?.get(id);
      if (bound === undefined) {
        bound = listUpperBound(contributions, start, end);
        cache?.set(id, bound);
      }
      postings[list] = fieldPostings;
      listFields[list] = field;
      starts[list] = start;
      ends[list] = end;
      upper[list] = bound;
      list++;
    }
  }
  return { postings, starts, ends, upper, fields: listFields };
}

/**
 * One document's per-field breakdown in sum mode from its position in each list (`found`, -1 where absent; the
 * lists grouped by field, `fields[list]` naming each one's field): per field, its contributions in query-term order
 * (the lists' order), as the exhaustive scorer accumulates them, so every part is bit-identical. The in-memory
 * scorer and the PostgreSQL reader both read their breakdowns here.
 */
export function sumBreakdown(
  postings: readonly ScoringList[],
  fields: Int32Array,
  found: Int32Array,
): Partial<Record<KnowledgeFieldName, number>> {
  const fieldScores: Partial<Record<KnowledgeFieldName, number>> = {};
  const listCount = found.length;
  let list = 0;
  while (list < listCount) {
    const field = fields[list]!;
    let part = 0;
    let matched = false;
    for (; list < listCount && fields[list] === field; list++) {
      const position = found[list]!;
      if (position < 0) continue;
      part += contributionAt(postings[list]!, position);
      matched = true;
    }
    if (matched) fieldScores[KNOWLEDGE_FIELD_NAMES[field]!] = part;
  }
  return fieldScores;
}
