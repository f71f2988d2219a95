/**
 * Postings: the per-field build buffers filled document by document, the finished compressed-sparse-row postings
 * grouped by term (each posting carrying its BM25 contribution), and their term frequencies, which a full build
 * leaves to be recovered from the contributions when an update first reads them. The finalization from build
 * buffers to postings is in `fieldPostings.ts`.
 */

import { bm25Idf, bm25LengthNormalization, bm25TermScore } from "./bm25.js";

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
