import { describe, expect, it } from "vitest";
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

  it("refuses writes with its own message", () => {
    const map = RankedIdMap.ofSorted(["a"]);
    expect(() => map.set()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(() => map.delete()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(() => map.clear()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(map.size).toBe(1);
  });
});
