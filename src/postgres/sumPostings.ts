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
 * the field's pairs in document order puts each posting's (document, frequency) record at its place in term order
 * (one 8-byte write per posting, where three arrays cost three cache misses), and each term's row is read from
 * its records in sequence, its contributions computed then from each document's length normalization (the same
 * operands, so the same bits). The records' buffer is sized once for the largest field, and a row's arrays are
 * views of scratch space reused by the next row: large registries allocate no per-field or per-term arrays, whose
 * external memory set off full collections of the publishing heap.
 */
export function* sumRows(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<PostingRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const { k1, b } = parameters;
  const documentCount = fieldEnds[0]!.length;
  const termCount = terms.length;
  const fields: number[] = [];
  let largest = 0;
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (!scoredField(parameters, averageLengths, field)) continue;
    fields.push(field);
    largest = Math.max(largest, fieldTerms[field]!.length);
  }
  const records = new Int32Array(largest * 2);
  const offsets = new Int32Array(termCount + 1);
  const cursor = new Int32Array(termCount);
  const idfs = new Float64Array(termCount);
  const normalizations = new Float64Array(documentCount);
  const scratch = new RowScratch();
  for (const field of fields) {
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    const averageLength = averageLengths[field]!;
    const termIds = fieldTerms[field]!.data;
    const pairCount = fieldTerms[field]!.length;
    const frequencies = fieldFrequencies[field]!.data;
    const ends = fieldEnds[field]!;
    const fieldLengths = lengths[field]!;
    offsets.fill(0);
    for (let index = 0; index < pairCount; index++) offsets[termIds[index]! + 1]!++;
    for (let term = 0; term < termCount; term++) {
      const documentFrequency = offsets[term + 1]!;
      idfs[term] = documentFrequency > 0 ? weightedIdf(weight, documentCount, documentFrequency) : 0;
      offsets[term + 1]! += offsets[term]!;
    }
    cursor.set(offsets.subarray(0, termCount));
    let begin = 0;
    for (let doc = 0; doc < documentCount; doc++) {
      const end = ends[doc]!;
      if (end === begin) continue;
      normalizations[doc] = bm25LengthNormalization(k1, b, fieldLengths[doc]!, averageLength);
      for (let index = begin; index < end; index++) {
        const position = cursor[termIds[index]!]!++ << 1;
        records[position] = doc;
        records[position + 1] = frequencies[index]!;
      }
      begin = end;
    }
    for (let term = 0; term < termCount; term++) {
      const start = offsets[term]!;
      const count = offsets[term + 1]! - start;
      if (count === 0) continue;
      const { docs, tfs, contributions } = scratch.rows(count);
      const idf = idfs[term]!;
      for (let index = 0, position = start << 1; index < count; index++, position += 2) {
        const doc = records[position]!;
        const tf = records[position + 1]!;
        docs[index] = doc;
        tfs[index] = tf;
        contributions[index] = bm25TermScore(idf, tf, k1, normalizations[doc]!);
      }
      yield {
        term: terms[term]!,
        field,
        documentFrequency: count,
        docs: docs.subarray(0, count),
        frequencies: tfs.subarray(0, count),
        contributions: contributions.subarray(0, count),
      };
    }
  }
}

/** A row's arrays, reused by the next row; grown (doubling) to the longest list. */
class RowScratch {
  docs = new Int32Array(1024);
  tfs = new Int32Array(1024);
  contributions = new Float64Array(1024);

  rows(count: number): RowScratch {
    if (count > this.docs.length) {
      const length = Math.max(count, this.docs.length * 2);
      this.docs = new Int32Array(length);
      this.tfs = new Int32Array(length);
      this.contributions = new Float64Array(length);
    }
    return this;
  }
}
