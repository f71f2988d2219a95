/**
 * The scoring kernel (`scoringKernel.ts`): its two loops on fixed inputs, and `scoreLists` over lists in a scoring
 * memory (read by the kernel) against the same lists in plain arrays (read by the JavaScript loops): the same
 * documents, scores and positions, bit for bit.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { listUpperBound } from "./listBounds.js";
import { DEFAULT_WINDOWS, type QueryLists, type ScoringWindows, scoreLists } from "./scoreLists.js";
import {
  SCORING_KERNEL_HEX,
  SCRATCH_BYTES,
  scoringBuffer,
  scoringKernelBytes,
  scoringKernelOf,
} from "./scoringKernel.js";

/** What the kernel did while a test ran: calls of each loop, and documents `select` passed over (k > 0 or not). */
type Usage = { sparse: number; select: number; droppedByHeap: number; droppedByBar: number };

/** Copies `lists` into a new scoring memory (after its scratch), as a loaded artifact's postings are read there. */
function inScoringMemory(lists: QueryLists): { lists: QueryLists; usage: Usage } {
  let bytes = 0;
  for (const { docs, contributions } of lists.postings)
    bytes += Math.ceil(docs.byteLength / 8) * 8 + contributions.byteLength;
  const buffer = scoringBuffer(bytes);
  if (buffer === null) throw new Error("no WebAssembly in this runtime");
  let offset = SCRATCH_BYTES;
  const postings = lists.postings.map(({ docs, contributions }) => {
    const docsCopy = new Int32Array(buffer, offset, docs.length);
    docsCopy.set(docs);
    offset += Math.ceil(docs.byteLength / 8) * 8;
    const contributionsCopy = new Float64Array(buffer, offset, contributions.length);
    contributionsCopy.set(contributions);
    offset += contributions.byteLength;
    return { docs: docsCopy, contributions: contributionsCopy };
  });
  // Counted through the kernel's own functions, so a test can tell that its input went through them.
  const kernel = scoringKernelOf(buffer)!;
  const usage: Usage = { sparse: 0, select: 0, droppedByHeap: 0, droppedByBar: 0 };
  const { sparse, select } = kernel;
  kernel.sparse = (...parameters) => {
    usage.sparse++;
    return sparse(...parameters);
  };
  kernel.select = (count, shift, scale, bar, k, below) => {
    usage.select++;
    const kept = select(count, shift, scale, bar, k, below);
    if (k > 0) usage.droppedByHeap += count - kept;
    else usage.droppedByBar += count - kept;
    return kept;
  };
  return { lists: { ...lists, postings }, usage };
}

function queryLists(postings: { docs: Int32Array; contributions: Float64Array }[]): QueryLists {
  return {
    postings,
    starts: new Int32Array(postings.length),
    ends: Int32Array.from(postings, ({ docs }) => docs.length),
    upper: Float64Array.from(postings, ({ contributions }) =>
      listUpperBound(contributions, 0, contributions.length),
    ),
  };
}

/** `scoreLists` over plain arrays and over the scoring memory, with positions: both results and positions. */
function bothWays(
  lists: QueryLists,
  documentCount: number,
  ranks: Int32Array,
  topK: number,
  mask: Uint8Array | null,
  windows: ScoringWindows,
) {
  const plainPositions = new Map<number, Int32Array>();
  const plain = scoreLists(lists, documentCount, ranks, topK, mask, windows, plainPositions);
  const { lists: kernelLists, usage } = inScoringMemory(lists);
  const kernelPositions = new Map<number, Int32Array>();
  const kernel = scoreLists(kernelLists, documentCount, ranks, topK, mask, windows, kernelPositions);
  return { plain, kernel, plainPositions, kernelPositions, usage };
}

afterEach(() => {
  // A test that removed WebAssembly puts it back.
  if (saved !== undefined) (globalThis as { WebAssembly?: unknown }).WebAssembly = saved;
  saved = undefined;
});
let saved: unknown;

describe("scoring kernel", () => {
  it("compiles the bytes built from named opcodes", () => {
    expect(Buffer.from(scoringKernelBytes()).toString("hex")).toBe(SCORING_KERNEL_HEX);
    // Compiled and instantiated (a module that fails to compile leaves every list to the JavaScript loops).
    expect(scoringKernelOf(scoringBuffer(0)!)).toBeDefined();
  });

  it("sparse: adds a list's window postings to the totals, marking and listing each document once", () => {
    const buffer = scoringBuffer(64)!;
    const kernel = scoringKernelOf(buffer)!;
    const docs = new Int32Array(buffer, SCRATCH_BYTES, 6);
    docs.set([8, 9, 11, 12, 14, 20]);
    const contributions = new Float64Array(buffer, SCRATCH_BYTES + 24, 6);
    contributions.set([0.5, 1.25, 2, 3, 0.1, 9]);
    // Window [8, 16), documents 11 and 14 masked out; document 9 already touched with 4.
    kernel.mask.set([1, 1, 1, 0, 1, 1, 0, 1]);
    kernel.marks[1] = 1;
    kernel.touched[0] = 1;
    kernel.totals[1] = 4;
    const count = kernel.sparse(docs.byteOffset, contributions.byteOffset, 0, 6, 8, 16, 1, 1);
    expect(count).toBe(3);
    expect(kernel.state[0]).toBe(5);
    expect([...kernel.touched.subarray(0, 3)]).toEqual([1, 0, 4]);
    expect([...kernel.totals.subarray(0, 8)]).toEqual([0.5, 5.25, 0, 0, 3, 0, 0, 0]);
    expect([...kernel.marks.subarray(0, 8)]).toEqual([1, 1, 0, 0, 1, 0, 0, 0]);
    // Unmasked, from position 2: document 11 counts too.
    kernel.totals.fill(0, 0, 8);
    kernel.marks.fill(0, 0, 8);
    expect(kernel.sparse(docs.byteOffset, contributions.byteOffset, 2, 6, 8, 16, 0, 0)).toBe(3);
    expect([...kernel.totals.subarray(0, 8)]).toEqual([0, 0, 0, 2, 3, 0, 0.1, 0]);
  });

  it("select: keeps the documents at or above the bar, or above the k-th largest total before them", () => {
    const buffer = scoringBuffer(0)!;
    const kernel = scoringKernelOf(buffer)!;
    const totals = [1, 5, 3, 0.5, 4, 6, 2];
    const fill = () => {
      totals.forEach((total, index) => {
        kernel.touched[index] = 10 + index;
        kernel.totals[10 + index] = total;
        kernel.marks[10 + index] = 1;
      });
    };
    // k = 2: the bar is the 2nd largest total before each document (none for the first two).
    fill();
    expect(kernel.select(7, 0, 1, Number.NEGATIVE_INFINITY, 2, 0)).toBe(5);
    expect([...kernel.touched.subarray(0, 5)]).toEqual([10, 11, 12, 14, 15]);
    // The documents passed over are cleared, the others left for the caller.
    expect([...kernel.totals.subarray(10, 17)]).toEqual([1, 5, 3, 0, 4, 6, 0]);
    expect([...kernel.marks.subarray(10, 17)]).toEqual([1, 1, 1, 0, 1, 1, 0]);
    // k = 0: a fixed bar on (total + shift) * scale.
    fill();
    expect(kernel.select(7, 1, 2, 8, 0, 0)).toBe(4);
    expect([...kernel.touched.subarray(0, 4)]).toEqual([11, 12, 14, 15]);
    // A bar above the heap's: the bar decides.
    fill();
    expect(kernel.select(7, 0, 1, 4.5, 3, 0)).toBe(2);
    expect([...kernel.touched.subarray(0, 2)]).toEqual([11, 15]);
    // A NaN total: turned away by "at least the bar", kept by "not below it" (the probing loop's test).
    totals[2] = Number.NaN;
    fill();
    expect(kernel.select(7, 0, 1, 3.5, 0, 0)).toBe(3);
    expect([...kernel.touched.subarray(0, 3)]).toEqual([11, 14, 15]);
    fill();
    expect(kernel.select(7, 0, 1, 3.5, 0, 1)).toBe(4);
    expect([...kernel.touched.subarray(0, 4)]).toEqual([11, 12, 14, 15]);
  });

  it("scores lists in a scoring memory as in plain arrays, through both of select's bars (fixed lists)", () => {
    // One list over every document with spread contributions and two long lists of small ones: once the top K
    // is known the two are skipped and probed, and the first window passes over most documents by the heap.
    const documentCount = 3000;
    const all = Int32Array.from({ length: documentCount }, (_, doc) => doc);
    const every = (step: number) => all.filter((doc) => doc % step === 0);
    const lists = queryLists([
      { docs: every(3), contributions: Float64Array.from(every(3), () => 0.2) },
      { docs: all, contributions: Float64Array.from(all, (doc) => ((doc * 37) % 101) / 10) },
      { docs: every(2), contributions: Float64Array.from(every(2), (doc) => 0.25 + (doc % 5) / 100) },
    ]);
    const ranks = Int32Array.from(all, (doc) => (doc * 7919) % documentCount);
    const mask = Uint8Array.from(all, (doc) => (doc % 11 === 0 ? 0 : 1));
    for (const windows of [{ first: 512, later: 1024, pruning: true }, DEFAULT_WINDOWS] as ScoringWindows[])
      for (const topK of [1, 5, 40])
        for (const eligible of [null, mask]) {
          const { plain, kernel, plainPositions, kernelPositions, usage } = bothWays(
            lists,
            documentCount,
            ranks,
            topK,
            eligible,
            windows,
          );
          expect(kernel).toEqual(plain);
          expect(kernelPositions).toEqual(plainPositions);
          expect(plain.length).toBe(topK);
          expect(usage.sparse).toBeGreaterThan(0);
          expect(usage.droppedByHeap).toBeGreaterThan(0);
          // Small windows and a small K: the two long lists are probed (found by running these lists).
          if (windows.later === 1024 && topK <= 5) expect(usage.droppedByBar).toBeGreaterThan(0);
        }
  });

  it("scores lists with a NaN contribution in a scoring memory as in plain arrays (fixed lists)", () => {
    // The spread list holds a NaN (its bound is then infinite: it is always read, and the heap's bar is off); the
    // two small lists are still skipped and probed, and the probing loop's test keeps the NaN document.
    const documentCount = 3000;
    const all = Int32Array.from({ length: documentCount }, (_, doc) => doc);
    const every = (step: number) => all.filter((doc) => doc % step === 0);
    const spread = Float64Array.from(all, (doc) => ((doc * 37) % 101) / 10);
    spread[2500] = Number.NaN;
    const lists = queryLists([
      { docs: every(3), contributions: Float64Array.from(every(3), () => 0.2) },
      { docs: all, contributions: spread },
      { docs: every(2), contributions: Float64Array.from(every(2), (doc) => 0.25 + (doc % 5) / 100) },
    ]);
    const ranks = Int32Array.from(all, (doc) => (doc * 7919) % documentCount);
    const { plain, kernel, plainPositions, kernelPositions, usage } = bothWays(
      lists,
      documentCount,
      ranks,
      5,
      null,
      {
        first: 512,
        later: 1024,
        pruning: true,
      },
    );
    expect(kernel).toEqual(plain);
    expect(kernelPositions).toEqual(plainPositions);
    expect(plain.some(({ score }) => Number.isNaN(score))).toBe(true);
    expect(usage.droppedByBar).toBeGreaterThan(0);
  });

  it("scores lists in a scoring memory as in plain arrays, in every window layout (property)", () => {
    const seed = propertySeed("scoring-kernel");
    const contribution = fc.oneof(
      fc.constantFrom(0, 0, 0.25, 1, 2.5),
      fc.double({ min: 0, max: 4, noNaN: true }),
      // A negative or NaN contribution turns the heap's bar off (and pruning for queries with its list).
      fc.constantFrom(-1, Number.NaN),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.array(fc.array(fc.tuple(fc.nat(), contribution), { maxLength: 300 }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.integer({ min: 1, max: 12 }),
        fc.option(fc.nat(), { freq: 2 }),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 128 }),
        (documentCount, pairLists, topK, maskSeed, first, later) => {
          const lists = queryLists(
            pairLists.map((pairs) => {
              const byDoc = new Map<number, number>();
              for (const [doc, value] of pairs) byDoc.set(doc % documentCount, value);
              const docs = Int32Array.from([...byDoc.keys()].sort((left, right) => left - right));
              return { docs, contributions: Float64Array.from(docs, (doc) => byDoc.get(doc)!) };
            }),
          );
          const ranks = Int32Array.from({ length: documentCount }, (_, doc) => (doc * 7919) % documentCount);
          const mask =
            maskSeed === null
              ? null
              : Uint8Array.from({ length: documentCount }, (_, doc) =>
                  (doc * 7 + maskSeed) % 3 === 0 ? 0 : 1,
                );
          for (const layout of ["sparse", "dense"] as const)
            for (const alwaysProbe of [false, true]) {
              const windows: ScoringWindows = { first, later, pruning: true, layout, alwaysProbe };
              const { plain, kernel, plainPositions, kernelPositions } = bothWays(
                lists,
                documentCount,
                ranks,
                topK,
                mask,
                windows,
              );
              expect(kernel).toEqual(plain);
              expect(kernelPositions).toEqual(plainPositions);
            }
        },
      ),
      { seed, numRuns: propertyRuns(150) },
    );
  });

  it("without WebAssembly there is no scoring memory, and lists are read by the JavaScript loops", () => {
    saved = (globalThis as { WebAssembly?: unknown }).WebAssembly;
    (globalThis as { WebAssembly?: unknown }).WebAssembly = undefined;
    expect(scoringBuffer(1024)).toBeNull();
  });
});
