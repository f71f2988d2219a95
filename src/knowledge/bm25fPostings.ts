/**
 * True BM25F's merged postings, computed from a build's per-field buffers: one posting list per term over all
 * scored fields, each posting the complete term score, with each field's share of it for the breakdown.
 */
import type { KnowledgeFieldWeights } from "../types/knowledge.js";
import { bm25fFieldFrequency, bm25fFieldShare, bm25fTermScore, bm25Idf, bm25LengthRatio } from "./bm25.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { FIELD_COUNT, type FieldBuilder, type FieldPostings } from "./postings.js";

/**
 * True BM25F: one posting list per term over all scored fields (weight > 0 and a positive average length), each
 * posting the complete term score, with the per-field shares (`shares[posting × FIELD_COUNT + field]`) kept for
 * the breakdown.
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
  // Flat arrays in three passes over the build buffers, documents in ascending order (so each term's postings
  // come out sorted by document without a sort): document frequencies, then each (term, document)'s weighted,
  // length-normalized frequency per field, then the merged score. A map of per-posting arrays would allocate one
  // object per (term, document) pair: tens of millions at 100k entries, and a build dominated by the collector.
  const activeFields: number[] = [];
  const weights = new Float64Array(FIELD_COUNT);
  for (let field = 0; field < FIELD_COUNT; field++) {
    const weight = fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    weights[field] = weight;
    if (weight > 0 && averageLengths[field]! > 0) activeFields.push(field);
  }
  const lastDocument = new Int32Array(termCount).fill(-1);
  const offsets = new Int32Array(termCount + 1);
  forEachFieldRecord(builders, activeFields, documentCount, (doc, _field, term) => {
    if (lastDocument[term] === doc) return;
    lastDocument[term] = doc;
    offsets[term + 1]!++;
  });
  for (let term = 0; term < termCount; term++) offsets[term + 1]! += offsets[term]!;
  const postingCount = offsets[termCount]!;
  const docs = new Int32Array(postingCount);
  const contributions = new Float64Array(postingCount);
  // Holds each posting's per-field frequencies until the last pass turns them into score shares in place.
  const shares = new Float64Array(postingCount * FIELD_COUNT);
  const next = offsets.slice(0, termCount);
  lastDocument.fill(-1);
  forEachFieldRecord(builders, activeFields, documentCount, (doc, field, term, frequency, length) => {
    if (lastDocument[term] !== doc) {
      lastDocument[term] = doc;
      docs[next[term]!++] = doc;
    }
    const position = next[term]! - 1;
    shares[position * FIELD_COUNT + field] = bm25fFieldFrequency(
      weights[field]!,
      frequency,
      bm25LengthRatio(b, length, averageLengths[field]!),
    );
  });
  for (let term = 0; term < termCount; term++) {
    const start = offsets[term]!;
    const end = offsets[term + 1]!;
    if (start === end) continue;
    const idf = bm25Idf(documentCount, end - start);
    for (let position = start; position < end; position++) {
      const base = position * FIELD_COUNT;
      let pseudoFrequency = 0;
      for (let field = 0; field < FIELD_COUNT; field++) pseudoFrequency += shares[base + field]!;
      const score = bm25fTermScore(idf, pseudoFrequency, k1);
      contributions[position] = score;
      for (let field = 0; field < FIELD_COUNT; field++) {
        shares[base + field] = bm25fFieldShare(score, shares[base + field]!, pseudoFrequency);
      }
    }
  }
  return { offsets, docs, contributions, active: postingCount > 0, shares };
}

/** Calls `visit` for every record of the given fields, document by document (ascending), fields in the given order. */
function forEachFieldRecord(
  builders: readonly FieldBuilder[],
  fields: readonly number[],
  documentCount: number,
  visit: (doc: number, field: number, term: number, frequency: number, length: number) => void,
): void {
  const starts = new Int32Array(FIELD_COUNT);
  for (let doc = 0; doc < documentCount; doc++) {
    for (const field of fields) {
      const builder = builders[field]!;
      if (doc >= builder.ends.length) continue;
      const end = builder.ends.data[doc]!;
      const length = builder.lengths.data[doc]!;
      for (let index = starts[field]!; index < end; index++) {
        visit(doc, field, builder.terms.data[index]!, builder.frequencies.data[index]!, length);
      }
      starts[field] = end;
    }
  }
}
