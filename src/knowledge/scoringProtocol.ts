/**
 * What the main thread and a scoring worker (`scoringWorker.ts`) exchange when a search is split between them
 * (`splitScoring.ts`): the messages, the shared control words, the result's layout, and the encoding of a
 * threshold in one 32-bit word, so that each side can read the other's K-th score while both run.
 *
 * The control words (an `Int32Array` on a `SharedArrayBuffer`):
 * - {@link DONE}: the sequence number of the last search the worker finished (written last, then notified);
 * - {@link MAIN_THRESHOLD}, {@link WORKER_THRESHOLD}: each side's current threshold ({@link encodeThreshold});
 * - {@link CANCELLED}: a sequence number the main thread gave up waiting for (the worker stops it);
 * - {@link FAILED}: the sequence number of a search the worker could not finish.
 */

import type { ScoringWindows } from "./scoreLists.js";

export const DONE = 0;
export const MAIN_THRESHOLD = 1;
export const WORKER_THRESHOLD = 2;
export const CANCELLED = 3;
export const FAILED = 4;
/** 1 once the worker serves searches: read synchronously, since a busy main thread may not see its message. */
export const READY = 5;
export const CONTROL_WORDS = 6;

/** The mark of a scoring worker's `workerData`. */
export const SCORING_WORKER_MARKER = "lexground.scoringWorker";

/** What a scoring worker starts with. */
export type ScoringWorkerData = {
  marker: typeof SCORING_WORKER_MARKER;
  /** {@link CONTROL_WORDS} words of shared memory. */
  control: SharedArrayBuffer;
  /** The worker module's URL (from the TypeScript sources, the worker registers tsx's loader first). */
  entry: string;
};

/** The main thread's messages, in order on one port. */
export type ScoringMessage =
  | {
      kind: "index";
      id: number;
      /** Per field: the documents and contributions of its postings (shared memory, not copied), or null. */
      fields: ({ docs: Int32Array; contributions: Float64Array } | null)[];
      ranks: Int32Array;
      documentCount: number;
    }
  | { kind: "drop"; id: number }
  | {
      kind: "search";
      sequence: number;
      id: number;
      /** Per list, in the exhaustive order: its field, first and end posting, and upper bound. */
      fields: Int32Array;
      starts: Int32Array;
      ends: Int32Array;
      upper: Float64Array;
      topK: number;
      mask: Uint8Array | null;
      windows: ScoringWindows;
      from: number;
      to: number;
      /** Where the worker writes its result (see {@link resultViews}). */
      result: SharedArrayBuffer;
    };

/** The worker's messages: only that it is ready (results go through shared memory). */
export type ScoringReply = { kind: "ready" };

/** Bytes of a result of at most `capacity` documents over `listCount` lists. */
export function resultBytes(capacity: number, listCount: number): number {
  return 8 + capacity * 12 + capacity * listCount * 4;
}

/**
 * The views of a result buffer: the number of documents, then each document, its exact score, and its position in
 * every list (-1 where absent).
 */
export function resultViews(
  buffer: SharedArrayBuffer,
  capacity: number,
  listCount: number,
): { count: Int32Array; scores: Float64Array; docs: Int32Array; positions: Int32Array } {
  return {
    count: new Int32Array(buffer, 0, 1),
    scores: new Float64Array(buffer, 8, capacity),
    docs: new Int32Array(buffer, 8 + capacity * 8, capacity),
    positions: new Int32Array(buffer, 8 + capacity * 12, capacity * listCount),
  };
}

const scratch = new Float64Array(1);
const words = new Int32Array(scratch.buffer);
/** The word holding a double's sign, exponent and top 20 bits of mantissa (by the platform's byte order). */
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/**
 * A positive threshold as one word: its double's upper 32 bits, which order like the values themselves, so a
 * side's successive thresholds (never decreasing) give non-decreasing words. -1 for none (not positive).
 */
export function encodeThreshold(value: number): number {
  if (!(value > 0) || value === Number.POSITIVE_INFINITY) return -1;
  scratch[0] = value;
  return words[HIGH]!;
}

/**
 * The value of an {@link encodeThreshold} word with its lower 32 bits cleared: at most the encoded threshold
 * (never above it, so still a lower bound of the whole search's K-th score); minus infinity for -1.
 */
export function decodeThreshold(word: number): number {
  if (word < 0) return Number.NEGATIVE_INFINITY;
  words[HIGH] = word;
  words[1 - HIGH] = 0;
  return scratch[0]!;
}
