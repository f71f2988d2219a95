/**
 * The reference scorer ({@link scoreQueryExhaustive}: every posting of the query's terms into entry-sized
 * accumulators, then the top K), the oracle of the pruning tests, and the end of an exhaustive pass
 * ({@link matchesFromAccumulators}) that query-time scoring (`liveScoring.ts`) shares.
 */
import type { KnowledgeFieldName, KnowledgeLexicalMatch } from "../types/knowledge.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { bm25fFieldScores } from "./fieldScores.js";
import { FIELD_COUNT } from "./postings.js";
import { selectTop } from "./ranking.js";
import type { ScoredIndex } from "./scoring.js";

/** Bit of a document's mark that says it was touched by a BM25F posting (the field bits are 0 to 4). */
const TOUCHED_BIT = 1 << FIELD_COUNT;

/**
 * Accumulators reused by every search of one index; searches are synchronous, so they never interleave. Every
 * search leaves them zeroed for the documents it touched.
 */
export type ScoringScratch = {
  /** Per document: the summed score. */
  totals: Float64Array;
  /** Per field, per document: the field's part of the score. */
  fieldTotals: Float64Array[];
  /** Per document: bit `field` set when that field contributed; any bit set when touched. */
  marks: Uint8Array;
  /** The touched documents, in first-touch order. */
  touched: Int32Array;
};

/**
 * The reference scorer: accumulates every posting of the query's terms into entry-sized accumulators, then
 * selects. Same result as `scoreQuery` (`scoring.ts`) (which reads far fewer postings); kept as the oracle of the pruning
 * tests and for the accumulators' layout that query-time scoring shares (`liveScoring.ts`).
 */
export function scoreQueryExhaustive(
  index: ScoredIndex,
  termIds: readonly number[],
  topK: number,
  mask: Uint8Array | null,
  scratch: ScoringScratch,
): KnowledgeLexicalMatch[] {
  const { totals, fieldTotals, marks, touched } = scratch;
  let touchedCount = 0;

  // The BM25F and per-field passes repeat the same posting walk on purpose: each is specialised for its mode
  // (one posting list and no field bits, or five and their bits), with no per-posting branch on the mode.
  if (index.bm25f) {
    // Only the totals decide the ranking: the per-field breakdown is computed afterwards for the selected
    // documents alone (see below), instead of five share reads and writes for every posting.
    const postings = index.postings[0]!;
    const { offsets, docs, contributions } = postings;
    for (const term of termIds) {
      const end = offsets[term + 1]!;
      for (let position = offsets[term]!; position < end; position++) {
        const doc = docs[position]!;
        if (mask !== null && mask[doc] === 0) continue;
        if (marks[doc] === 0) {
          touched[touchedCount++] = doc;
          marks[doc] = TOUCHED_BIT;
        }
        totals[doc]! += contributions[position]!;
      }
    }
    const selected = selectTop(touched, touchedCount, topK, totals, index.ranks);
    const matches: KnowledgeLexicalMatch[] = new Array(selected.length);
    for (let rank = 0; rank < selected.length; rank++) {
      const doc = selected[rank]!;
      matches[rank] = {
        id: index.ids.at(doc)!,
        score: totals[doc]!,
        fieldScores: bm25fFieldScores(index, termIds, doc),
      };
    }
    for (let position = 0; position < touchedCount; position++) {
      const doc = touched[position]!;
      totals[doc] = 0;
      marks[doc] = 0;
    }
    return matches;
  } else {
    for (let field = 0; field < FIELD_COUNT; field++) {
      const postings = index.postings[field]!;
      if (!postings.active) continue;
      const fieldTotal = fieldTotals[field]!;
      const bit = 1 << field;
      const { offsets, docs, contributions } = postings;
      for (const term of termIds) {
        const end = offsets[term + 1]!;
        for (let position = offsets[term]!; position < end; position++) {
          const doc = docs[position]!;
          if (mask !== null && mask[doc] === 0) continue;
          if (marks[doc] === 0) touched[touchedCount++] = doc;
          const contribution = contributions[position]!;
          totals[doc]! += contribution;
          fieldTotal[doc]! += contribution;
          marks[doc]! |= bit;
        }
      }
    }
  }

  const selected = selectTop(touched, touchedCount, topK, totals, index.ranks);
  return matchesFromAccumulators(
    selected,
    (doc) => index.ids.at(doc)!,
    { totals, fieldTotals, marks, touched },
    touchedCount,
  );
}

/**
 * Per-document accumulators of an exhaustive scoring pass (entry-sized): the total, the per-field totals, which
 * fields matched (bit `1 << field`; other bits are the caller's), and the documents touched, in first-touch order.
 */
export type ScoreAccumulators = {
  totals: Float64Array;
  fieldTotals: Float64Array[];
  marks: Uint8Array;
  touched: Int32Array;
};

/**
 * The matches of the `selected` documents (in rank order) read from the accumulators, each with the field scores
 * of the fields it matched; then the accumulators of the first `touchedCount` touched documents are reset to
 * zero for the next query.
 */
export function matchesFromAccumulators(
  selected: readonly number[] | Int32Array,
  idOf: (doc: number) => string,
  accumulators: ScoreAccumulators,
  touchedCount: number,
): KnowledgeLexicalMatch[] {
  const { totals, fieldTotals, marks, touched } = accumulators;
  const matches: KnowledgeLexicalMatch[] = new Array(selected.length);
  for (let rank = 0; rank < selected.length; rank++) {
    const doc = selected[rank]!;
    const fieldScores: Partial<Record<KnowledgeFieldName, number>> = {};
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (marks[doc]! & (1 << field)) fieldScores[KNOWLEDGE_FIELD_NAMES[field]!] = fieldTotals[field]![doc]!;
    }
    matches[rank] = { id: idOf(doc), score: totals[doc]!, fieldScores };
  }
  for (let position = 0; position < touchedCount; position++) {
    const doc = touched[position]!;
    totals[doc] = 0;
    marks[doc] = 0;
    for (let field = 0; field < FIELD_COUNT; field++) fieldTotals[field]![doc] = 0;
  }
  return matches;
}
