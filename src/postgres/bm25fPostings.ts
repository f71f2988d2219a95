/** True BM25F: a generation's combined posting lists with their per-field shares. */
import {
  bm25fFieldFrequency,
  bm25fFieldShare,
  bm25fTermScore,
  bm25Idf,
  bm25LengthRatio,
} from "../knowledge/bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import { COMBINED_FIELD, FIELD_COUNT, type FieldPairs, groupByTerm, scoredField } from "./fieldPairs.js";
import type { PostgresIndexParameters, PostingRow } from "./indexData.js";

// The BM25F operations of the in-memory index (`bm25fPostings`), through `bm25.ts`'s functions as it calls them.

/** BM25F: a field's weighted, length-normalized term frequency. */
function bm25fPart(
  parameters: PostgresIndexParameters,
  weight: number,
  frequency: number,
  fieldLength: number,
  averageLength: number,
): number {
  return bm25fFieldFrequency(weight, frequency, bm25LengthRatio(parameters.b, fieldLength, averageLength));
}

/** BM25F: a term's idf over the documents holding it in any scored field. */
function bm25fIdf(documentCount: number, documentFrequency: number): number {
  return bm25Idf(documentCount, documentFrequency);
}

/** BM25F: the term score of a document from its fields' parts (summed in field order). */
function bm25fScore(parameters: PostgresIndexParameters, idf: number, parts: Float64Array): number {
  let pseudoFrequency = 0;
  for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += parts[field]!;
  return bm25fTermScore(idf, pseudoFrequency, parameters.k1);
}

/** BM25F: a field's share of the term score (only positive shares are stored). */
function bm25fShare(score: number, part: number, parts: Float64Array): number {
  let pseudoFrequency = 0;
  for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += parts[field]!;
  return bm25fFieldShare(score, part, pseudoFrequency);
}

/** Per term and document of a BM25F index: each field's part (weighted, length-normalized frequency). */
function bm25fSetup(parameters: PostgresIndexParameters, pairs: FieldPairs) {
  const { terms, fieldTerms, fieldEnds, averageLengths } = pairs;
  const scored: boolean[] = [];
  for (let field = 0; field < FIELD_COUNT; field++)
    scored.push(scoredField(parameters, averageLengths, field));
  const grouped = scored.map((isScored, field) =>
    isScored ? groupByTerm(terms.length, fieldTerms[field]!, fieldEnds[field]!) : null,
  );
  // Documents holding the term in any scored field: the union of the fields' sorted document slices.
  const documentFrequencies = new Int32Array(terms.length);
  const mark = new Int32Array(fieldEnds[0]!.length).fill(-1);
  for (let term = 0; term < terms.length; term++) {
    let count = 0;
    for (const group of grouped) {
      if (!group) continue;
      for (let position = group.offsets[term]!; position < group.offsets[term + 1]!; position++) {
        const doc = group.docs[position]!;
        if (mark[doc] !== term) {
          mark[doc] = term;
          count++;
        }
      }
    }
    documentFrequencies[term] = count;
  }
  return { scored, grouped, documentFrequencies };
}

/**
 * True BM25F: per term one combined posting list (the complete term score) and, per field, the shares of the
 * breakdown (only where positive), exactly as `finalizeBm25f` computes them.
 */
export function* bm25fRows(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<PostingRow> {
  const { terms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const documentCount = fieldEnds[0]!.length;
  const { grouped, documentFrequencies } = bm25fSetup(parameters, pairs);
  for (let term = 0; term < terms.length; term++) {
    const documentFrequency = documentFrequencies[term]!;
    if (documentFrequency === 0) continue;
    // Per document of this term: the part and the term frequency per field.
    const parts = new Map<number, Float64Array>();
    const fieldFrequency = new Map<number, Int32Array>();
    for (let field = 0; field < FIELD_COUNT; field++) {
      const group = grouped[field];
      if (!group) continue;
      const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
      for (let position = group.offsets[term]!; position < group.offsets[term + 1]!; position++) {
        const doc = group.docs[position]!;
        const tf = fieldFrequencies[field]!.data[group.sources[position]!]!;
        let docParts = parts.get(doc);
        if (!docParts) {
          docParts = new Float64Array(FIELD_COUNT);
          parts.set(doc, docParts);
          fieldFrequency.set(doc, new Int32Array(FIELD_COUNT));
        }
        docParts[field] = bm25fPart(parameters, weight, tf, lengths[field]![doc]!, averageLengths[field]!);
        fieldFrequency.get(doc)![field] = tf;
      }
    }
    const idf = bm25fIdf(documentCount, documentFrequency);
    const docs = Int32Array.from([...parts.keys()].sort((left, right) => left - right));
    const tfs = new Int32Array(docs.length);
    const scores = new Float64Array(docs.length);
    const shareDocs: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    const shareValues: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    const shareTfs: number[][] = Array.from({ length: FIELD_COUNT }, () => []);
    docs.forEach((doc, index) => {
      const docParts = parts.get(doc)!;
      const frequencies = fieldFrequency.get(doc)!;
      const score = bm25fScore(parameters, idf, docParts);
      let total = 0;
      for (let field = 0; field < FIELD_COUNT; field++) total += frequencies[field]!;
      tfs[index] = total;
      scores[index] = score;
      for (let field = 0; field < FIELD_COUNT; field++) {
        const share = bm25fShare(score, docParts[field]!, docParts);
        if (share > 0) {
          shareDocs[field]!.push(doc);
          shareValues[field]!.push(share);
          shareTfs[field]!.push(frequencies[field]!);
        }
      }
    });
    const name = terms[term]!;
    yield {
      term: name,
      field: COMBINED_FIELD,
      documentFrequency,
      docs,
      frequencies: tfs,
      contributions: scores,
    };
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (shareDocs[field]!.length === 0) continue;
      yield {
        term: name,
        field,
        documentFrequency: shareDocs[field]!.length,
        docs: Int32Array.from(shareDocs[field]!),
        frequencies: Int32Array.from(shareTfs[field]!),
        contributions: Float64Array.from(shareValues[field]!),
      };
    }
  }
}
