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
  });

  it("returns the candidates' whole postings and keeps the best K among the candidates, in one or two rounds, rows in any order", async () => {
    const costs = { ...deferralCosts };
    try {
      await fc.assert(
        fc.asyncProperty(instance, async ({ lists, topK, stages, reversed }) => {
          deferralCosts.share = Number.POSITIVE_INFINITY;
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
});
