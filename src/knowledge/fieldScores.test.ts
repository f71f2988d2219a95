/**
 * The posting searches the scorers use: {@link findPostings} (the exact sums' searches run side by side) against
 * {@link findPosting} (one search at a time), on sorted lists of any length, with targets present, absent, repeated
 * and out of order, over any part of the list.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { findPosting, findPostings } from "./fieldScores.js";

describe("findPostings", () => {
  it("finds each target where findPosting does, -1 where absent, in any part of a list (property)", () => {
    const seed = propertySeed("find-postings");
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { maxLength: 300 }),
        fc.array(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { maxLength: 80 }),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 1, max: 4 }),
        (values, extra, startSeed, endSeed, stride) => {
          const docs = Int32Array.from(values.sort((left, right) => left - right));
          const start = docs.length === 0 ? 0 : startSeed % (docs.length + 1);
          const end = start + (endSeed % (docs.length - start + 1));
          // Targets: documents of the list (inside and outside the part), their neighbours, and arbitrary ids.
          const targets = Int32Array.from(
            [
              ...values.flatMap((value, index) => (index % 3 === 0 ? [value, value + 1, value - 1] : [])),
              ...extra,
            ].filter((value) => value >= 0 && value <= 2 ** 31 - 1),
          );
          const offset = stride - 1;
          const into = new Int32Array(targets.length * stride + stride).fill(-7);
          findPostings(docs, start, end, targets, targets.length, into, offset, stride);
          targets.forEach((target, index) => {
            expect(into[offset + index * stride]).toBe(findPosting(docs, start, end, target));
          });
        },
      ),
      { seed, numRuns: propertyRuns(300) },
    );
  });

  it("finds the first and last documents of a long list and misses the ids around it", () => {
    const docs = Int32Array.from({ length: 100_000 }, (_, index) => 3 * index + 1);
    const targets = Int32Array.from([1, 0, 2, 299_998, 299_999, 300_000, 150_001, 150_000]);
    const into = new Int32Array(targets.length);
    findPostings(docs, 0, docs.length, targets, targets.length, into, 0, 1);
    expect([...into]).toEqual([0, -1, -1, 99_999, -1, -1, 50_000, -1]);
  });
});
