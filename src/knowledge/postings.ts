/**
 * Postings: the per-field build buffers filled document by document, and their finalization into
 * compressed-sparse-row postings grouped by term, each posting carrying its BM25 contribution.
 */

import type { KnowledgeFieldWeights } from "../types/knowledge.js";
import {
  bm25fFieldFrequency,
  bm25fTermScore,
  bm25Idf,
  bm25LengthNormalization,
  bm25LengthRatio,
  bm25TermScore,
} from "./bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";

/** Number of searchable fields (title, aliases, keywords, summary, body). */
export const FIELD_COUNT = 5;

/** A growable Int32 buffer used only while building. */
export class IntBuffer {
  data = new Int32Array(1024);
  length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const next = new Int32Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = value;
  }

  /** Grows the capacity to at least `capacity` values in one step. */
  reserve(capacity: number): void {
    if (capacity <= this.data.length) return;
    const next = new Int32Array(capacity);
    next.set(this.data.subarray(0, this.length));
    this.data = next;
  }
}

/** Per-field build state, dropped by finalize. */
export type FieldBuilder = {
  /** Term id of each posting, appended document by document. */
  terms: IntBuffer;
  /** Term frequency of each posting. */
  frequencies: IntBuffer;
  /** Per document: the end of its postings in `terms` (they start where the previous document's end). */
  ends: IntBuffer;
  /** Per document: the field's length in tokens. */
  lengths: IntBuffer;
  total: number;
};

/** An empty field builder. */
export function createFieldBuilder(): FieldBuilder {
  return {
    terms: new IntBuffer(),
    frequencies: new IntBuffer(),
    ends: new IntBuffer(),
    lengths: new IntBuffer(),
    total: 0,
  };
}

/** Finished per-field postings. */
export type FieldPostings = {
  /** Term id → first posting; `offsets[termId + 1]` ends it. Empty for skipped fields. */
  offsets: Int32Array;
  docs: Int32Array;
  contributions: Float64Array;
  active: boolean;
};

/** The postings of a field that is not scored (weight ≤ 0, or empty in every document). */
export function inactivePostings(): FieldPostings {
  return {
    offsets: new Int32Array(0),
    docs: new Int32Array(0),
    contributions: new Float64Array(0),
    active: false,
  };
}

/** Postings finalized between two yields of an incremental build. */
const POSTINGS_PER_STEP = 1 << 18;

/**
 * The finished postings of one field: grouped by term, each posting's BM25 contribution computed once. A
 * function of its own (not a loop inside finalize) so the engine optimizes it with full type information; a
 * generator so an incremental build can yield inside a large field.
 *
 * One counting pass gives each term's document frequency and slice; then the postings, read in document order,
 * are scattered into their term's slice with the contribution computed on the way, so each slice stays sorted by
 * document. The weight × IDF of a term and the length normalization of a document are computed once each, then
 * combined by {@link bm25TermScore}, so contributions are bit-identical to scoring each posting on its own.
 */
export function* fieldPostings(
  builder: FieldBuilder,
  termCount: number,
  documentCount: number,
  weight: number,
  averageLength: number,
  k1: number,
  b: number,
): Generator<void, FieldPostings, void> {
  const postingCount = builder.terms.length;
  const terms = builder.terms.data;
  const frequencies = builder.frequencies.data;
  const ends = builder.ends.data;
  const lengths = builder.lengths.data;
  const offsets = new Int32Array(termCount + 1);
  for (let from = 0; from < postingCount; from += POSTINGS_PER_STEP) {
    const to = Math.min(postingCount, from + POSTINGS_PER_STEP);
    for (let index = from; index < to; index++) offsets[terms[index]! + 1]!++;
    yield;
  }
  const weightedIdf = new Float64Array(termCount);
  for (let term = 0; term < termCount; term++) {
    const documentFrequency = offsets[term + 1]!;
    if (documentFrequency > 0) weightedIdf[term] = weight * bm25Idf(documentCount, documentFrequency);
    offsets[term + 1]! += offsets[term]!;
  }
  yield;
  const cursor = offsets.slice(0, termCount);
  const docs = new Int32Array(postingCount);
  const contributions = new Float64Array(postingCount);
  let begin = 0;
  let sinceYield = 0;
  for (let doc = 0; doc < documentCount; doc++) {
    const end = ends[doc]!;
    if (end === begin) continue;
    const lengthNormalization = bm25LengthNormalization(k1, b, lengths[doc]!, averageLength);
    for (let index = begin; index < end; index++) {
      const term = terms[index]!;
      const position = cursor[term]!++;
      docs[position] = doc;
      contributions[position] = bm25TermScore(
        weightedIdf[term]!,
        frequencies[index]!,
        k1,
        lengthNormalization,
      );
    }
    sinceYield += end - begin;
    begin = end;
    if (sinceYield >= POSTINGS_PER_STEP) {
      sinceYield = 0;
      yield;
    }
  }
  return { offsets, docs, contributions, active: true };
}

/**
 * True BM25F: one posting list per term over all fields, each posting the complete term score, with the
 * per-field shares (`shares[posting × FIELD_COUNT + field]`) kept for the breakdown.
 */
export function bm25fPostings(
  builders: readonly FieldBuilder[],
  termCount: number,
  documentCount: number,
  fieldWeights: Readonly<KnowledgeFieldWeights>,
  averageLengths: Float64Array,
  k1: number,
  b: number,
): FieldPostings & { shares: Float64Array } {
  // Weighted, length-normalized frequency per (term, doc, field), merged by (term, doc).
  const perTermDoc = new Map<number, Map<number, Float64Array>>();
  for (let field = 0; field < FIELD_COUNT; field++) {
    const builder = builders[field]!;
    const weight = fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    const averageLength = averageLengths[field]!;
    if (!(weight > 0) || !(averageLength > 0)) continue;
    let doc = 0;
    for (let index = 0; index < builder.terms.length; index++) {
      while (index >= builder.ends.data[doc]!) doc++;
      const term = builder.terms.data[index]!;
      const tf = builder.frequencies.data[index]!;
      const len = builder.lengths.data[doc]!;
      let docs = perTermDoc.get(term);
      if (!docs) {
        docs = new Map();
        perTermDoc.set(term, docs);
      }
      let parts = docs.get(doc);
      if (!parts) {
        parts = new Float64Array(FIELD_COUNT);
        docs.set(doc, parts);
      }
      parts[field] = bm25fFieldFrequency(weight, tf, bm25LengthRatio(b, len, averageLength));
    }
  }
  const offsets = new Int32Array(termCount + 1);
  let postingCount = 0;
  for (let term = 0; term < termCount; term++) {
    offsets[term] = postingCount;
    postingCount += perTermDoc.get(term)?.size ?? 0;
  }
  offsets[termCount] = postingCount;
  const docs = new Int32Array(postingCount);
  const contributions = new Float64Array(postingCount);
  const shares = new Float64Array(postingCount * FIELD_COUNT);
  for (let term = 0; term < termCount; term++) {
    const termDocs = perTermDoc.get(term);
    if (!termDocs) continue;
    const idf = bm25Idf(documentCount, termDocs.size);
    const sorted = [...termDocs.keys()].sort((left, right) => left - right);
    let position = offsets[term]!;
    for (const doc of sorted) {
      const parts = termDocs.get(doc)!;
      let pseudoFrequency = 0;
      for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += parts[field]!;
      const score = bm25fTermScore(idf, pseudoFrequency, k1);
      docs[position] = doc;
      contributions[position] = score;
      for (let field = 0; field < FIELD_COUNT; field++) {
        shares[position * FIELD_COUNT + field] =
          pseudoFrequency > 0 ? (score * parts[field]!) / pseudoFrequency : 0;
      }
      position++;
    }
  }
  return { offsets, docs, contributions, active: postingCount > 0, shares };
}
