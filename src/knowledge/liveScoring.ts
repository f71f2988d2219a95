/**
 * Scoring at query time, for an index with changes (see `indexChanges.ts`): every contribution is computed from
 * the stored term frequency and field length with the statistics of the changed collection (live document count,
 * document frequencies counted over live postings, average lengths), through the same functions of `bm25.ts` that
 * precompute a full build's contributions. Each document's contributions are added in the same order (field by
 * field, then query term by query term), so the scores are bit-identical to a full build's.
 */
import type { KnowledgeFieldWeights, KnowledgeLexicalMatch } from "../types/knowledge.js";
import {
  bm25fFieldFrequency,
  bm25fFieldShare,
  bm25fTermScore,
  bm25Idf,
  bm25LengthNormalization,
  bm25LengthRatio,
  bm25TermScore,
} from "./bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { matchesFromAccumulators } from "./exhaustiveScoring.js";
import { addedPostingsOf, type IndexBase, type IndexChanges, type LiveScratch } from "./indexChanges.js";
import { FIELD_COUNT, frequencyAt, LARGE_FREQUENCY, termFrequencies } from "./postings.js";
import { selectTop } from "./ranking.js";

/** Bit of a document's mark that says it was touched by a BM25F term (the field bits are 0 to 4). */
const TOUCHED_BIT = 1 << FIELD_COUNT;

/** What query-time scoring reads. */
export type LiveIndex = {
  base: IndexBase;
  changes: IndexChanges;
  fieldWeights: Readonly<KnowledgeFieldWeights>;
  k1: number;
  b: number;
  bm25f: boolean;
};

/** The scratch of a base, grown to at least `capacity` dense ids. */
function scratchFor(base: IndexBase, capacity: number): LiveScratch {
  if (!base.scratch || base.scratch.capacity < capacity) {
    const size = Math.max(capacity, Math.ceil((base.scratch?.capacity ?? 0) * 1.25));
    base.scratch = {
      capacity: size,
      totals: new Float64Array(size),
      fieldTotals: Array.from({ length: FIELD_COUNT }, () => new Float64Array(size)),
      marks: new Uint8Array(size),
      touched: new Int32Array(size),
      termParts: Array.from({ length: FIELD_COUNT }, () => new Float64Array(size)),
      termMarks: new Uint8Array(size),
      termTouched: new Int32Array(size),
    };
  }
  return base.scratch;
}

/** Calls `visit(doc, frequency, length)` for every live posting of `term` in `field` (base, then added). */
function forEachLivePosting(
  index: LiveIndex,
  field: number,
  term: number,
  visit: (doc: number, frequency: number, length: number) => void,
): void {
  const { base, changes } = index;
  const live = changes.live;
  const postings = base.termPostings[field]!;
  if (term + 1 < postings.offsets.length) {
    const lengths = base.lengths[field]!;
    const end = postings.offsets[term + 1]!;
    for (let position = postings.offsets[term]!; position < end; position++) {
      const doc = postings.docs[position]!;
      if (live[doc] === 0) continue;
      visit(doc, frequencyAt(postings, term, position), lengths[doc]!);
    }
  }
  const added = addedPostingsOf(changes, field, term);
  if (added) {
    const baseCount = base.ids.length;
    for (let position = added.start; position < added.end; position++) {
      const doc = added.docs[position]!;
      if (live[doc] === 0) continue;
      visit(doc, added.frequencies[position]!, changes.added.terms[doc - baseCount]!.lengths[field]!);
    }
  }
}

/**
 * Scores the documents matching `termIds` (distinct, known) and returns the best `topK` (score descending, ties by
 * id), each with its per-field breakdown; `mask` (by dense id, 1 = eligible) filters before ranking.
 */
export function scoreQueryLive(
  index: LiveIndex,
  termIds: readonly number[],
  topK: number,
  mask: Uint8Array | null,
  idOf: (doc: number) => string,
): KnowledgeLexicalMatch[] {
  const { changes, k1, b } = index;
  const capacity = changes.live.length;
  const scratch = scratchFor(index.base, capacity);
  const { totals, fieldTotals, marks, touched } = scratch;
  const eligible = mask ?? changes.live;
  const documentCount = changes.documentCount;
  let touchedCount = 0;

  if (index.bm25f) {
    const { termParts, termMarks, termTouched } = scratch;
    for (const term of termIds) {
      let termCount = 0;
      for (let field = 0; field < FIELD_COUNT; field++) {
        const weight = index.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
        const averageLength = changes.averageLengths[field]!;
        if (!(weight > 0) || !(averageLength > 0)) continue;
        const parts = termParts[field]!;
        const bit = 1 << field;
        forEachLivePosting(index, field, term, (doc, frequency, length) => {
          if (termMarks[doc] === 0) termTouched[termCount++] = doc;
          termMarks[doc]! |= bit;
          parts[doc] = bm25fFieldFrequency(weight, frequency, bm25LengthRatio(b, length, averageLength));
        });
      }
      if (termCount === 0) continue;
      // The document frequency counts every live document with the term in a scored field, eligible or not.
      const idf = bm25Idf(documentCount, termCount);
      for (let position = 0; position < termCount; position++) {
        const doc = termTouched[position]!;
        const fields = termMarks[doc]!;
        termMarks[doc] = 0;
        if (eligible[doc] === 0) continue;
        let pseudoFrequency = 0;
        for (let field = 0; field < FIELD_COUNT; field++)
          if (fields & (1 << field)) pseudoFrequency += termParts[field]![doc]!;
        const score = bm25fTermScore(idf, pseudoFrequency, k1);
        if (marks[doc] === 0) touched[touchedCount++] = doc;
        totals[doc]! += score;
        for (let field = 0; field < FIELD_COUNT; field++) {
          if (!(fields & (1 << field))) continue;
          const share = bm25fFieldShare(score, termParts[field]![doc]!, pseudoFrequency);
          if (share > 0) {
            fieldTotals[field]![doc]! += share;
            marks[doc]! |= 1 << field;
          }
        }
        marks[doc]! |= TOUCHED_BIT;
      }
    }
  } else {
    for (let field = 0; field < FIELD_COUNT; field++) {
      const weight = index.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      const averageLength = changes.averageLengths[field]!;
      if (!(weight > 0) || !(averageLength > 0)) continue;
      const fieldTotal = fieldTotals[field]!;
      const bit = 1 << field;
      const postings = index.base.termPostings[field]!;
      const { offsets, docs } = postings;
      const lengths = index.base.lengths[field]!;
      const live = changes.live;
      const baseCount = index.base.ids.length;
      for (const term of termIds) {
        // Plain loops (no callbacks): this is the turn path while changes are pending.
        const start = term + 1 < offsets.length ? offsets[term]! : 0;
        const end = term + 1 < offsets.length ? offsets[term + 1]! : 0;
        const added = addedPostingsOf(changes, field, term);
        let documentFrequency = 0;
        if (changes.deadBaseCount === 0) documentFrequency = end - start;
        else
          for (let position = start; position < end; position++)
            if (live[docs[position]!] === 1) documentFrequency++;
        if (added)
          for (let position = added.start; position < added.end; position++)
            if (live[added.docs[position]!] === 1) documentFrequency++;
        if (documentFrequency === 0) continue;
        const weightedIdf = weight * bm25Idf(documentCount, documentFrequency);
        const frequencies = termFrequencies(postings, term);
        for (let position = start; position < end; position++) {
          const doc = docs[position]!;
          if (live[doc] === 0 || eligible[doc] === 0) continue;
          let frequency = frequencies[position]!;
          if (frequency === LARGE_FREQUENCY) frequency = postings.largeFrequencies!.get(position)!;
          if (marks[doc] === 0) touched[touchedCount++] = doc;
          const contribution = bm25TermScore(
            weightedIdf,
            frequency,
            k1,
            bm25LengthNormalization(k1, b, lengths[doc]!, averageLength),
          );
          totals[doc]! += contribution;
          fieldTotal[doc]! += contribution;
          marks[doc]! |= bit;
        }
        if (!added) continue;
        for (let position = added.start; position < added.end; position++) {
          const doc = added.docs[position]!;
          if (live[doc] === 0 || eligible[doc] === 0) continue;
          if (marks[doc] === 0) touched[touchedCount++] = doc;
          const length = changes.added.terms[doc - baseCount]!.lengths[field]!;
          const contribution = bm25TermScore(
            weightedIdf,
            added.frequencies[position]!,
            k1,
            bm25LengthNormalization(k1, b, length, averageLength),
          );
          totals[doc]! += contribution;
          fieldTotal[doc]! += contribution;
          marks[doc]! |= bit;
        }
      }
    }
  }

  const selected = selectTop(touched, touchedCount, topK, totals, changes.rankKeys, idOf);
  return matchesFromAccumulators(selected, idOf, scratch, touchedCount);
}
