/**
 * What the main thread and a scoring worker (`scoringWorker.ts`) exchange when a search is split between them
 * (`splitScoring.ts`): the messages, the shared control words, the result's layout, and the encoding of a
 * threshold in one 32-bit word, so that each side can read the other's K-th score while both run.
 *
 * The control words (an `Int32Array` on a `SharedArrayBuffer`):
 * - {@link DONE}: the sequence number of the last search the worker finished (written last, then notified);
 * - {@link CANCELLED}: a sequence number the main thread gave up waiting for (the worker stops it);
 * - {@link FAILED}: the sequence number of a search the worker could not finish;
 * - {@link READY}: 1 once the worker serves searches;
 * - {@link NEXT_RANGE}: the index of the next range of the current search that either side may claim.
 */

import type { ScoringWindows } from "./scoreLists.js";
import type { TopDocuments } from "./topDocuments.js";

export const DONE = 0;
export const CANCELLED = 1;
export const FAILED = 2;
/** 1 once the worker serves searches: read synchronously, since a busy main thread may not see its message. */
export const READY = 3;
/** The next range of a split search's document ids to claim (see {@link rangeClaimer}). */
export const NEXT_RANGE = 4;
export const CONTROL_WORDS = 5;

/** A side of a split search on its board (see {@link exchangeBest}). */
export const MAIN_SIDE = 0;
export const WORKER_SIDE = 1;

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
      /** The search's ranges of document ids: range `r` is [`bounds[r]`, `bounds[r + 1]`), claimed in turn. */
      bounds: Int32Array;
      /** The search's board: 2 × K words, each side's best scores (see {@link exchangeBest}). */
      board: SharedArrayBuffer;
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

/** This side's best scores and the other side's, best first (grown as needed; each thread has its own). */
let ownScores = new Float64Array(64);
let otherScores = new Float64Array(64);

/**
 * One side's exchange before a window of a split search: publishes its best scores to `board` (K words a side,
 * word j the side's (j+1)-th best score, {@link encodeThreshold}; -1 until known) and returns the K-th best score
 * of both sides' documents together, a lower bound of the whole search's K-th score (minus infinity when fewer
 * than K are known). Both parts' documents are disjoint, so this is the K-th of K documents really scored, which
 * rises as fast as one search over both parts would (each side's own K-th alone, as floor, rose with half the
 * documents: the slower part cost 0.62-0.68x the whole search, not half). Each side's j-th best score never
 * decreases, so a word read while the other side writes is at most its current value: the floor stays a lower
 * bound whatever the interleaving.
 */
export function exchangeBest(board: Int32Array, side: number, capacity: number, best: TopDocuments): number {
  if (ownScores.length < capacity) {
    ownScores = new Float64Array(capacity);
    otherScores = new Float64Array(capacity);
  }
  const ownBase = side * capacity;
  const otherBase = (1 - side) * capacity;
  const count = best.bestScores(ownScores);
  for (let slot = 0; slot < count; slot++) {
    const word = encodeThreshold(ownScores[slot]!);
    if (word > Atomics.load(board, ownBase + slot)) Atomics.store(board, ownBase + slot, word);
  }
  let otherCount = 0;
  for (let slot = 0; slot < capacity; slot++) {
    const word = Atomics.load(board, otherBase + slot);
    if (word >= 0) otherScores[otherCount++] = decodeThreshold(word);
  }
  if (count + otherCount < capacity) return Number.NEGATIVE_INFINITY;
  // Words read mid-update may be out of order: sort them (best first) before merging.
  const others = otherScores.subarray(0, otherCount);
  others.sort();
  others.reverse();
  let own = 0;
  let other = 0;
  let value = Number.NEGATIVE_INFINITY;
  for (let taken = 0; taken < capacity; taken++)
    value =
      other >= otherCount || (own < count && ownScores[own]! >= others[other]!)
        ? ownScores[own++]!
        : others[other++]!;
  return value;
}

/**
 * Claims the ranges of a split search's document ids (`bounds`, see the search message) for one side, one at a
 * time from the shared counter {@link NEXT_RANGE}, so each side's ranges ascend and none is read twice; `claimed`
 * collects the indices this side took.
 */
export function rangeClaimer(
  control: Int32Array,
  bounds: Int32Array,
  claimed?: number[],
): () => { from: number; to: number } | null {
  return () => {
    const range = Atomics.add(control, NEXT_RANGE, 1);
    if (range + 1 >= bounds.length) return null;
    claimed?.push(range);
    return { from: bounds[range]!, to: bounds[range + 1]! };
  };
}
