/** The (document, term) pairs a generation's build gathers per field, and what both scoring modes do with them. */
import { KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import type { IntBuffer } from "../knowledge/postings.js";
import type { PostgresIndexParameters } from "./indexData.js";

export const FIELD_COUNT = 5;
/** The field number of BM25F's combined postings (its per-field rows hold the shares of the breakdown). */
export const COMBINED_FIELD = 5;

/** A field's (document, term) pairs as the build gathered them, document by document. */
export type FieldPairs = {
  terms: readonly string[];
  /** Per field: term ids, document by document. */
  fieldTerms: IntBuffer[];
  /** Per field: the term frequency of each pair. */
  fieldFrequencies: IntBuffer[];
  /** Per field, per document: where its pairs end. */
  fieldEnds: Int32Array[];
  /** Per field, per document: its token count. */
  lengths: Int32Array[];
  averageLengths: readonly number[];
};

/** Whether a field is scored: positive weight and some tokens in some document (as in memory). */
export function scoredField(
  parameters: PostgresIndexParameters,
  averageLengths: readonly number[],
  field: number,
) {
  const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
  return weight > 0 && averageLengths[field]! > 0;
}

/** Groups a field's (document, term) pairs by term: per term its slice of documents, ascending. */
export function groupByTerm(
  termCount: number,
  terms: IntBuffer,
  ends: Int32Array,
): { offsets: Int32Array; docs: Int32Array; sources: Int32Array } {
  const offsets = new Int32Array(termCount + 1);
  for (let index = 0; index < terms.length; index++) offsets[terms.data[index]! + 1]!++;
  for (let term = 0; term < termCount; term++) offsets[term + 1]! += offsets[term]!;
  const cursor = offsets.slice(0, termCount);
  const docs = new Int32Array(terms.length);
  const sources = new Int32Array(terms.length);
  let begin = 0;
  for (let doc = 0; doc < ends.length; doc++) {
    const end = ends[doc]!;
    for (let index = begin; index < end; index++) {
      const position = cursor[terms.data[index]!]!++;
      docs[position] = doc;
      sources[position] = index;
    }
    begin = end;
  }
  return { offsets, docs, sources };
}

/** Documents per term id among a field's pairs. */
export function fieldDocumentFrequencies(termCount: number, terms: IntBuffer): Int32Array {
  const frequencies = new Int32Array(termCount);
  for (let index = 0; index < terms.length; index++) frequencies[terms.data[index]!]!++;
  return frequencies;
}
