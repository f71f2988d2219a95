/**
 * The per-query scoring loop: accumulates the postings of the query's terms into reusable per-document
 * accumulators (skipping ineligible documents), selects the top K and builds their per-field breakdown.
 */
import type { KnowledgeFieldName, KnowledgeLexicalMatch } from "../types/knowledge.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { FIELD_COUNT, type FieldPostings } from "./postings.js";
import { selectTop } from "./ranking.js";

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

/** What the scoring loop reads from a finished index. */
export type ScoredIndex = {
  ids: readonly string[];
  ranks: Int32Array;
  /** One per field (sum mode), or one over all fields (BM25F). */
  postings: readonly FieldPostings[];
  /** True BM25F (one posting list over all fields) instead of the per-field sum. */
  bm25f: boolean;
  /** BM25F only: per posting, each field's share of its score. */
  bm25fShares: Float64Array | null;
};

/**
 * Scores the documents matching `termIds` (distinct, known) and returns the best `topK` by score descending,
 * ties by rank, each with its per-field breakdown. `mask` (by dense id, 1 = eligible) filters before ranking.
 */
export function scoreQuery(
  index: ScoredIndex,
  termIds: readonly number[],
  topK: number,
  mask: Uint8Array | null,
  scratch: ScoringScratch,
): KnowledgeLexicalMatch[] {
  const { totals, fieldTotals, marks, touched } = scratch;
  let touchedCount = 0;

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
        id: index.ids[doc]!,
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
  const matches: KnowledgeLexicalMatch[] = new Array(selected.length);
  for (let rank = 0; rank < selected.length; rank++) {
    const doc = selected[rank]!;
    const fieldScores: Partial<Record<KnowledgeFieldName, number>> = {};
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (marks[doc]! & (1 << field)) fieldScores[KNOWLEDGE_FIELD_NAMES[field]!] = fieldTotals[field]![doc]!;
    }
    matches[rank] = { id: index.ids[doc]!, score: totals[doc]!, fieldScores };
  }
  for (let position = 0; position < touchedCount; position++) {
    const doc = touched[position]!;
    totals[doc] = 0;
    marks[doc] = 0;
    for (let field = 0; field < FIELD_COUNT; field++) fieldTotals[field]![doc] = 0;
  }
  return matches;
}

/**
 * One document's BM25F score split by field: each matched term's posting shares, added in query-term order (the
 * order the totals were summed in), so every part is bit-identical to accumulating them in the scoring loop.
 */
function bm25fFieldScores(
  index: ScoredIndex,
  termIds: readonly number[],
  doc: number,
): Partial<Record<KnowledgeFieldName, number>> {
  const postings = index.postings[0]!;
  const shares = index.bm25fShares!;
  const parts = new Float64Array(FIELD_COUNT);
  let fieldBits = 0;
  for (const term of termIds) {
    const position = findPosting(postings.docs, postings.offsets[term]!, postings.offsets[term + 1]!, doc);
    if (position < 0) continue;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const share = shares[position * FIELD_COUNT + field]!;
      if (share > 0) {
        parts[field]! += share;
        fieldBits |= 1 << field;
      }
    }
  }
  const fieldScores: Partial<Record<KnowledgeFieldName, number>> = {};
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (fieldBits & (1 << field)) fieldScores[KNOWLEDGE_FIELD_NAMES[field]!] = parts[field]!;
  }
  return fieldScores;
}

/** Position of `doc` in the ascending `docs[start, end)`, or -1. */
function findPosting(docs: Int32Array, start: number, end: number, doc: number): number {
  let low = start;
  let high = end - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const value = docs[middle]!;
    if (value === doc) return middle;
    if (value < doc) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}
