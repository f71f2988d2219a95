/**
 * Finalizing a field: its build buffers into postings grouped by term (one thread, or the main thread and a build
 * worker each scattering a range of terms). BM25F's merged postings are `bm25fPostings.ts`.
 */

import { bm25Idf, bm25LengthNormalization, bm25TermScore } from "./bm25.js";
import {
  type FieldBuilder,
  type FinishedField,
  inactivePostings,
  LARGE_FREQUENCY,
  recoverable,
} from "./postings.js";

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
  scratch: Int32Array | null = null,
): Generator<void, void, void> {
  const { terms, frequencies, ends, lengths, documentCount, weightedIdf, scored } = input;
  const { docs, contributions } = out;
  const stored = input.keepFrequencies ? out.frequencies : null;
  const termCount = input.offsets.length - 1;
  const whole = fromTerm === 0 && toTerm >= termCount;
  // Each term's next position (a caller's scratch of at least `termCount` values, or a copy of the offsets).
  let cursor: Int32Array;
  if (scratch && scratch.length >= termCount) {
    cursor = scratch;
    cursor.set(input.offsets.subarray(0, termCount));
  } else cursor = input.offsets.slice(0, termCount);
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

/**
 * The field's finished arrays in shared memory, which a build worker writes its range of postings into directly
 * (see {@link scatterRange}).
 */
export type ScatterTarget = { docs: Int32Array; contributions: Float64Array };

/**
 * The postings of terms [`fromTerm`, `termCount`) scattered in one go (what a build worker runs): into `target`
 * at their final positions when given (the range then comes back empty), else into arrays of their own.
 */
export function scatterRange(
  input: ScatterInput,
  fromTerm: number,
  target: ScatterTarget | null = null,
): ScatteredRange {
  const termCount = input.offsets.length - 1;
  const base = target ? 0 : input.offsets[fromTerm]!;
  const count = target ? 0 : input.offsets[termCount]! - base;
  const out: ScatteredRange = {
    docs: target ? target.docs : new Int32Array(count),
    contributions: target ? target.contributions : new Float64Array(input.scored ? count : 0),
    frequencies: input.keepFrequencies ? new Uint8Array(count) : null,
    large: null,
  };
  if (target && input.keepFrequencies)
    throw new RangeError("scatterRange: kept frequencies need their own range");
  const steps = scatterTerms(input, fromTerm, termCount, out, base);
  while (!steps.next().done) {
    // Runs to completion.
  }
  return target
    ? { docs: new Int32Array(0), contributions: new Float64Array(0), frequencies: null, large: null }
    : out;
}

/** Whether a worker can write into these arrays (shared memory, or nothing to write). */
function isShared(array: Int32Array | Float64Array): boolean {
  return (
    array.length === 0 ||
    (typeof SharedArrayBuffer === "function" && array.buffer instanceof SharedArrayBuffer)
  );
}

/**
 * A thread that can scatter a range of terms while the caller scatters the rest (a parallel build's worker).
 * `start` returns a request, or null when no worker can take it; `result` waits up to `milliseconds` and returns
 * the range, undefined while it is pending, or null when the worker failed (the caller then scatters it itself).
 */
export type ScatterHelper = {
  /** Fields with fewer postings are not split ({@link PARALLEL_SCATTER_MIN_POSTINGS}; tests split every field). */
  minimumPostings: number;
  /** `target`: the finished arrays when the worker can write into them directly (see {@link scatterRange}). */
  start(input: ScatterInput, fromTerm: number, target: ScatterTarget | null): number | null;
  result(request: number, milliseconds: number): ScatteredRange | null | undefined;
};

/**
 * The arrays a field's finished postings are written into, allocated for every field at once when finalizing
 * starts (see `LexicalIndexBuilder.finalizeStep`): each large allocation of external memory can start a full
 * garbage collection of the host's heap, so one burst costs one where field-by-field allocations cost several.
 * `cursor` is scratch shared by the fields (each term's next position while scattering).
 */
export type FieldArrays = {
  offsets: Int32Array;
  docs: Int32Array;
  contributions: Float64Array;
  weightedIdf: Float64Array;
  cursor: Int32Array;
};

/**
 * A zeroed array of `length` values of `Type`, in shared memory where the runtime has it: a search over many
 * postings hands half of its documents to a scoring thread that reads the same postings (`splitScoring.ts`).
 */
function sharedWhereAvailable<T>(
  Type: { new (length: number): T; new (buffer: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number },
  length: number,
): T {
  return typeof SharedArrayBuffer === "function" && length > 0
    ? new Type(new SharedArrayBuffer(length * Type.BYTES_PER_ELEMENT))
    : new Type(length);
}

/**
 * The {@link FieldArrays} of a field of `postingCount` postings over `termCount` terms (`scored`: contributions).
 * The documents and contributions are in shared memory where available (see `sharedWhereAvailable`).
 */
export function allocateFieldArrays(
  postingCount: number,
  termCount: number,
  scored: boolean,
  cursor: Int32Array,
): FieldArrays {
  return {
    offsets: new Int32Array(termCount + 1),
    docs: sharedWhereAvailable(Int32Array, postingCount),
    contributions: sharedWhereAvailable(Float64Array, scored ? postingCount : 0),
    weightedIdf: new Float64Array(scored ? termCount : 0),
    cursor,
  };
}

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
  arrays: FieldArrays | null = null,
): Generator<void, FinishedField, void> {
  const postingCount = builder.terms.length;
  const terms = builder.terms.data;
  const frequencies = builder.frequencies.data;
  if (
    arrays &&
    (arrays.offsets.length !== termCount + 1 ||
      arrays.docs.length !== postingCount ||
      arrays.contributions.length !== (scored ? postingCount : 0) ||
      arrays.weightedIdf.length !== (scored ? termCount : 0))
  )
    throw new RangeError("fieldPostings: the preallocated arrays do not fit the field");
  const offsets = arrays ? arrays.offsets : new Int32Array(termCount + 1);
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
  const weightedIdf = arrays ? arrays.weightedIdf : new Float64Array(scored ? termCount : 0);
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
    docs: arrays ? arrays.docs : new Int32Array(postingCount),
    contributions: arrays ? arrays.contributions : new Float64Array(scored ? postingCount : 0),
    frequencies: recover ? null : new Uint8Array(postingCount),
    large: null,
  };
  const cursor = arrays ? arrays.cursor : null;
  let split = termCount;
  let request: number | null = null;
  let target: ScatterTarget | null = null;
  if (helper && postingCount >= helper.minimumPostings && postingCount > 0) {
    split = 0;
    while (split < termCount && offsets[split + 1]! <= postingCount * OWN_SCATTER_SHARE) split++;
    // Shared finished arrays (and no frequencies to keep): the worker writes its range in place, with no copy
    // (at a million entries, half the body's postings: ~1 GB the worker allocated and this thread copied).
    const inPlace = out.frequencies === null && isShared(out.docs) && isShared(out.contributions);
    target = inPlace ? { docs: out.docs, contributions: out.contributions } : null;
    request = split < termCount ? helper.start(input, split, target) : null;
    if (request === null) split = termCount;
  }
  yield* scatterTerms(input, 0, split, out, 0, cursor);
  if (helper && request !== null) {
    let range = helper.result(request, SCATTER_WAIT_MILLISECONDS);
    while (range === undefined) {
      yield;
      range = helper.result(request, SCATTER_WAIT_MILLISECONDS);
    }
    if (range === null) yield* scatterTerms(input, split, termCount, out, 0, cursor);
    else if (!target) {
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
