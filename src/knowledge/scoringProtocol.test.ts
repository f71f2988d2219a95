/**
 * The split search's exchange (`exchangeBest`): each side's floor is the K-th best score of both sides' documents
 * together, read from the board whatever the other side has written so far, and never above it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { decodeThreshold, encodeThreshold, exchangeBest, MAIN_SIDE, WORKER_SIDE } from "./scoringProtocol.js";
import { TopDocuments } from "./topDocuments.js";

function sideWith(capacity: number, scores: readonly number[], firstDoc: number): TopDocuments {
  const top = new TopDocuments(
    capacity,
    Int32Array.from({ length: firstDoc + scores.length }, (_, doc) => doc),
  );
  scores.forEach((score, index) => {
    top.offer(score, firstDoc + index);
  });
  return top;
}

describe("exchangeBest", () => {
  it("floors each side at the K-th score of both sides' documents, once K are known", () => {
    const board = new Int32Array(6).fill(-1);
    const main = sideWith(3, [10, 6, 8], 0);
    const worker = sideWith(3, [5, 9, 7], 3);
    // The worker has published nothing yet: three documents known, the main thread's own.
    expect(exchangeBest(board, MAIN_SIDE, 3, main)).toBe(6);
    // The worker reads the main thread's 10, 8, 6 beside its 9, 7, 5: the third best of all is 8.
    expect(exchangeBest(board, WORKER_SIDE, 3, worker)).toBe(8);
    expect(exchangeBest(board, MAIN_SIDE, 3, main)).toBe(8);
    const few = new Int32Array(6).fill(-1);
    expect(exchangeBest(few, MAIN_SIDE, 3, sideWith(3, [4], 0))).toBe(Number.NEGATIVE_INFINITY);
  });

  it("reads words written out of order (mid-update) as the scores they are", () => {
    const board = new Int32Array(6).fill(-1);
    board.set([encodeThreshold(5), encodeThreshold(9), -1], 3);
    expect(exchangeBest(board, MAIN_SIDE, 3, sideWith(3, [7], 0))).toBe(5);
  });

  it("is the K-th score of both sides whatever part of the other's scores is published (property)", () => {
    const seed = propertySeed("exchange-best");
    const scores = fc.array(
      fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.double({ min: 1e-6, max: 1e6, noNaN: true })),
      {
        maxLength: 12,
      },
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), scores, scores, fc.nat(), (capacity, mine, theirs, cut) => {
        const board = new Int32Array(2 * capacity).fill(-1);
        const other = sideWith(capacity, theirs, mine.length);
        exchangeBest(board, WORKER_SIDE, capacity, other);
        // The other side published its best; then some of those words are lost (not yet written).
        const published = board.slice(capacity);
        const kept = cut % (capacity + 1);
        for (let slot = kept; slot < capacity; slot++) board[capacity + slot] = -1;
        const own = sideWith(capacity, mine, 0);
        const floor = exchangeBest(board, MAIN_SIDE, capacity, own);
        const ownBest = [...mine].sort((left, right) => right - left).slice(0, capacity);
        const theirBest = [...published.subarray(0, kept)].filter((word) => word >= 0).map(decodeThreshold);
        const union = [...ownBest, ...theirBest].sort((left, right) => right - left);
        expect(floor).toBe(union.length >= capacity ? union[capacity - 1]! : Number.NEGATIVE_INFINITY);
        // Never above the K-th of the real scores of both sides.
        const real = [...ownBest, ...[...theirs].sort((left, right) => right - left).slice(0, capacity)].sort(
          (left, right) => right - left,
        );
        if (real.length >= capacity) expect(floor).toBeLessThanOrEqual(real[capacity - 1]!);
      }),
      { seed, numRuns: propertyRuns(300) },
    );
  });
});
