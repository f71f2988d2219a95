import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { RankedIdMap } from "./rankedIdMap.js";

describe("RankedIdMap", () => {
  it("reads like a Map of id -> dense id, in dense order, for both constructions", () => {
    const sorted = RankedIdMap.ofSorted(["a", "b", "c"]);
    const ranked = RankedIdMap.from(["c", "a", "b"], Int32Array.of(2, 0, 1));
    expect([...sorted]).toEqual([
      ["a", 0],
      ["b", 1],
      ["c", 2],
    ]);
    expect([...ranked]).toEqual([
      ["c", 0],
      ["a", 1],
      ["b", 2],
    ]);
    expect(ranked.get("b")).toBe(2);
    expect(ranked.has("z")).toBe(false);
    expect([...ranked.keys()]).toEqual(["c", "a", "b"]);
    expect([...ranked.values()]).toEqual([0, 1, 2]);
    const seen: [string, number][] = [];
    ranked.forEach((value, key, map) => {
      expect(map).toBe(ranked);
      seen.push([key, value]);
    });
    expect(seen).toEqual([...ranked.entries()]);
  });

  it("finds every id and no other, whatever the ranks (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ maxLength: 6 }), { maxLength: 300 }),
        fc.array(fc.string({ maxLength: 6 }), { maxLength: 20 }),
        fc.nat(),
        (distinct, others, seed) => {
          const sorted = distinct.slice().sort();
          // Dense ids in a shuffled order, each with its id's rank in code-unit order.
          const docs = sorted.map((_, rank) => rank);
          for (let index = docs.length - 1; index > 0; index--) {
            const swap = (seed * (index + 7)) % (index + 1);
            [docs[index], docs[swap]] = [docs[swap]!, docs[index]!];
          }
          const ids = docs.map((rank) => sorted[rank]!);
          const map = RankedIdMap.from(ids, Int32Array.from(docs));
          ids.forEach((id, doc) => {
            expect(map.get(id)).toBe(doc);
          });
          for (const other of others) if (!distinct.includes(other)) expect(map.get(other)).toBeUndefined();
        },
      ),
      { seed: propertySeed("RankedIdMap.from"), numRuns: propertyRuns(300) },
    );
  });

  it("from() checks the ids' order a block of ranks at a time, when a lookup first searches the block", () => {
    const ids = Array.from({ length: 300 }, (_, index) => `entry-${String(index).padStart(4, "0")}`);
    // Two ids of the fourth block of 64 ranks swapped: out of order there only.
    [ids[200], ids[201]] = [ids[201]!, ids[200]!];
    const corrupt = (message: string) => new TypeError(`corrupt: ${message}`);
    const map = RankedIdMap.from(
      ids,
      Int32Array.from(ids, (_, doc) => doc),
      corrupt,
    );
    expect(map.get("entry-0005")).toBe(5);
    expect(map.get("entry-0290")).toBe(290);
    expect(map.get("entry-1000")).toBeUndefined();
    expect(() => map.get("entry-0199")).toThrow(
      new TypeError("corrupt: lexical.ids are not distinct and in the order of lexical.ranks"),
    );
    // The first id of a block out of order with the previous block's last: found by the next block's check.
    const boundary = ids.slice().sort();
    [boundary[63], boundary[64]] = [boundary[64]!, boundary[63]!];
    const atBoundary = RankedIdMap.from(
      boundary,
      Int32Array.from(boundary, (_, doc) => doc),
    );
    expect(() => atBoundary.get("entry-0010")).toThrow(RangeError);
    expect(atBoundary.get("entry-0100")).toBe(100);
  });

  it("refuses writes with its own message", () => {
    const map = RankedIdMap.ofSorted(["a"]);
    expect(() => map.set()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(() => map.delete()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(() => map.clear()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(map.size).toBe(1);
  });
});
