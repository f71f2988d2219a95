/**
 * The pruned loop over lists given by the caller (`scoreLists`), against a plain sum of every list, on lists an
 * index never builds but a caller may pass: contributions of exactly 0 (a document touched with a total of 0 still
 * matches), repeated values (ties decided by rank), masks, every window layout and tiny windows.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { findPosting } from "./fieldScores.js";
import { listUpperBound } from "./listBounds.js";
import { DEFAULT_WINDOWS, mergeRanked, type QueryLists, type ScoringPart, scoreLists } from "./scoreLists.js";
import { WINDOW_DOCUMENTS } from "./scoringList.js";

/** Every touched eligible document, its contributions summed in list order; score descending, then rank. */
function plainTop(
  lists: QueryLists,
  ranks: Int32Array,
  topK: number,
  mask: Uint8Array | null,
): { doc: number; score: number }[] {
  const totals = new Map<number, number>();
  lists.postings.forEach(({ docs, contributions }, list) => {
    for (let position = lists.starts[list]!; position < lists.ends[list]!; position++) {
      const doc = docs[position]!;
      if (mask !== null && mask[doc] !== 1) continue;
      totals.set(doc, (totals.get(doc) ?? 0) + contributions[position]!);
    }
  });
  return [...totals]
    .map(([doc, score]) => ({ doc, score }))
    .sort((left, right) => right.score - left.score || ranks[left.doc]! - ranks[right.doc]!)
    .slice(0, topK);
}

const contribution = fc.oneof(
  fc.constantFrom(0, 0, 0.25, 1, 2.5),
  fc.double({ min: 0, max: 4, noNaN: true }),
);

const caseArbitrary = fc.record({
  documentCount: fc.integer({ min: 1, max: 120 }),
  lists: fc.array(fc.array(fc.tuple(fc.nat(), contribution), { maxLength: 120 }), {
    minLength: 1,
    maxLength: 12,
  }),
  topK: fc.integer({ min: 1, max: 10 }),
  maskSeed: fc.option(fc.nat(), { freq: 2 }),
  first: fc.integer({ min: 1, max: 8 }),
  later: fc.integer({ min: 1, max: 16 }),
  /** Where a split search cuts the document ids (fractions of the count). */
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 3 }),
});

type TestCase = typeof caseArbitrary extends fc.Arbitrary<infer T> ? T : never;

/** A case's lists, ranks (a permutation unrelated to dense ids, so ties are decided by rank) and mask. */
function caseInputs(testCase: TestCase): { lists: QueryLists; ranks: Int32Array; mask: Uint8Array | null } {
  const { documentCount } = testCase;
  const postings = testCase.lists.map((pairs) => {
    const byDoc = new Map<number, number>();
    for (const [doc, value] of pairs) byDoc.set(doc % documentCount, value);
    const docs = Int32Array.from([...byDoc.keys()].sort((left, right) => left - right));
    return { docs, contributions: Float64Array.from(docs, (doc) => byDoc.get(doc)!) };
  });
  const lists: QueryLists = {
    postings,
    starts: new Int32Array(postings.length),
    ends: Int32Array.from(postings, ({ docs }) => docs.length),
    upper: Float64Array.from(postings, ({ contributions }) =>
      listUpperBound(contributions, 0, contributions.length),
    ),
  };
  const byHash = Array.from({ length: documentCount }, (_, doc) => doc).sort(
    (left, right) => Math.imul(left, 0x9e3779b1) - Math.imul(right, 0x9e3779b1),
  );
  const ranks = new Int32Array(documentCount);
  byHash.forEach((doc, rank) => {
    ranks[doc] = rank;
  });
  const mask =
    testCase.maskSeed === null
      ? null
      : Uint8Array.from({ length: documentCount }, (_, doc) =>
          (doc * 7 + testCase.maskSeed!) % 3 === 0 ? 0 : 1,
        );
  return { lists, ranks, mask };
}

describe("scoreLists", () => {
  it("returns the plain sum's top K on lists with zero contributions, in every window layout (property)", () => {
    const seed = propertySeed("score-lists");
    fc.assert(
      fc.property(caseArbitrary, (testCase) => {
        const { documentCount, topK } = testCase;
        const { lists, ranks, mask } = caseInputs(testCase);
        const expected = plainTop(lists, ranks, topK, mask);
        for (const [layout, unmarked] of [
          ["dense", true],
          ["dense", false],
          ["sparse", true],
        ] as const) {
          for (const alwaysProbe of [false, true]) {
            const windows = { first: testCase.first, later: testCase.later, layout, unmarked, alwaysProbe };
            expect(scoreLists(lists, documentCount, ranks, topK, mask, windows)).toEqual(expected);
          }
        }
        // With positions asked for: every ranked document's position in each list, as one search finds it.
        const positions = new Map<number, Int32Array>();
        const ranked = scoreLists(lists, documentCount, ranks, topK, mask, DEFAULT_WINDOWS, positions);
        expect(ranked).toEqual(expected);
        for (const { doc } of ranked)
          expect([...positions.get(doc)!]).toEqual(
            lists.postings.map(({ docs }, list) =>
              findPosting(docs, lists.starts[list]!, lists.ends[list]!, doc),
            ),
          );
      }),
      { seed, numRuns: propertyRuns(200) },
    );
  });

  it("sums dense windows read eight postings a step, whatever each list's length in a window (property)", () => {
    // Lists that hold most documents, so each window reads runs of every length from 0 to over 8 per list (the
    // unrolled steps and the postings left after them), marked and unmarked.
    const seed = propertySeed("score-lists-dense-steps");
    fc.assert(
      fc.property(
        fc.integer({ min: 8, max: 300 }),
        fc.array(fc.tuple(fc.double({ min: 0.05, max: 1, noNaN: true }), fc.nat()), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 128 }),
        fc.option(fc.nat(), { freq: 2 }),
        (documentCount, listSeeds, topK, first, later, maskSeed) => {
          const postings = listSeeds.map(([density, salt]) => {
            const docs = Int32Array.from(
              Array.from({ length: documentCount }, (_, doc) => doc).filter(
                (doc) => ((Math.imul(doc + salt, 0x9e3779b1) >>> 0) % 1000) / 1000 < density,
              ),
            );
            // Distinct contributions per position: a posting summed with another's value changes the result.
            return {
              docs,
              contributions: Float64Array.from(docs, (doc) => 1 + ((doc * 31 + salt) % 97) / 64),
            };
          });
          const lists: QueryLists = {
            postings,
            starts: new Int32Array(postings.length),
            ends: Int32Array.from(postings, ({ docs }) => docs.length),
            upper: Float64Array.from(postings, ({ contributions }) =>
              listUpperBound(contributions, 0, contributions.length),
            ),
          };
          const ranks = Int32Array.from({ length: documentCount }, (_, doc) => (doc * 7919) % documentCount);
          const mask =
            maskSeed === null
              ? null
              : Uint8Array.from({ length: documentCount }, (_, doc) =>
                  (doc * 5 + maskSeed) % 4 === 0 ? 0 : 1,
                );
          const expected = plainTop(lists, ranks, topK, mask);
          for (const unmarked of [true, false])
            for (const pruning of [true, false])
              expect(
                scoreLists(lists, documentCount, ranks, topK, mask, {
                  first,
                  later,
                  layout: "dense",
                  unmarked,
                  pruning,
                }),
              ).toEqual(expected);
        },
      ),
      { seed, numRuns: propertyRuns(200) },
    );
  });

  it("merges parts of the document ids into the whole top K, whatever valid floor each part reads (property)", () => {
    const seed = propertySeed("score-lists-parts");
    fc.assert(
      fc.property(caseArbitrary, (testCase) => {
        const { documentCount, topK } = testCase;
        const { lists, ranks, mask } = caseInputs(testCase);
        const expected = plainTop(lists, ranks, topK, mask);
        const cuts = [
          0,
          ...testCase.cuts.map((cut) => Math.floor(cut * documentCount)).sort((left, right) => left - right),
          documentCount,
        ];
        // The highest valid floor: the whole search's K-th score (ties at it must survive).
        const kth = expected.length >= topK ? expected[topK - 1]!.score : Number.NEGATIVE_INFINITY;
        const floors: ((earlier: { doc: number; score: number }[][]) => ScoringPart["exchange"])[] = [
          () => undefined,
          () => () => kth,
          // Each part floored by the K-th score of the parts before it, as two threads exchange them.
          (earlier) => {
            const merged = mergeRanked(earlier, ranks, topK);
            const floor = merged.length >= topK ? merged[topK - 1]!.score : Number.NEGATIVE_INFINITY;
            return () => floor;
          },
          // The K-th score of this part's best so far and the earlier parts' results together, as the two threads of
          // a split search exchange them (`exchangeBest`); it also leaves this part's documents below it unsummed.
          (earlier) => {
            const scores = mergeRanked(earlier, ranks, topK).map(({ score }) => score);
            const best = new Float64Array(Math.max(1, Math.ceil(topK)));
            return (_threshold, top) => {
              const count = top.bestScores(best);
              const union = [...scores, ...best.subarray(0, count)].sort((left, right) => right - left);
              return union.length >= topK ? union[topK - 1]! : Number.NEGATIVE_INFINITY;
            };
          },
        ];
        for (const floorOf of floors) {
          for (const layout of ["dense", "sparse"] as const) {
            const parts: { doc: number; score: number }[][] = [];
            for (let part = 0; part + 1 < cuts.length; part++) {
              const windows = { first: testCase.first, later: testCase.later, layout };
              const exchange = floorOf(parts);
              parts.push(
                scoreLists(lists, documentCount, ranks, topK, mask, windows, new Map(), {
                  from: cuts[part]!,
                  to: cuts[part + 1]!,
                  ...(exchange ? { exchange } : {}),
                }),
              );
            }
            expect(mergeRanked(parts, ranks, topK)).toEqual(expected);
          }
          // Two parts reading every other range (as two threads claiming ranges in turn), the second floored by
          // the first's result.
          const sides: { doc: number; score: number }[][] = [];
          for (const side of [0, 1]) {
            const own: number[] = [];
            for (let range = side; range + 1 < cuts.length; range += 2) own.push(range);
            let taken = 1;
            const next = () => {
              const range = own[taken++];
              return range === undefined ? null : { from: cuts[range]!, to: cuts[range + 1]! };
            };
            const exchange = floorOf(sides);
            const first =
              own[0] === undefined ? { from: 0, to: 0 } : { from: cuts[own[0]]!, to: cuts[own[0] + 1]! };
            const windows = { first: testCase.first, later: testCase.later };
            sides.push(
              scoreLists(lists, documentCount, ranks, topK, mask, windows, new Map(), {
                ...first,
                next,
                ...(exchange ? { exchange } : {}),
              }),
            );
          }
          expect(mergeRanked(sides, ranks, topK)).toEqual(expected);
        }
      }),
      { seed, numRuns: propertyRuns(200) },
    );
  });

  it("returns the plain sum's top K with the default windows, postings at their edges (property)", () => {
    // The default windows' edges: the first window's end, then every WINDOW_DOCUMENTS after it.
    const edges = [0, DEFAULT_WINDOWS.first];
    for (let window = 1; window <= 3; window++) edges.push(DEFAULT_WINDOWS.first + window * WINDOW_DOCUMENTS);
    const documentCount = edges[edges.length - 1]! + 8;
    const nearEdge = fc
      .tuple(fc.constantFrom(...edges), fc.integer({ min: -3, max: 3 }))
      .map(([edge, step]) => Math.min(documentCount - 1, Math.max(0, edge + step)));
    // Ranks unrelated to dense ids (ties decided by rank), made once: the lists only touch documents near edges.
    const ranks = Int32Array.from({ length: documentCount }, (_, doc) => (doc * 7919) % documentCount);
    const seed = propertySeed("score-lists-window-edges");
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.tuple(nearEdge, contribution), { maxLength: 40 }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.integer({ min: 1, max: 6 }),
        fc.option(fc.nat(), { freq: 2 }),
        (pairs, topK, maskSeed) => {
          const postings = pairs.map((listPairs) => {
            const byDoc = new Map<number, number>(listPairs);
            const docs = Int32Array.from([...byDoc.keys()].sort((left, right) => left - right));
            return { docs, contributions: Float64Array.from(docs, (doc) => byDoc.get(doc)!) };
          });
          const lists: QueryLists = {
            postings,
            starts: new Int32Array(postings.length),
            ends: Int32Array.from(postings, ({ docs }) => docs.length),
            upper: Float64Array.from(postings, ({ contributions }) =>
              listUpperBound(contributions, 0, contributions.length),
            ),
          };
          const mask =
            maskSeed === null
              ? null
              : Uint8Array.from({ length: documentCount }, (_, doc) =>
                  (doc * 7 + maskSeed) % 3 === 0 ? 0 : 1,
                );
          const expected = plainTop(lists, ranks, topK, mask);
          for (const layout of ["dense", "sparse"] as const)
            for (const alwaysProbe of [false, true])
              expect(
                scoreLists(lists, documentCount, ranks, topK, mask, {
                  ...DEFAULT_WINDOWS,
                  layout,
                  alwaysProbe,
                }),
              ).toEqual(expected);
        },
      ),
      { seed, numRuns: propertyRuns(100) },
    );
  });
});
