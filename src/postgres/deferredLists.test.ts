/** `candidatePostings` (the candidates' postings a deferring turn ranks) against a plain filter of the list. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { candidatePostings, candidateSet, isCandidate } from "./deferredLists.js";
import type { FetchedList } from "./postingCache.js";

const ENTRIES = 200;

/** A list over `ENTRIES` entries (ascending distinct documents) in one of the three forms, and marks. */
const listAndMarks = fc
  .record({
    docs: fc.uniqueArray(fc.integer({ min: 0, max: ENTRIES - 1 }), { maxLength: 120 }),
    form: fc.constantFrom("plain", "byte", "short"),
    marked: fc.uniqueArray(fc.integer({ min: 0, max: ENTRIES - 1 }), { maxLength: ENTRIES }),
  })
  .map(({ docs, form, marked }) => {
    const sorted = Int32Array.from(docs.sort((left, right) => left - right));
    const values = Float64Array.from(sorted, (doc) => doc / 7 + 0.5);
    const list: FetchedList =
      form === "plain"
        ? { docs: sorted, contributions: values, upper: 40 }
        : {
            docs: sorted,
            contributions: Float64Array.from({ length: 300 }, (_, code) => code / 3),
            codes:
              form === "byte"
                ? Uint8Array.from(sorted, (doc) => doc % 256)
                : Uint16Array.from(sorted, (doc) => (doc * 3) % 300),
            upper: 100,
          };
    const marks = new Uint8Array(ENTRIES);
    for (const doc of marked) marks[doc] = 1;
    return { list, marks, candidates: candidateSet(marked, ENTRIES) };
  });

const contribution = (list: FetchedList, position: number) =>
  list.contributions[list.codes ? list.codes[position]! : position]!;

describe("candidatePostings", () => {
  it("keeps exactly the marked entries' postings, in order, with their contributions and the list's bound", () => {
    fc.assert(
      fc.property(listAndMarks, listAndMarks, ({ list, marks, candidates }, other) => {
        for (let doc = 0; doc < ENTRIES; doc++) expect(isCandidate(candidates, doc)).toBe(marks[doc] === 1);
        const expected = [...list.docs.keys()]
          .filter((position) => marks[list.docs[position]!] === 1)
          .map((position) => [list.docs[position]!, contribution(list, position)]);
        const kept = candidatePostings(list, candidates);
        // A second list's filtering (the same scratch space) leaves the first one's postings as they were.
        candidatePostings(other.list, other.candidates);
        if (expected.length === 0) {
          expect(kept).toBeNull();
          return;
        }
        if (expected.length === list.docs.length) expect(kept).toBe(list);
        const actual = [...kept!.docs.keys()].map((position) => [
          kept!.docs[position]!,
          contribution(kept!, position),
        ]);
        expect(actual).toEqual(expected);
        expect(kept!.upper).toBe(list.upper);
        expect(kept!.codes?.constructor).toBe(list.codes?.constructor);
      }),
      { seed: propertySeed("deferred-candidate-postings"), numRuns: propertyRuns(300) },
    );
  });
});
