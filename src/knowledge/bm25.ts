/**
 * BM25, written once. Every scorer of the engine (the per-field sum, true BM25F, query-time scoring) computes
 * its numbers with these functions, so the same inputs give bit-identical contributions wherever they are
 * computed: JavaScript evaluates floating-point expressions in a fixed order without fused operations, and each
 * function fixes that order.
 *
 * Parameters and ranges: `k1` (term-frequency saturation) in [0, ∞), default 1.5; `b` (length normalization) in
 * [0, 1], default 0.75; field weights in [0, ∞); document and term counts are integers with
 * 0 < documentFrequency <= documentCount; lengths are token counts and the average length is > 0.
 */

import type { KnowledgeFieldWeights } from "../types/knowledge.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";

/**
 * Lucene's always-positive inverse document frequency: `ln(1 + (N − df + 0.5) / (df + 0.5))`, with `N` the number
 * of documents and `df` the number of documents containing the term (in one field, or for BM25F in any scored
 * field).
 */
export function bm25Idf(documentCount: number, documentFrequency: number): number {
  return Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
}

/**
 * The length part of BM25's denominator for a document: `k1 · (1 − b + b · length / averageLength)`. Computed
 * once per document and field, shared by every term of that document.
 */
export function bm25LengthNormalization(
  k1: number,
  b: number,
  length: number,
  averageLength: number,
): number {
  return k1 * bm25LengthRatio(b, length, averageLength);
}

/** `1 − b + b · length / averageLength`: the document's length relative to the average, softened by `b`. */
export function bm25LengthRatio(b: number, length: number, averageLength: number): number {
  return 1 - b + (b * length) / averageLength;
}

/**
 * One term's BM25 contribution in one document and field:
 * `weightedIdf · (tf · (k1 + 1) / (tf + lengthNormalization))`, where `weightedIdf` is the field weight times
 * {@link bm25Idf} and `lengthNormalization` comes from {@link bm25LengthNormalization}. The saturated term
 * frequency is computed first and then scaled, NeuroLink's order (`weight · idf · (tf · (k1 + 1) / (…))`): with
 * `k1 = 0` it is exactly 1, so every document containing the term gets exactly `weightedIdf`, and equal scores
 * stay equal (the tie-break by id then decides, as in NeuroLink).
 */
export function bm25TermScore(
  weightedIdf: number,
  termFrequency: number,
  k1: number,
  lengthNormalization: number,
): number {
  return weightedIdf * ((termFrequency * (k1 + 1)) / (termFrequency + lengthNormalization));
}

/**
 * BM25F's per-field part of a term's pseudo-frequency: the field's weighted term frequency divided by its
 * {@link bm25LengthRatio}. The parts of all scored fields are summed in field order.
 */
export function bm25fFieldFrequency(weight: number, termFrequency: number, lengthRatio: number): number {
  return (weight * termFrequency) / lengthRatio;
}

/** BM25F's score of a term from its IDF and summed pseudo-frequency: `idf · pf · (k1 + 1) / (pf + k1)`. */
export function bm25fTermScore(idf: number, pseudoFrequency: number, k1: number): number {
  return (idf * (pseudoFrequency * (k1 + 1))) / (pseudoFrequency + k1);
}

/**
 * A field's share of a BM25F term score, for the per-field breakdown: the score split in proportion to the fields'
 * parts of the pseudo-frequency (each a {@link bm25fFieldFrequency}), `score · fieldFrequency / pseudoFrequency`;
 * 0 when the pseudo-frequency is 0.
 */
export function bm25fFieldShare(score: number, fieldFrequency: number, pseudoFrequency: number): number {
  return pseudoFrequency > 0 ? (score * fieldFrequency) / pseudoFrequency : 0;
}

/** Throws a `RangeError` naming the first parameter outside its range (see the module comment). */
export function assertIndexParameters(weights: KnowledgeFieldWeights, k1: number, b: number): void {
  for (const field of KNOWLEDGE_FIELD_NAMES) {
    const weight = weights[field];
    if (typeof weight !== "number" || !Number.isFinite(weight) || weight < 0) {
      throw new RangeError(`fieldWeights.${field} must be a finite number >= 0, got ${String(weight)}`);
    }
  }
  if (typeof k1 !== "number" || !Number.isFinite(k1) || k1 < 0) {
    throw new RangeError(`k1 must be a finite number >= 0, got ${String(k1)}`);
  }
  if (typeof b !== "number" || !Number.isFinite(b) || b < 0 || b > 1) {
    throw new RangeError(`b must be a number in [0, 1], got ${String(b)}`);
  }
}
