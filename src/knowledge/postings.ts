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
  data: Int32Array = new Int32Array(1024);
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

/**
 * Term-frequency postings of one field, grouped by term: what scoring at query time and a compaction read.
 * Frequencies are bytes; a frequency of {@link LARGE_FREQUENCY} or more is stored as that marker, with the true
 * value in `largeFrequencies` by posting position (rare: a term repeated 255 times in one field). Read them with
 * {@link termFrequencies} or {@link frequencyAt}: a full build does not keep them (they are only needed once the
 * index is changed, and are a byte per posting), they are recovered exactly from the postings' contributions,
 * term by term, the first time they are read (see {@link FrequencyRecovery}).
 */
export type FrequencyPostings = {
  /** Term id → first posting; `offsets[termId + 1]` ends it. Empty when the field is never scored. */
  offsets: Int32Array;
  docs: Int32Array;
  /** Null until first read when {@link recovery} is set (then only the recovered terms' slices are filled). */
  frequencies: Uint8Array | null;
  largeFrequencies: Map<number, number> | null;
  /** How to recover the frequencies from the contributions, or null when `frequencies` is complete. */
  recovery: FrequencyRecovery | null;
};

/**
 * What recovers a field's term frequencies from its contributions. A contribution is
 * `weightedIdf · (tf · (k1 + 1) / (tf + lengthNormalization))`, strictly increasing in `tf` when `k1 > 0`, so the
 * one integer `tf` that gives back the stored contribution, bit for bit, is the counted frequency (the build keeps
 * the frequencies itself when consecutive frequencies could round to the same contribution: see
 * {@link recoverable}).
 */
export type FrequencyRecovery = {
  contributions: Float64Array;
  /** Per document: the field's length in tokens. */
  lengths: Int32Array;
  weight: number;
  averageLength: number;
  k1: number;
  b: number;
  documentCount: number;
  /** Per term: 1 once its frequencies are recovered. */
  recovered: Uint8Array;
};

/** Finished per-field postings: the term-frequency postings plus each posting's precomputed contribution. */
export type FieldPostings = {
  /** Term id → first posting; `offsets[termId + 1]` ends it. Empty for skipped fields. */
  offsets: Int32Array;
  docs: Int32Array;
  contributions: Float64Array;
  active: boolean;
};

/** The byte that marks a term frequency stored in `largeFrequencies`. */
export const LARGE_FREQUENCY = 255;

/**
 * The term frequencies of `postings` by posting position, with at least the postings of `term` filled (recovered
 * from the contributions on first read; see {@link FrequencyPostings}). Read a value with {@link frequencyAt}.
 */
export function termFrequencies(postings: FrequencyPostings, term: number): Uint8Array {
  const recovery = postings.recovery;
  if (recovery === null || recovery.recovered[term] === 1) return postings.frequencies!;
  return recoverTerm(postings, recovery, term);
}

/** The term frequency of the posting at `position`, which belongs to `term`. */
export function frequencyAt(postings: FrequencyPostings, term: number, position: number): number {
  const frequency = termFrequencies(postings, term)[position]!;
  return frequency === LARGE_FREQUENCY ? postings.largeFrequencies!.get(position)! : frequency;
}

/** Fills the frequencies of `term`'s postings from their contributions; see {@link FrequencyRecovery}. */
function recoverTerm(postings: FrequencyPostings, recovery: FrequencyRecovery, term: number): Uint8Array {
  postings.frequencies ??= new Uint8Array(postings.docs.length);
  const frequencies = postings.frequencies;
  if (term + 1 >= postings.offsets.length) return frequencies;
  const { contributions, lengths, weight, averageLength, k1, b } = recovery;
  const start = postings.offsets[term]!;
  const end = postings.offsets[term + 1]!;
  // The same expressions as the build's (fieldPostings), so the recomputed contributions are the stored ones.
  const weightedIdf = weight * bm25Idf(recovery.documentCount, end - start);
  for (let position = start; position < end; position++) {
    const length = lengths[postings.docs[position]!]!;
    const normalization = bm25LengthNormalization(k1, b, length, averageLength);
    const frequency = recoveredFrequency(contributions[position]!, weightedIdf, k1, normalization, length);
    if (frequency >= LARGE_FREQUENCY) {
      frequencies[position] = LARGE_FREQUENCY;
      postings.largeFrequencies ??= new Map();
      postings.largeFrequencies.set(position, frequency);
    } else frequencies[position] = frequency;
  }
  recovery.recovered[term] = 1;
  return frequencies;
}

/**
 * The integer `tf` in [1, `length`] for which {@link bm25TermScore} gives back `contribution` exactly: the
 * closed-form inverse, rounded, then checked (a binary search over the range when the guess misses). Throws when
 * no frequency gives it back, which a contribution computed by the build with these inputs cannot do.
 */
function recoveredFrequency(
  contribution: number,
  weightedIdf: number,
  k1: number,
  normalization: number,
  length: number,
): number {
  const saturated = contribution / weightedIdf;
  const guess = Math.round((saturated * normalization) / (k1 + 1 - saturated));
  if (guess >= 1 && guess <= length) {
    if (bm25TermScore(weightedIdf, guess, k1, normalization) === contribution) return guess;
    for (const near of [guess - 1, guess + 1]) {
      if (near >= 1 && near <= length && bm25TermScore(weightedIdf, near, k1, normalization) === contribution)
        return near;
    }
  }
  let low = 1;
  let high = length;
  while (low <= high) {
    const middle = low + ((high - low) >> 1);
    const score = bm25TermScore(weightedIdf, middle, k1, normalization);
    if (score === contribution) return middle;
    if (score < contribution) low = middle + 1;
    else high = middle - 1;
  }
  throw new Error("lexical index: a term frequency cannot be recovered from its contribution");
}

/**
 * Whether every term frequency of a field can be recovered from its contributions (see {@link FrequencyRecovery}):
 * `k1 > 0`, and consecutive frequencies give contributions far apart next to rounding. For frequencies `t` and
 * `t + 1` with length normalization `n`, the saturated parts differ by the relative amount `n / (t · (t + 1 + n))`,
 * smallest at the largest frequency and the smallest normalization (the shortest document); it must exceed
 * 2^-36 (rounding moves a result by 2^-52), and the smallest contribution must be a normal number.
 */
export function recoverable(
  scored: { weight: number; averageLength: number; k1: number; b: number },
  documentCount: number,
  largestFrequency: number,
  shortestLength: number,
  longestLength: number,
): boolean {
  const { weight, averageLength, k1, b } = scored;
  if (!(k1 > 0) || !(weight > 0) || largestFrequency < 1) return false;
  const normalization = bm25LengthNormalization(k1, b, shortestLength, averageLength);
  const gap = normalization / (largestFrequency * (largestFrequency + 1 + normalization));
  const smallest = bm25TermScore(
    weight * bm25Idf(documentCount, documentCount),
    1,
    k1,
    bm25LengthNormalization(k1, b, longestLength, averageLength),
  );
  return gap > 2 ** -36 && smallest > 2 ** -900 && Number.isFinite(smallest);
}

/** Term-frequency postings of a field that is never scored. */
export function emptyFrequencyPostings(): FrequencyPostings {
  return {
    offsets: new Int32Array(0),
    docs: new Int32Array(0),
    frequencies: new Uint8Array(0),
    largeFrequencies: null,
    recovery: null,
  };
}

/** The postings of a field that is not scored (weight ≤ 0, or empty in every document). */
export function inactivePostings(): FieldPostings {
  return {
    offsets: new Int32Array(0),
    docs: new Int32Array(0),
    contributions: new Float64Array(0),
    active: false,
  };
}

/** Finished postings of one field: the term-frequency postings and, when scored, the contributions. */
export type FinishedField = { postings: FieldPostings; frequencies: FrequencyPostings };

/** Postings finalized between two yields of an incremental build. */
const POSTINGS_PER_STEP = 1 << 16;

/**
 * The finished postings of one field: grouped by term, with each posting's term frequency and, when `scored` is
 * given (the field is scored with precomputed contributions), its BM25 contribution; `lengths` are the field's
 * lengths by document (kept by the term-frequency postings when their frequencies are left to recovery). A
 * function of its own (not a loop inside finalize) so the engine optimizes it with full type information; a
 * generator so an incremental build can yield inside a large field.
 *
 * One counting pass gives each term's document frequency and slice; then the postings, read in document order,
 * are scattered into their term's slice with the contribution computed on the way, so each slice stays sorted by
 * document. The weight × IDF of a term and the length normalization of a document are computed once each, then
 * combined by {@link bm25TermScore}, so contributions are bit-identical to scoring each posting on its own (which
 * is what scoring at query time does, see `liveScoring.ts`).
 */
export function* fieldPostings(
  builder: FieldBuilder,
  lengths: Int32Array,
  termCount: number,
  documentCount: number,
  scored: { weight: number; averageLength: number; k1: number; b: number } | null,
): Generator<void, FinishedField, void> {
  const postingCount = builder.terms.length;
  const terms = builder.terms.data;
  const frequencies = builder.frequencies.data;
  const ends = builder.ends.data;
  const offsets = new Int32Array(termCount + 1);
  let largestFrequency = 0;
  for (let from = 0; from < postingCount; from += POSTINGS_PER_STEP) {
    const to = Math.min(postingCount, from + POSTINGS_PER_STEP);
    for (let index = from; index < to; index++) {
      offsets[terms[index]! + 1]!++;
      if (frequencies[index]! > largestFrequency) largestFrequency = frequencies[index]!;
    }
    yield;
  }
  let shortestLength = Number.POSITIVE_INFINITY;
  let longestLength = 0;
  for (let doc = 0; doc < documentCount; doc++) {
    const length = lengths[doc]!;
    if (length > 0 && length < shortestLength) shortestLength = length;
    if (length > longestLength) longestLength = length;
  }
  // Frequencies that the contributions give back exactly are not kept (a byte per posting, read only by updates).
  const recover =
    scored !== null && recoverable(scored, documentCount, largestFrequency, shortestLength, longestLength);
  const weightedIdf = new Float64Array(scored ? termCount : 0);
  for (let term = 0; term < termCount; term++) {
    const documentFrequency = offsets[term + 1]!;
    if (scored && documentFrequency > 0)
      weightedIdf[term] = scored.weight * bm25Idf(documentCount, documentFrequency);
    offsets[term + 1]! += offsets[term]!;
  }
  yield;
  const cursor = offsets.slice(0, termCount);
  const docs = new Int32Array(postingCount);
  const storedFrequencies = new Uint8Array(recover ? 0 : postingCount);
  let largeFrequencies: Map<number, number> | null = null;
  const contributions = new Float64Array(scored ? postingCount : 0);
  let begin = 0;
  let sinceYield = 0;
  for (let doc = 0; doc < documentCount; doc++) {
    const end = ends[doc]!;
    if (end === begin) continue;
    const lengthNormalization = scored
      ? bm25LengthNormalization(scored.k1, scored.b, lengths[doc]!, scored.averageLength)
      : 0;
    for (let index = begin; index < end; index++) {
      const term = terms[index]!;
      const frequency = frequencies[index]!;
      const position = cursor[term]!++;
      docs[position] = doc;
      if (recover) {
        // Recovered on first read.
      } else if (frequency >= LARGE_FREQUENCY) {
        storedFrequencies[position] = LARGE_FREQUENCY;
        largeFrequencies ??= new Map();
        largeFrequencies.set(position, frequency);
      } else storedFrequencies[position] = frequency;
      if (scored)
        contributions[position] = bm25TermScore(
          weightedIdf[term]!,
          frequency,
          scored.k1,
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
  return {
    postings: scored ? { offsets, docs, contributions, active: true } : inactivePostings(),
    frequencies: {
      offsets,
      docs,
      frequencies: recover ? null : storedFrequencies,
      largeFrequencies,
      recovery: recover
        ? {
            contributions,
            lengths,
            weight: scored.weight,
            averageLength: scored.averageLength,
            k1: scored.k1,
            b: scored.b,
            documentCount,
            recovered: new Uint8Array(termCount),
          }
        : null,
    },
  };
}

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
        shares[base + field] = pseudoFrequency > 0 ? (score * shares[base + field]!) / pseudoFrequency : 0;
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
