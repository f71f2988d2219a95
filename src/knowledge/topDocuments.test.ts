import { describe, expect, it } from "vitest";
import { TopDocuments } from "./topDocuments.js";

const ULP = 2 ** -52;

describe("TopDocuments", () => {
  it("keeps the best K by score, ties by rank, without asking for exact scores when every score is exact", () => {
    const ranks = Int32Array.from([3, 0, 2, 1, 4]);
    const top = new TopDocuments(3, ranks);
    for (const [score, doc] of [
      [1, 0],
      [2, 1],
      [2, 2],
      [0.5, 3],
      [2, 4],
    ] as const)
      top.offer(score, doc);
    expect(top.threshold()).toBe(2);
    const exactScore = () => {
      throw new Error("not expected");
    };
    // Doc 1 (rank 0) and doc 2 (rank 2) before doc 4 (rank 4) at equal scores.
    expect(top.ranked(exactScore)).toEqual([
      { doc: 1, score: 2 },
      { doc: 2, score: 2 },
      { doc: 4, score: 2 },
    ]);
  });

  it("decides on exact scores a document pushed out by an approximate score that was a rounding too high", () => {
    const ranks = Int32Array.from([0, 1, 2]);
    const exact = new Map([
      [0, 1],
      [1, 1 - ULP],
    ]);
    const top = new TopDocuments(1, ranks);
    top.offer(1, 0);
    // Doc 1's approximate sum is above doc 0's score; its exact one is below: doc 0 must win.
    top.offer(1 + 2 * ULP, 1, false);
    expect(top.threshold()).toBe(1 + 2 * ULP);
    expect(top.ranked((doc) => exact.get(doc)!)).toEqual([{ doc: 0, score: 1 }]);
  });

  it("decides on exact scores a document turned away by an approximate score held, ties by rank", () => {
    const ranks = Int32Array.from([2, 0, 1]);
    const top = new TopDocuments(1, ranks);
    // Doc 0 is held with an approximate score a rounding above its exact 1; doc 1 (rank 0) scores exactly 1 and
    // is turned away, but wins the tie on exact scores.
    top.offer(1 + ULP, 0, false);
    top.offer(1, 1);
    // Far below the threshold: not kept aside.
    top.offer(0.5, 2, false);
    const asked: number[] = [];
    expect(
      top.ranked((doc) => {
        asked.push(doc);
        return 1;
      }),
    ).toEqual([{ doc: 1, score: 1 }]);
    expect(asked).toEqual([0]);
  });

  it("resolves every held document when asked to (for the positions the caller records)", () => {
    const top = new TopDocuments(2, Int32Array.from([0, 1, 2]));
    top.offer(3, 0);
    top.offer(2, 1, false);
    top.offer(1, 2);
    const asked: number[] = [];
    const ranked = top.ranked((doc) => {
      asked.push(doc);
      return doc === 0 ? 3 : 2;
    }, true);
    expect(ranked).toEqual([
      { doc: 0, score: 3 },
      { doc: 1, score: 2 },
    ]);
    expect(asked.sort()).toEqual([0, 1]);
  });
});
