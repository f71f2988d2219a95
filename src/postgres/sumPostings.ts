/** Field-by-field BM25 ("sum"): a generation's posting lists and forward rows. */
import { bm25Idf, bm25LengthNormalization, bm25TermScore } from "../knowledge/bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import { FIELD_COUNT, type FieldPairs, fieldDocumentFrequencies, scoredField } from "./fieldPairs.js";
import type { ForwardRow, PostgresIndexParameters, PostingRow } from "./indexData.js";
import { FORWARD_KEY_STRIDE } from "./sql.js";

// The BM25 operations of the in-memory index (`fieldPostings`, `bm25fPostings`), through `bm25.ts`'s functions
// as it calls them, so the posting lists and the forward rows hold its bits.

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

/** Sum mode, document by document: the same contributions as {@link sumRows}, keyed by term and field. */
export function* sumDocuments(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<ForwardRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const { k1, b } = parameters;
  const documentCount = fieldEnds[0]!.length;
  const idfs: (Float64Array | null)[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (!scoredField(parameters, averageLengths, field)) {
      idfs.push(null);
      continue;
    }
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    const frequencies = fieldDocumentFrequencies(terms.length, fieldTerms[field]!);
    const weighted = new Float64Array(terms.length);
    for (let term = 0; term < terms.length; term++) {
      if (frequencies[term]! > 0) weighted[term] = weightedIdf(weight, documentCount, frequencies[term]!);
    }
    idfs.push(weighted);
  }
  const impactOf = new Float64Array(terms.length);
  const seen = new Uint8Array(terms.length);
  /** The document's distinct terms in first-seen order (at most one per posting: sized by the largest count). */
  let order = new Int32Array(1024);
  for (let doc = 0; doc < documentCount; doc++) {
    let count = 0;
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (!idfs[field]) continue;
      count += fieldEnds[field]![doc]! - (doc > 0 ? fieldEnds[field]![doc - 1]! : 0);
    }
    const keys = new Int32Array(count);
    const contributions = new Float64Array(count);
    if (order.length < count) order = new Int32Array(count);
    let distinct = 0;
    let position = 0;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const idf = idfs[field];
      if (!idf) continue;
      const begin = doc > 0 ? fieldEnds[field]![doc - 1]! : 0;
      const end = fieldEnds[field]![doc]!;
      if (end === begin) continue;
      const normalization = bm25LengthNormalization(k1, b, lengths[field]![doc]!, averageLengths[field]!);
      const termIds = fieldTerms[field]!.data;
      const frequencies = fieldFrequencies[field]!.data;
      for (let index = begin; index < end; index++) {
        const term = termIds[index]!;
        const contribution = bm25TermScore(idf[term]!, frequencies[index]!, k1, normalization);
        keys[position] = term * FORWARD_KEY_STRIDE + field;
        contributions[position++] = contribution;
        if (seen[term] === 0) {
          seen[term] = 1;
          order[distinct++] = term;
        }
        impactOf[term]! += contribution;
      }
    }
    const impactTerms = order.slice(0, distinct);
    const impacts = new Float64Array(distinct);
    for (let index = 0; index < distinct; index++) {
      const term = impactTerms[index]!;
      impacts[index] = impactOf[term]!;
      impactOf[term] = 0;
      seen[term] = 0;
    }
    yield { doc, keys, contributions, impactTerms, impacts };
  }
}
