/** Coded posting lists: every contribution kept bit for bit, fewer bytes, and the scorer ranks them as fetched. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { type ScoringList, scoreLists, sumBreakdown } from "../knowledge/scoring.js";
import { codedList } from "./codedLists.js";
import { type FetchedList, listUpperBound, termPostings } from "./postingCache.js";

/** A fetched list of `docs` (ascending) and `contributions`. */
function fetched(docs: number[], contributions: number[]): FetchedList {
  const values = Float64Array.from(contributions);
  return { docs: Int32Array.from(docs), contributions: values, upper: listUpperBound(values) };
}

/** The bits of a float64, so that -0 and 0, and NaN payloads, compare as different. */
function bitsOf(value: number): bigint {
  return new BigInt64Array(Float64Array.of(value).buffer)[0]!;
}

/** Each posting's contribution as the scorer reads it (`contributions[codes[position]]` when coded). */
function readBack(list: ScoringList): number[] {
  return Array.from(list.docs, (_, position) =>
    list.codes === undefined ? list.contributions[position]! : list.contributions[list.codes[position]!]!,
  );
}

const NAN_WITH_PAYLOAD = new Float64Array(new BigInt64Array([0x7ff8_0000_0000_1234n]).buffer)[0]!;

describe("codedList", () => {
  it("keeps every contribution bit for bit, one byte per posting for up to 256 distinct values", () => {
    const pool = [0.5, -0, 0, Number.NaN, NAN_WITH_PAYLOAD, 1e-300, Number.POSITIVE_INFINITY, 2.25];
    const contributions = Array.from({ length: 1_000 }, (_, index) => pool[(index * 7) % pool.length]!);
    const list = fetched(
      Array.from({ length: 1_000 }, (_, index) => index * 3),
      contributions,
    );
    const coded = codedList(list);
    expect(coded.codes).toBeInstanceOf(Uint8Array);
    expect(coded.contributions).toHaveLength(pool.length);
    expect(coded.docs).toBe(list.docs);
    expect(coded.upper).toBe(list.upper);
    expect(readBack(coded).map(bitsOf)).toEqual(contributions.map(bitsOf));
    // 1 + 8 × 8 / 1,000 bytes per posting of contributions, where a fetched list takes 8.
    expect(termPostings([coded]).bytes).toBeLessThan(termPostings([list]).bytes - 6_000);
  });

  it("codes up to 65,536 distinct values in two bytes; keeps a list as fetched when coding would not shrink it", () => {
    const many = Array.from({ length: 100_000 }, (_, index) => 1 + (index % 40_000) / 7);
    const docs = Array.from({ length: 100_000 }, (_, index) => index);
    const coded = codedList(fetched(docs, many));
    expect(coded.codes).toBeInstanceOf(Uint16Array);
    expect(readBack(coded).map(bitsOf)).toEqual(many.map(bitsOf));
    const tooMany = Array.from({ length: 70_000 }, (_, index) => 1 + index / 3);
    const kept = fetched(docs.slice(0, 70_000), tooMany);
    expect(codedList(kept)).toBe(kept);
    const allDistinct = fetched([1, 2, 3], [0.1, 0.2, 0.3]);
    expect(codedList(allDistinct)).toBe(allDistinct);
  });

  it("codes list after list exactly, across the hash table's growth and its stamps' wrap-around", () => {
    // 17,000 lists (the table's stamps wrap after 16,384 lists), each with its own values, some growing the table.
    for (let index = 0; index < 17_000; index++) {
      const distinctValues = index % 499 === 0 ? 2_000 : 1 + (index % 20);
      const contributions = Array.from(
        { length: distinctValues * 3 },
        (_, position) => index + (position % distinctValues) / 8,
      );
      const coded = codedList(
        fetched(
          Array.from(contributions, (_, position) => position),
          contributions,
        ),
      );
      expect(coded.contributions).toHaveLength(distinctValues);
      const back = readBack(coded);
      for (let position = 0; position < back.length; position++)
        if (back[position] !== contributions[position]) expect(back[position]).toBe(contributions[position]);
    }
  });

  it("ranks coded lists as it ranks them fetched: same documents, scores and breakdowns bit for bit (property)", () => {
    const seed = propertySeed("coded-lists");
    const documentCount = 400;
    const listArbitrary = fc.record({
      present: fc.array(fc.boolean(), { minLength: documentCount, maxLength: documentCount }),
      density: fc.constantFrom(0.02, 0.2, 0.7),
      // A few values, so that lists are coded (ties and repeated sums included).
      pool: fc.array(fc.constantFrom(0.25, 0.5, 0.75, 1.1, 2.3, 3.7, 0.1 + 0.2, 1 / 3), {
        minLength: 1,
        maxLength: 6,
      }),
      picks: fc.array(fc.nat(), { minLength: documentCount, maxLength: documentCount }),
    });
    const caseArbitrary = fc.record({
      lists: fc.array(listArbitrary, { minLength: 1, maxLength: 30 }),
      topK: fc.integer({ min: 1, max: 12 }),
      first: fc.integer({ min: 1, max: 64 }),
      later: fc.integer({ min: 1, max: 128 }),
      masked: fc.boolean(),
      fields: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 30, maxLength: 30 }),
    });
    fc.assert(
      fc.property(caseArbitrary, (testCase) => {
        const lists: FetchedList[] = [];
        for (const [index, spec] of testCase.lists.entries()) {
          const docs: number[] = [];
          const contributions: number[] = [];
          for (let doc = 0; doc < documentCount; doc++) {
            // Keep roughly `density` of the documents (from the drawn booleans and picks).
            if (!spec.present[doc] && (spec.picks[doc]! % 100) / 100 >= spec.density) continue;
            docs.push(doc);
            contributions.push(spec.pool[(spec.picks[doc]! + index) % spec.pool.length]!);
          }
          if (docs.length > 0) lists.push(fetched(docs, contributions));
        }
        if (lists.length === 0) return;
        const coded = lists.map(codedList);
        const fields = Int32Array.from(lists, (_, index) => testCase.fields[index]!).sort();
        const ranks = Int32Array.from({ length: documentCount }, (_, doc) => doc);
        const mask = testCase.masked
          ? Uint8Array.from({ length: documentCount }, (_, doc) => (doc % 3 === 0 ? 0 : 1))
          : null;
        const rank = (postings: FetchedList[], windows: Parameters<typeof scoreLists>[5]) => {
          const positions = new Map<number, Int32Array>();
          const ranked = scoreLists(
            {
              postings,
              starts: new Int32Array(postings.length),
              ends: Int32Array.from(postings, (list) => list.docs.length),
              upper: Float64Array.from(postings, (list) => list.upper),
            },
            documentCount,
            ranks,
            testCase.topK,
            mask,
            windows,
            positions,
          );
          return ranked.map(({ doc, score }) => ({
            doc,
            score,
            fields: sumBreakdown(postings, fields, positions.get(doc)!),
          }));
        };
        const expected = rank(lists, { first: documentCount, later: documentCount, pruning: false });
        for (const layout of ["dense", "sparse"] as const)
          for (const alwaysProbe of [false, true]) {
            const windows = {
              first: testCase.first,
              later: testCase.later,
              layout,
              alwaysProbe,
              pruning: true,
            };
            expect(rank(coded, windows)).toEqual(expected);
            expect(rank(lists, windows)).toEqual(expected);
          }
      }),
      { seed, numRuns: propertyRuns(80) },
    );
  });
});
