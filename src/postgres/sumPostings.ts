/** Field-by-field BM25 ("sum"): a generation's posting lists and forward rows. */
import { bm25Idf, bm25LengthNormalization, bm25TermScore } from "../knowledge/bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "../knowledge/defaults.js";
import {
  FIELD_COUNT,
  type FieldPairs,
  fieldDocumentFrequencies,
  groupByTerm,
  scoredField,
} from "./fieldPairs.js";
import type { ForwardRow, PostgresIndexParameters, PostingRow } from "./indexData.js";
import { FORWARD_KEY_STRIDE } from "./sql.js";

// The BM25 operations of the in-memory index (`fieldPostings`, `bm25fPostings`), through `bm25.ts`'s functions
// as it calls them, so the posting lists and the forward rows hold its bits.

/** Sum mode: a field's weight times the term's idf in that field. */
function weightedIdf(weight: number, documentCount: number, documentFrequency: number): number {
  return weight * bm25Idf(documentCount, documentFrequency);
}

/** Sum mode: one posting's contribution. */
function sumContribution(
  parameters: PostgresIndexParameters,
  termWeightedIdf: number,
  frequency: number,
  fieldLength: number,
  averageLength: number,
): number {
  const { k1, b } = parameters;
  return bm25TermScore(
    termWeightedIdf,
    frequency,
    k1,
    bm25LengthNormalization(k1, b, fieldLength, averageLength),
  );
}

/** Field-by-field BM25 ("sum"): the contribution of each posting exactly as `fieldPostings` computes it. */
export function* sumRows(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<PostingRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
  const documentCount = fieldEnds[0]!.length;
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (!scoredField(parameters, averageLengths, field)) continue;
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    const averageLength = averageLengths[field]!;
    const grouped = groupByTerm(terms.length, fieldTerms[field]!, fieldEnds[field]!);
    const frequencies = fieldFrequencies[field]!.data;
    const fieldLengths = lengths[field]!;
    for (let term = 0; term < terms.length; term++) {
      const start = grouped.offsets[term]!;
      const end = grouped.offsets[term + 1]!;
      if (end === start) continue;
      const documentFrequency = end - start;
      const termWeightedIdf = weightedIdf(weight, documentCount, documentFrequency);
      const docs = grouped.docs.slice(start, end);
      const tfs = new Int32Array(documentFrequency);
      const contributions = new Float64Array(documentFrequency);
      for (let index = 0; index < documentFrequency; index++) {
        const tf = frequencies[grouped.sources[start + index]!]!;
        tfs[index] = tf;
        contributions[index] = sumContribution(
          parameters,
          termWeightedIdf,
          tf,
          fieldLengths[docs[index]!]!,
          averageLength,
        );
      }
      yield { term: terms[term]!, field, documentFrequency, docs, frequencies: tfs, contributions };
    }
  }
}

/** Sum mode, document by document: the same contributions as {@link sumRows}, keyed by term and field. */
export function* sumDocuments(parameters: PostgresIndexParameters, pairs: FieldPairs): Generator<ForwardRow> {
  const { terms, fieldTerms, fieldFrequencies, fieldEnds, lengths, averageLengths } = pairs;
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
  for (let doc = 0; doc < documentCount; doc++) {
    let count = 0;
    for (let field = 0; field < FIELD_COUNT; field++) {
      if (!idfs[field]) continue;
      count += fieldEnds[field]![doc]! - (doc > 0 ? fieldEnds[field]![doc - 1]! : 0);
    }
    const keys = new Int32Array(count);
    const contributions = new Float64Array(count);
    const order: number[] = [];
    let position = 0;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const idf = idfs[field];
      if (!idf) continue;
      const begin = doc > 0 ? fieldEnds[field]![doc - 1]! : 0;
      const end = fieldEnds[field]![doc]!;
      const fieldLength = lengths[field]![doc]!;
      for (let index = begin; index < end; index++) {
        const term = fieldTerms[field]!.data[index]!;
        const contribution = sumContribution(
          parameters,
          idf[term]!,
          fieldFrequencies[field]!.data[index]!,
          fieldLength,
          averageLengths[field]!,
        );
        keys[position] = term * FORWARD_KEY_STRIDE + field;
        contributions[position++] = contribution;
        if (seen[term] === 0) {
          seen[term] = 1;
          order.push(term);
        }
        impactOf[term]! += contribution;
      }
    }
    const impactTerms = Int32Array.from(order);
    const impacts = new Float64Array(order.length);
    order.forEach((term, index) => {
      impacts[index] = impactOf[term]!;
      impactOf[term] = 0;
      seen[term] = 0;
    });
    yield { doc, keys, contributions, impactTerms, impacts };
  }
}
