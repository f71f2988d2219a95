import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { sortedIdOrder } from "./idSort.js";
import { compareCodeUnits } from "./ranking.js";

/** The reference: a stable comparison sort of the indices by id, in code-unit order. */
function plainOrder(ids: readonly string[]): number[] {
  return ids.map((_, index) => index).sort((left, right) => compareCodeUnits(ids[left]!, ids[right]!));
}

/** Code units that stress the packing: the end marker's neighbours (U+0000), ASCII, two surrogate halves, U+FFFF. */
const unit = fc.constantFrom(
  "\u0000",
  "\u0001",
  "a",
  "b",
  ".",
  "-",
  "Z",
  "é",
  "\ud83d",
  "\ude00",
  "\uffff",
  "\u7fff",
);
const piece = fc.array(unit, { maxLength: 5 }).map((units) => units.join(""));
/** Ids built from a few shared prefixes (some long, as `domain.path-` ids are) and short random tails. */
const ids = fc
  .record({
    prefixes: fc.array(
      fc.oneof(
        piece,
        piece.map((text) => `${"shared-prefix.".repeat(3)}${text}`),
      ),
      { minLength: 1, maxLength: 4 },
    ),
    // Enough ids that groups outgrow the insertion sort (32) and go through the packed keys.
    tails: fc.array(fc.tuple(fc.nat(), piece, fc.boolean()), { maxLength: 400 }),
  })
  .map(({ prefixes, tails }) =>
    tails.map(([choice, tail, bare]) => (bare ? tail : `${prefixes[choice % prefixes.length]}${tail}`)),
  );

describe("sortedIdOrder", () => {
  it("equals a stable sort by id (shared long prefixes, non-ASCII, U+0000, empty and duplicate ids)", () => {
    const seed = propertySeed("sortedIdOrder");
    fc.assert(
      fc.property(ids, (list) => {
        expect(Array.from(sortedIdOrder(list))).toEqual(plainOrder(list));
      }),
      { seed, numRuns: propertyRuns(150) },
    );
  });

  it("sorts large groups with long shared prefixes and many duplicates", () => {
    const list: string[] = [];
    for (let index = 0; index < 5000; index++) {
      const domain = `domain-${index % 7}.${"x".repeat(index % 40)}`;
      list.push(`${domain}${(index * 7919) % 1000}-${index % 3 === 0 ? "dup" : index.toString(36)}`);
    }
    for (let index = 0; index < 300; index++) list.push(list[(index * 31) % list.length]!);
    expect(Array.from(sortedIdOrder(list))).toEqual(plainOrder(list));
  });

  it("orders an id before the same id followed by U+0000, at every depth of the packing", () => {
    const list: string[] = [];
    for (let index = 0; index < 400; index++) {
      const base = "p".repeat(index % 7);
      list.push(
        index % 2 === 0 ? base : `${base}\u0000`,
        `${base}\u0000\u0000`.slice(0, base.length + (index % 3)),
      );
    }
    expect(Array.from(sortedIdOrder(list))).toEqual(plainOrder(list));
  });

  it("handles no ids, one id and ids already in order", () => {
    expect(Array.from(sortedIdOrder([]))).toEqual([]);
    expect(Array.from(sortedIdOrder(["only"]))).toEqual([0]);
    const ordered = Array.from({ length: 100 }, (_, index) => `id-${String(index).padStart(3, "0")}`);
    expect(Array.from(sortedIdOrder(ordered))).toEqual(ordered.map((_, index) => index));
  });
});
