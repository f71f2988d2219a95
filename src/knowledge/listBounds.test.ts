import { describe, expect, it } from "vitest";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { LONG_LIST_POSTINGS, listUpperBound, longListBoundSteps } from "./listBounds.js";
import type { FieldPostings } from "./postings.js";

/** A finished index whose common words have lists longer than {@link LONG_LIST_POSTINGS}. */
function buildIndex(documentCount: number): KnowledgeLexicalIndex {
  const index = new KnowledgeLexicalIndex();
  let state = 12345;
  const next = () => {
    state = (state * 1103515245 + 12345) >>> 0;
    return state >>> 8;
  };
  for (let doc = 0; doc < documentCount; doc++) {
    const body = Array.from(
      { length: 12 + (next() % 20) },
      () => `w${Math.floor(((next() % 1000) / 1000) ** 2 * 30)}`,
    );
    index.add({
      id: `doc-${doc.toString().padStart(5, "0")}`,
      exactKeys: [],
      fields: {
        title: [`t${next() % 7}`],
        aliases: [],
        keywords: [],
        summary: ["common", ...body.slice(0, 3)],
        body,
      },
    });
  }
  index.finalize();
  return index;
}

describe("upper bounds of long posting lists", () => {
  it("listUpperBound is the largest contribution, 0 when empty, Infinity with a negative or NaN one", () => {
    const contributions = Float64Array.from([0.5, 2.25, 1, 2.25, 0]);
    expect(listUpperBound(contributions, 0, 5)).toBe(2.25);
    expect(listUpperBound(contributions, 2, 3)).toBe(1);
    expect(listUpperBound(contributions, 3, 3)).toBe(0);
    expect(listUpperBound(Float64Array.from([1, -0.5, 3]), 0, 3)).toBe(Number.POSITIVE_INFINITY);
    expect(listUpperBound(Float64Array.from([1, Number.NaN]), 0, 2)).toBe(Number.POSITIVE_INFINITY);
  });

  it("a build computes the bound of every long list of every field, and of no short one", () => {
    const index = buildIndex(7000);
    const internals = index as unknown as {
      postings: FieldPostings[];
      upperBounds: Map<number, number>[] | null;
    };
    const bounds = internals.upperBounds!;
    expect(bounds).toHaveLength(internals.postings.length);
    let longLists = 0;
    for (const [field, postings] of internals.postings.entries()) {
      if (!postings.active) {
        expect(bounds[field]!.size).toBe(0);
        continue;
      }
      for (let term = 0; term + 1 < postings.offsets.length; term++) {
        const start = postings.offsets[term]!;
        const end = postings.offsets[term + 1]!;
        if (end - start >= LONG_LIST_POSTINGS) {
          longLists++;
          expect(bounds[field]!.get(term)).toBe(listUpperBound(postings.contributions, start, end));
        } else expect(bounds[field]!.has(term)).toBe(false);
      }
    }
    // The summary's "common" and several body words are long lists.
    expect(longLists).toBeGreaterThan(3);
    // The search agrees with an index that computes every bound on demand (same postings, fresh cache).
    const onDemand = KnowledgeLexicalIndex.fromParts(index.exportParts());
    for (const query of [
      ["common", "w0", "w1"],
      ["w3", "t2", "w29"],
      ["w0", "w1", "w2", "w5", "w8", "common"],
    ])
      expect(index.searchWithMask(query, 10, null)).toEqual(onDemand.searchWithMask(query, 10, null));
  });

  it("yields between slices and returns the same bounds", () => {
    const index = buildIndex(7000);
    const parts = index.exportParts();
    const steps = longListBoundSteps(parts.postings, parts.termCount, 1);
    let slices = 0;
    let step = steps.next();
    while (!step.done) {
      slices++;
      step = steps.next();
    }
    expect(slices).toBeGreaterThanOrEqual(0);
    parts.postings.forEach((postings, field) => {
      if (!postings.active) return;
      for (let term = 0; term < parts.termCount; term++) {
        const start = postings.offsets[term]!;
        const end = postings.offsets[term + 1]!;
        if (end > start)
          expect(step.value[field]!.get(term)).toBe(listUpperBound(postings.contributions, start, end));
      }
    });
  });
});
