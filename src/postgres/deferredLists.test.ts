/**
 * `candidatePostings` (the candidates' postings a deferring turn ranks) against a plain filter of the list, and a
 * whole deferral (`resolveDeferred`) against the lists it replaces.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import {
  candidatePostings,
  candidateSet,
  type DeferredHeader,
  deferralCosts,
  isCandidate,
  resolveDeferred,
} from "./deferredLists.js";
import { FrequentRows } from "./frequentLists.js";
import type { FetchedList } from "./postingCache.js";
import { decodeWireHeader, decodeWireList, encodeWireListParts } from "./wireLists.js";

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

/**
 * A deferral end to end (`resolveDeferred`) on random lists, the frequent ones deferred (their headers and rows
 * as a publication writes them), its rows handed over in one buffer that the next row overwrites (as a COPY's
 * buffer is reused): each list it returns is the whole list's postings of the candidates it names, and the
 * candidates hold the best K of the exact scores.
 */
describe("resolveDeferred", () => {
  const ENTRY_COUNT = 400;
  const instance = fc.record({
    lists: fc.array(
      fc.record({
        docs: fc.uniqueArray(fc.integer({ min: 0, max: ENTRY_COUNT - 1 }), { minLength: 1, maxLength: 300 }),
        values: fc.array(fc.double({ min: 0, max: 20, noNaN: true }), { minLength: 1, maxLength: 6 }),
        frequent: fc.boolean(),
      }),
      { minLength: 1, maxLength: 12 },
    ),
    topK: fc.integer({ min: 1, max: 12 }),
    stages: fc.constantFrom(1, 2),
    reversed: fc.boolean(),
    // Every frequent list deferred, or the larger bounds read whole: as arrays, or only summed (`sumLists`).
    share: fc.constantFrom(Number.POSITIVE_INFINITY, 0.6, 0.2),
    summing: fc.boolean(),
  });

  it("returns the candidates' whole postings and keeps the best K among the candidates, in one or two rounds, rows in any order, lists read whole or summed", async () => {
    const costs = { ...deferralCosts };
    try {
      await fc.assert(
        fc.asyncProperty(instance, async ({ lists, topK, stages, reversed, share, summing }) => {
          deferralCosts.share = share;
          deferralCosts.sumBlock = 3;
          deferralCosts.listBytesPerPosting = Number.POSITIVE_INFINITY;
          deferralCosts.twoStagesFrom = stages === 2 ? 1 : Number.POSITIVE_INFINITY;
          deferralCosts.firstStage = 1;
          const whole: FetchedList[] = lists.map(({ docs, values }) => {
            const sorted = Int32Array.from(docs.sort((left, right) => left - right));
            const contributions = Float64Array.from(values);
            const codes = Uint8Array.from(sorted, (doc) => (doc * 7) % values.length);
            return { docs: sorted, contributions, codes, upper: Math.max(...values) };
          });
          const rows = new FrequentRows(ENTRY_COUNT);
          const deferred: DeferredHeader[] = [];
          const deferredWhole: FetchedList[] = [];
          const deferredBytes: Uint8Array[] = [];
          const complete: FetchedList[] = [];
          lists.forEach(({ frequent }, index) => {
            const list = whole[index]!;
            const contributions = Float64Array.from(list.codes!, (code) => list.contributions[code]!);
            const parts = encodeWireListParts(list.docs, contributions);
            // Only coded lists are deferred (a list whose values are not worth coding is read whole).
            if (!frequent || parts.codes === null) {
              complete.push(list);
              return;
            }
            const header = decodeWireHeader(parts.bytes.slice(0, parts.headerBytes));
            const number = rows.add(list.docs, parts.codes);
            deferred.push({ ...header, number });
            deferredWhole.push(decodeWireList(parts.bytes.slice(), ENTRY_COUNT));
            deferredBytes.push(parts.bytes.slice());
          });
          const rowBytes = new Map<number, Uint8Array>();
          for (const row of rows.rows(1) as Iterable<{ doc: number; bytes: Uint8Array }>)
            rowBytes.set(row.doc, row.bytes.slice());
          const mask = new Uint8Array(ENTRY_COUNT).fill(1);
          const shared = new Uint8Array(4096);
          const result = await resolveDeferred(complete, deferred, {
            entryCount: ENTRY_COUNT,
            topK,
            mask,
            rowBytesPerEntry: 1,
            readLists: async (indexes) => indexes.map((index) => deferredWhole[index]!),
            // Lists only summed: their bytes in the reverse order, in one buffer the next list overwrites.
            ...(summing
              ? {
                  sumLists: async (
                    indexes: readonly number[],
                    onList: (index: number, bytes: Uint8Array) => void,
                    onLists: (indexes: readonly number[], lists: readonly Uint8Array[]) => void,
                  ) => {
                    // Every other list kept (handed together, summed by blocks of 3 entries), the others as
                    // they arrive, each a view that is overwritten afterwards.
                    const keptIndexes = indexes.filter((_, at) => at % 2 === 1);
                    onLists(
                      keptIndexes,
                      keptIndexes.map((index) => deferredBytes[index]!),
                    );
                    for (const index of [...indexes].reverse()) {
                      if (keptIndexes.includes(index)) continue;
                      const bytes = deferredBytes[index]!;
                      const buffer = new Uint8Array(bytes.length);
                      buffer.set(bytes);
                      onList(index, buffer);
                      buffer.fill(0xff);
                    }
                  },
                }
              : {}),
            // Rows in the order asked for, or (a server free to return them in any order) reversed.
            readRows: async (docs, onRow) => {
              for (const doc of reversed ? [...docs].reverse() : docs) {
                const bytes = rowBytes.get(doc);
                if (!bytes) continue;
                shared.set(bytes);
                onRow(doc, shared.subarray(0, bytes.length));
                shared.fill(0xff);
              }
            },
          });
          const candidates = result.candidates;
          deferred.forEach((_, index) => {
            const expected = result.whole[index]
              ? deferredWhole[index]!
              : candidates && candidatePostings(deferredWhole[index]!, candidates);
            const actual = result.lists[index] ?? null;
            const postings = (list: FetchedList | null) =>
              list ? [...list.docs].map((doc, position) => [doc, contribution(list, position)]) : [];
            expect(postings(actual)).toEqual(postings(expected ?? null));
          });
          if (!candidates) return;
          // Exact scores (every list), the K-th best: every entry scoring above it is a candidate.
          const scores = new Float64Array(ENTRY_COUNT);
          for (const list of whole)
            list.docs.forEach((doc, position) => {
              scores[doc]! += contribution(list, position);
            });
          const kth = [...scores].sort((left, right) => right - left)[topK - 1]!;
          for (let doc = 0; doc < ENTRY_COUNT; doc++)
            if (scores[doc]! > kth * (1 + 1e-9)) expect(isCandidate(candidates, doc)).toBe(true);
        }),
        { seed: propertySeed("deferred-resolve"), numRuns: propertyRuns(200) },
      );
    } finally {
      Object.assign(deferralCosts, costs);
    }
  });

  it("takes a list only summed from the candidates' rows, and counts only the deferred lists in a candidate's known score", async () => {
    // Entry 0 (A) scores 10 in the summed list S; entry 1 (B) 9.5 in the complete list C and 1 in the deferred
    // list D: B is the best (10.5). K = 1, two rounds of one row first: A has the best partial sum (10, S summed);
    // its known score is 10 (S already in its partial sum), so B (9.5 + at most 1) must still be read.
    const entryCount = 40;
    const range = (from: number, to: number) => Array.from({ length: to - from }, (_, index) => from + index);
    // Copied out of the encoder's scratch space.
    const coded = (docs: number[], value: (doc: number) => number) => {
      const sorted = Int32Array.from(docs);
      const parts = encodeWireListParts(sorted, Float64Array.from(sorted, value));
      return { bytes: parts.bytes.slice(), headerBytes: parts.headerBytes, codes: parts.codes!.slice() };
    };
    const summedParts = coded([0, ...range(10, 20)], (doc) => (doc === 0 ? 10 : 0.5));
    const deferredParts = coded([1, ...range(20, 30)], (doc) => (doc === 1 ? 1 : 0.25));
    const rows = new FrequentRows(entryCount);
    const headers: DeferredHeader[] = [];
    const bytes: Uint8Array[] = [];
    const wholeLists: FetchedList[] = [];
    for (const parts of [deferredParts, summedParts]) {
      const list = decodeWireList(parts.bytes.slice(), entryCount);
      const number = rows.add(list.docs, parts.codes);
      headers.push({ ...decodeWireHeader(parts.bytes.slice(0, parts.headerBytes)), number });
      bytes.push(parts.bytes.slice());
      wholeLists.push(list);
    }
    const rowBytes = new Map<number, Uint8Array>();
    for (const row of rows.rows(1) as Iterable<{ doc: number; bytes: Uint8Array }>)
      rowBytes.set(row.doc, row.bytes.slice());
    const complete: FetchedList[] = [
      { docs: Int32Array.of(1, 30, 31, 32), contributions: Float64Array.of(9.5, 0.1, 0.1, 0.1), upper: 9.5 },
    ];
    const costs = { ...deferralCosts };
    try {
      deferralCosts.listBytesPerPosting = Number.POSITIVE_INFINITY;
      deferralCosts.twoStagesFrom = 1;
      deferralCosts.firstStage = 1;
      for (const summing of [true, false]) {
        const summed: number[][] = [];
        const read: number[][] = [];
        const result = await resolveDeferred(complete, headers, {
          entryCount,
          topK: 1,
          mask: new Uint8Array(entryCount).fill(1),
          rowBytesPerEntry: 1,
          readLists: async (indexes) => {
            read.push([...indexes]);
            return indexes.map((index) => wholeLists[index]!);
          },
          ...(summing
            ? {
                sumLists: async (
                  indexes: readonly number[],
                  onList: (index: number, bytes: Uint8Array) => void,
                ) => {
                  summed.push([...indexes]);
                  for (const index of indexes) onList(index, bytes[index]!);
                },
              }
            : {}),
          readRows: async (docs, onRow) => {
            for (const doc of docs) {
              const row = rowBytes.get(doc);
              if (row) onRow(doc, row);
            }
          },
        });
        // D deferred (bound 1 within 0.4 of 9.5), S read whole: summed, or as a list.
        expect(summed).toEqual(summing ? [[1]] : []);
        expect(read).toEqual(summing ? [] : [[1]]);
        expect(result.whole).toEqual([false, !summing]);
        expect(result.candidates).not.toBeNull();
        expect([0, 1].map((doc) => isCandidate(result.candidates!, doc))).toEqual([true, true]);
        expect(result.candidates!.count).toBe(2);
        const postings = (list: FetchedList | null | undefined) =>
          list ? [...list.docs].map((doc, position) => [doc, contribution(list, position)]) : [];
        expect(postings(result.lists[0])).toEqual([[1, 1]]);
        expect(postings(result.lists[1])).toEqual(summing ? [[0, 10]] : postings(wholeLists[1]));
      }
    } finally {
      Object.assign(deferralCosts, costs);
    }
  });
});
