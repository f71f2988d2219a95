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

  it("with the blocks' first ids stored apart (format 6): finds every id and no other, and refuses firsts the ids do not match (property)", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ maxLength: 6 }), { minLength: 1, maxLength: 400 }),
        fc.array(fc.string({ maxLength: 6 }), { maxLength: 20 }),
        fc.nat(),
        (distinct, others, seed) => {
          const sorted = distinct.slice().sort();
          const docs = sorted.map((_, rank) => rank);
          for (let index = docs.length - 1; index > 0; index--) {
            const swap = (seed * (index + 7)) % (index + 1);
            [docs[index], docs[swap]] = [docs[swap]!, docs[index]!];
          }
          const ids = docs.map((rank) => sorted[rank]!);
          const firsts = sorted.filter((_, rank) => rank % 64 === 0);
          const map = RankedIdMap.from(ids, Int32Array.from(docs), undefined, firsts);
          ids.forEach((id, doc) => {
            expect(map.get(id)).toBe(doc);
          });
          for (const other of others) if (!distinct.includes(other)) expect(map.get(other)).toBeUndefined();
          // A stored first that is not the list's: the lookup that checks its block refuses it.
          const wrong = firsts.slice();
          const block = seed % wrong.length;
          wrong[block] = `${wrong[block]}\u0000`;
          const crafted = RankedIdMap.from(ids, Int32Array.from(docs), undefined, wrong);
          expect(() => crafted.get(sorted[block * 64]!)).toThrow(RangeError);
          const tooSmall = firsts.slice();
          tooSmall[block] = "";
          if (block > 0) {
            const craftedSmall = RankedIdMap.from(ids, Int32Array.from(docs), undefined, tooSmall);
            expect(() => craftedSmall.get(sorted[block * 64 - 1]!)).toThrow(RangeError);
          }
        },
      ),
      { seed: propertySeed("RankedIdMap.from firsts"), numRuns: propertyRuns(200) },
    );
    expect(() => RankedIdMap.from(["a", "b"], Int32Array.of(0, 1), undefined, [])).toThrow(
      "does not hold one id per block",
    );
  });

  it("with stored firsts, a first too large for its block is refused by a lookup that would miss an id for it", () => {
    const ids = Array.from({ length: 300 }, (_, index) => `entry-${String(index).padStart(4, "0")}`);
    const firsts = ids.filter((_, rank) => rank % 64 === 0);
    firsts[2] = "entry-0130";
    const map = RankedIdMap.from(
      ids,
      Int32Array.from(ids, (_, doc) => doc),
      undefined,
      firsts,
    );
    expect(() => map.get("entry-0129")).toThrow("not distinct and in the order");
    expect(map.get("entry-0100")).toBe(100);
  });

  it("with stored firsts, a first lookup decodes only the ids of the block it searches", () => {
    const ids = Array.from({ length: 1000 }, (_, index) => `entry-${String(index).padStart(4, "0")}`);
    const decoded = new Set<number>();
    const counted = {
      length: ids.length,
      at(doc: number) {
        decoded.add(doc);
        return ids[doc];
      },
    };
    const firsts = ids.filter((_, rank) => rank % 64 === 0);
    const map = RankedIdMap.from(
      counted,
      Int32Array.from(ids, (_, doc) => doc),
      undefined,
      firsts,
    );
    expect(map.get("entry-0700")).toBe(700);
    // Block 10 (ranks 640-703) and nothing else: its ids' order and its last id against the next stored first.
    expect([...decoded].every((doc) => doc >= 640 && doc < 704)).toBe(true);
    expect(decoded.size).toBe(64);
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

  it("a first lookup among 100,000 ids reads a few hundred of them, and every id is found (super-blocks of 4,096 ranks)", () => {
    const sorted = Array.from({ length: 100_000 }, (_, index) => `entry-${String(index).padStart(6, "0")}`);
    // Dense ids in another order than the ranks: dense id d holds rank (d * 7919) mod 100,000.
    const ranks = Int32Array.from(sorted, (_, doc) => (doc * 7919) % sorted.length);
    const ids = Array.from(ranks, (rank) => sorted[rank]!);
    let reads = 0;
    const counted = {
      length: ids.length,
      at: (doc: number) => {
        reads++;
        return ids[doc];
      },
    };
    const map = RankedIdMap.from(counted, ranks);
    expect(map.get("entry-054321")).toBe(ids.indexOf("entry-054321"));
    // Two reads per comparison: 24 of super-block firsts, 64 of block firsts, 64 in one block, and the binary
    // searches' (every block first, as before super-blocks, would be over 3,000 reads).
    expect(reads).toBeLessThan(400);
    for (let doc = 0; doc < ids.length; doc += 97) expect(map.get(ids[doc]!)).toBe(doc);
    expect(map.get("entry-100000")).toBeUndefined();
    expect(map.get("a")).toBeUndefined();
    expect(map.get("entry-0543210")).toBeUndefined();
  });

  it("checks the blocks' first ids a super-block at a time: a disorder there fails the lookups that search it", () => {
    const sorted = Array.from({ length: 10_000 }, (_, index) => `entry-${String(index).padStart(5, "0")}`);
    const identity = (ids: string[]) => Int32Array.from(ids, (_, doc) => doc);
    // The first ids of two blocks of the second super-block (ranks 4,096 to 8,191) swapped.
    const blockFirsts = sorted.slice();
    [blockFirsts[4160], blockFirsts[4224]] = [blockFirsts[4224]!, blockFirsts[4160]!];
    const map = RankedIdMap.from(blockFirsts, identity(blockFirsts));
    expect(map.get("entry-00010")).toBe(10);
    expect(map.get("entry-09000")).toBe(9000);
    expect(() => map.get("entry-05000")).toThrow(RangeError);
    // A super-block's first id out of order: every lookup refuses.
    const superFirsts = sorted.slice();
    [superFirsts[4096], superFirsts[8192]] = [superFirsts[8192]!, superFirsts[4096]!];
    expect(() => RankedIdMap.from(superFirsts, identity(superFirsts)).get("entry-00010")).toThrow(RangeError);
    // The last block first of a super-block above the next super-block's first id.
    const acrossSupers = sorted.slice();
    [acrossSupers[4032], acrossSupers[4096]] = [acrossSupers[4096]!, acrossSupers[4032]!];
    expect(() => RankedIdMap.from(acrossSupers, identity(acrossSupers)).get("entry-00010")).toThrow(
      RangeError,
    );
  });

  it("refuses writes with its own message", () => {
    const map = RankedIdMap.ofSorted(["a"]);
    expect(() => map.set()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(() => map.delete()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(() => map.clear()).toThrow(new TypeError("the id map of an index is read-only"));
    expect(map.size).toBe(1);
  });
});
