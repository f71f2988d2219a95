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

/** A growable Int32 buffer used only while building (in shared memory when a build worker reads it too). */
export class IntBuffer {
  data: Int32Array;
  length = 0;
  private readonly shared: boolean;

  constructor(shared = false) {
    this.shared = shared;
    this.data = this.allocate(1024);
  }

  push(value: number): void {
    if (this.length === this.data.length) {
      const next = this.allocate(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = value;
  }

  /** Grows the capacity to at least `capacity` values in one step. */
  reserve(capacity: number): void {
    if (capacity <= this.data.length) return;
    const next = this.allocate(capacity);
    next.set(this.data.subarray(0, this.length));
    this.data = next;
  }

  private allocate(capacity: number): Int32Array {
    return this.shared
      ? new Int32Array(new SharedArrayBuffer(capacity * Int32Array.BYTES_PER_ELEMENT))
      : new Int32Array(capacity);
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

/**
 * An empty field builder; `shared`: the buffers a finalize step hands to a build worker (terms, frequencies,
 * ends) are in shared memory.
 */
export function createFieldBuilder(shared = false): FieldBuilder {
  return {
    terms: new IntBuffer(shared),
    frequencies: new IntBuffer(shared),
    ends: new IntBuffer(shared),
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
/** Fields with fewer postings are finalized by the calling thread alone (a worker's round trip costs more). */
export const PARALLEL_SCATTER_MIN_POSTINGS = 1 << 18;
/** Share of a field's postings the calling thread scatters itself when a worker takes the rest. */
const OWN_SCATTER_SHARE = 0.5;
/** Milliseconds a finalize step waits for a worker before it yields (an incremental build checks its deadline). */
const SCATTER_WAIT_MILLISECONDS = 50;

/**
 * What scattering a field's postings into their terms' slices reads: the build buffers, the slices (`offsets`,
 * from the counting pass), each term's weight × IDF and each document's length, all typed arrays, so that a build
 * worker can scatter a range of terms (the build buffers are then shared memory: no copy).
 */
export type ScatterInput = {
  terms: Int32Array;
  frequencies: Int32Array;
  ends: Int32Array;
  lengths: Int32Array;
  documentCount: number;
  /** Term id → first posting of the finished field (`termCount + 1` values). */
  offsets: Int32Array;
  /** Per term: field weight × IDF (empty when the field is not scored). */
  weightedIdf: Float64Array;
  /** BM25 parameters of a scored field, or null (term frequencies only). */
  scored: { k1: number; b: number; averageLength: number } | null;
  /** Whether the frequencies are stored (false: recovered from the contributions on first read). */
  keepFrequencies: boolean;
};

/**
 * The scattered postings of a range of terms, from the posting at `offsets[fromTerm]` on: documents, contributions
 * (empty when not scored), frequencies (null when not kept), and the frequencies of {@link LARGE_FREQUENCY} or
 * more by position (relative to the range's first posting).
 */
export type ScatteredRange = {
  docs: Int32Array;
  contributions: Float64Array;
  frequencies: Uint8Array | null;
  large: Map<number, number> | null;
};

/**
 * Scatters the postings of the terms in [`fromTerm`, `toTerm`) into `out` (whose first posting is the field's
 * posting `base`), reading the build buffers in document order so each slice stays sorted by document. The
 * weight × IDF of a term and the length normalization of a document are computed once each, then combined by
 * {@link bm25TermScore}, so contributions are bit-identical to scoring each posting on its own (what scoring at
 * query time does, see `liveScoring.ts`). A generator, so an incremental build can yield inside a large field.
 */
export function* scatterTerms(
  input: ScatterInput,
  fromTerm: number,
  toTerm: number,
  out: ScatteredRange,
  base: number,
): Generator<void, void, void> {
  const { terms, frequencies, ends, lengths, documentCount, weightedIdf, scored } = input;
  const { docs, contributions } = out;
  const stored = input.keepFrequencies ? out.frequencies : null;
  const termCount = input.offsets.length - 1;
  const whole = fromTerm === 0 && toTerm >= termCount;
  const cursor = input.offsets.slice(0, termCount);
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
      if (!whole && (term < fromTerm || term >= toTerm)) continue;
      const frequency = frequencies[index]!;
      const position = cursor[term]!++ - base;
      docs[position] = doc;
      if (stored) {
        if (frequency >= LARGE_FREQUENCY) {
          stored[position] = LARGE_FREQUENCY;
          out.large ??= new Map();
          out.large.set(position, frequency);
        } else stored[position] = frequency;
      }
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
}

/** The postings of terms [`fromTerm`, `termCount`) scattered in one go (what a build worker runs). */
export function scatterRange(input: ScatterInput, fromTerm: number): ScatteredRange {
  const termCount = input.offsets.length - 1;
  const base = input.offsets[fromTerm]!;
  const count = input.offsets[termCount]! - base;
  const out: ScatteredRange = {
    docs: new Int32Array(count),
    contributions: new Float64Array(input.scored ? count : 0),
    frequencies: input.keepFrequencies ? new Uint8Array(count) : null,
    large: null,
  };
  const steps = scatterTerms(input, fromTerm, termCount, out, base);
  while (!steps.next().done) {
    // Runs to completion.
  }
  return out;
}

/**
 * A thread that can scatter a range of terms while the caller scatters the rest (a parallel build's worker).
 * `start` returns a request, or null when no worker can take it; `result` waits up to `milliseconds` and returns
 * the range, undefined while it is pending, or null when the worker failed (the caller then scatters it itself).
 */
export type ScatterHelper = {
  /** Fields with fewer postings are not split ({@link PARALLEL_SCATTER_MIN_POSTINGS}; tests split every field). */
  minimumPostings: number;
  start(input: ScatterInput, fromTerm: number): number | null;
  result(request: number, milliseconds: number): ScatteredRange | null | undefined;
};

/**
 * The finished postings of one field: grouped by term, with each posting's term frequency and, when `scored` is
 * given (the field is scored with precomputed contributions), its BM25 contribution; `lengths` are the field's
 * lengths by document (kept by the term-frequency postings when their frequencies are left to recovery). A
 * generator so an incremental build can yield inside a large field.
 *
 * One counting pass gives each term's document frequency and slice; then the postings are scattered into their
 * term's slice ({@link scatterTerms}). With a `helper` (a parallel build), a large field's terms are cut in two
 * ranges of about equal postings: the helper scatters the upper one while this thread scatters the lower one, then
 * copies the helper's range in place; the arrays are the same as one thread's, bit for bit.
 */
export function* fieldPostings(
  builder: FieldBuilder,
  lengths: Int32Array,
  termCount: number,
  documentCount: number,
  scored: { weight: number; averageLength: number; k1: number; b: number } | null,
  helper: ScatterHelper | null = null,
): Generator<void, FinishedField, void> {
  const postingCount = builder.terms.length;
  const terms = builder.terms.data;
  const frequencies = builder.frequencies.data;
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
  const input: ScatterInput = {
    terms,
    frequencies,
    ends: builder.ends.data,
    lengths,
    documentCount,
    offsets,
    weightedIdf,
    scored: scored ? { k1: scored.k1, b: scored.b, averageLength: scored.averageLength } : null,
    keepFrequencies: !recover,
  };
  const out: ScatteredRange = {
    docs: new Int32Array(postingCount),
    contributions: new Float64Array(scored ? postingCount : 0),
    frequencies: recover ? null : new Uint8Array(postingCount),
    large: null,
  };
  let split = termCount;
  let request: number | null = null;
  if (helper && postingCount >= helper.minimumPostings && postingCount > 0) {
    split = 0;
    while (split < termCount && offsets[split + 1]! <= postingCount * OWN_SCATTER_SHARE) split++;
    request = split < termCount ? helper.start(input, split) : null;
    if (request === null) split = termCount;
  }
  yield* scatterTerms(input, 0, split, out, 0);
  if (helper && request !== null) {
    let range = helper.result(request, SCATTER_WAIT_MILLISECONDS);
    while (range === undefined) {
      yield;
      range = helper.result(request, SCATTER_WAIT_MILLISECONDS);
    }
    if (range === null) yield* scatterTerms(input, split, termCount, out, 0);
    else {
      const base = offsets[split]!;
      out.docs.set(range.docs, base);
      if (scored) out.contributions.set(range.contributions, base);
      if (out.frequencies && range.frequencies) out.frequencies.set(range.frequencies, base);
      if (range.large) {
        out.large ??= new Map();
        for (const [position, frequency] of range.large) out.large.set(base + position, frequency);
      }
    }
  }
  const { docs, contributions } = out;
  return {
    postings: scored ? { offsets, docs, contributions, active: true } : inactivePostings(),
    frequencies: {
      offsets,
      docs,
      frequencies: out.frequencies,
      largeFrequencies: out.large,
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
