/** Field-by-field BM25 ("sum"): a generation's posting lists. */
import { bm25Idf, bm25LengthNormalization, bm25TermScore } from "../knowledge/bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import { FIELD_COUNT, type FieldPairs, scoredField } from "./fieldPairs.js";
import type { PostgresIndexParameters, PostingRow } from "./indexData.js";

// The BM25 operations of the in-memory index (`fieldPostings`, `bm25fPostings`), through `bm25.ts`'s functions
// as it calls them, so the posting lists hold its bits.

/** Sum mode: a field's weight times the term's idf in that field. */
function weightedIdf(weight: number, documentCount: number, documentFrequency: number): number {
  return weight * bm25Idf(documentCount, documentFrequency);
}

/**
 * Field-by-field BM25 ("sum"): the contribution of each posting exactly as `fieldPostings` computes it.
 *
 * Per field, one counting pass gives each term's document frequency (hence its weighted idf), then one pass over
 * the field's pairs in document order (each document's length normalization computed once, its pairs read in
 * sequence) writes every posting's document, frequency and contribution straight to its place in term order.
 * The rows are views of those three arrays: no per-term arrays, no second pass.
 */
export function* sumRows(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<PostingRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const { k1, b } = parameters;
  const documentCount = fieldEnds[0]!.length;
  const termCount = terms.length;
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (!scoredField(parameters, averageLengths, field)) continue;
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    const averageLength = averageLengths[field]!;
    const termIds = fieldTerms[field]!.data;
    const pairCount = fieldTerms[field]!.length;
    const frequencies = fieldFrequencies[field]!.data;
    const ends = fieldEnds[field]!;
    const fieldLengths = lengths[field]!;
    const offsets = new Int32Array(termCount + 1);
    for (let index = 0; index < pairCount; index++) offsets[termIds[index]! + 1]!++;
    const idfs = new Float64Array(termCount);
    for (let term = 0; term < termCount; term++) {
      const documentFrequency = offsets[term + 1]!;
      if (documentFrequency > 0) idfs[term] = weightedIdf(weight, documentCount, documentFrequency);
      offsets[term + 1]! += offsets[term]!;
    }
    const cursor = offsets.slice(0, termCount);
    const docs = new Int32Array(pairCount);
    const tfs = new Int32Array(pairCount);
    const contributions = new Float64Array(pairCount);
    let begin = 0;
    for (let doc = 0; doc < documentCount; doc++) {
      const end = ends[doc]!;
      if (end === begin) continue;
      const normalization = bm25LengthNormalization(k1, b, fieldLengths[doc]!, averageLength);
      for (let index = begin; index < end; index++) {
        const term = termIds[index]!;
        const tf = frequencies[index]!;
        const position = cursor[term]!++;
        docs[position] = doc;
        tfs[position] = tf;
        contributions[position] = bm25TermScore(idfs[term]!, tf, k1, normalization);
      }
      begin = end;
    }
    for (let term = 0; term < termCount; term++) {
      const start = offsets[term]!;
      const end = offsets[term + 1]!;
      if (end === start) continue;
      yield {
        term: terms[term]!,
        field,
        documentFrequency: end - start,
        docs: docs.subarray(start, end),
        frequencies: tfs.subarray(start, end),
        contributions: contributions.subarray(start, end),
      };
    }
  }
}
