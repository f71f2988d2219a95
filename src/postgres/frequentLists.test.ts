/**
 * The frequent rows (`frequentLists.ts`) against a plain transposition of the lists, and the coded lists' headers
 * (`wireLists.ts`) against the whole lists they start: what a turn reads when it defers frequent lists.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { BinaryArrayError } from "./binaryArrays.js";
import { FREQUENT_FROM_ENTRIES, FrequentRows, frequentMinimum, readFrequentRow } from "./frequentLists.js";
import { decodeWireHeader, decodeWireList, encodeWireListParts } from "./wireLists.js";

/** Random lists over `entryCount` entries: ascending distinct documents, codes below 65,536. */
const listsArbitrary = fc.integer({ min: 1, max: 300 }).chain((entryCount) =>
  fc.record({
    entryCount: fc.constant(entryCount),
    lists: fc.array(
      fc
        .uniqueArray(fc.integer({ min: 0, max: entryCount - 1 }), { minLength: 1, maxLength: entryCount })
        .chain((docs) =>
          fc.record({
            docs: fc.constant(Int32Array.from(docs.sort((left, right) => left - right))),
            codes: fc.array(fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 65_535 })), {
              minLength: docs.length,
              maxLength: docs.length,
            }),
          }),
        ),
      { maxLength: 40 },
    ),
  }),
);

function allRows(rows: FrequentRows, minimum: number) {
  const generator = rows.rows(minimum);
  const written = new Map<number, Uint8Array>();
  for (;;) {
    const next = generator.next();
    if (next.done) return { written, statistics: next.value };
    expect(written.has(next.value.doc)).toBe(false);
    written.set(next.value.doc, next.value.bytes.slice());
  }
}

describe("frequent rows", () => {
  it("hold each entry's postings of the frequent lists, in list order, read back for any wanted lists", () => {
    fc.assert(
      fc.property(
        listsArbitrary,
        fc.array(fc.integer({ min: 0, max: 45 })),
        ({ entryCount, lists }, asked) => {
          const rows = new FrequentRows(entryCount);
          lists.forEach((list, number) => {
            expect(rows.add(list.docs, Uint16Array.from(list.codes))).toBe(number);
          });
          const { written, statistics } = allRows(rows, 7);
          // The oracle: per entry, (list, code) pairs in list order.
          const expected = new Map<number, [number, number][]>();
          let postings = 0;
          lists.forEach((list, number) => {
            list.docs.forEach((doc, position) => {
              const pairs = expected.get(doc) ?? [];
              pairs.push([number, list.codes[position]!]);
              expected.set(doc, pairs);
              postings++;
            });
          });
          expect([...written.keys()]).toEqual([...expected.keys()].sort((left, right) => left - right));
          expect(statistics).toMatchObject({ minimumDocuments: 7, lists: lists.length, postings });
          expect(statistics.bytes).toBe([...written.values()].reduce((sum, bytes) => sum + bytes.length, 0));
          const wanted = Int32Array.from(new Set(asked)).sort();
          for (const [doc, bytes] of written) {
            const found: [number, number][] = [];
            readFrequentRow(bytes, wanted, (index, code) => found.push([wanted[index]!, code]));
            expect(found).toEqual(expected.get(doc)!.filter(([number]) => wanted.includes(number)));
          }
        },
      ),
      { seed: propertySeed("frequent-rows"), numRuns: propertyRuns(200) },
    );
  });

  it("written a block of entries at a time across block boundaries", () => {
    const entryCount = (1 << 15) * 2 + 5;
    const rows = new FrequentRows(entryCount);
    const every = Int32Array.from({ length: entryCount }, (_, doc) => doc);
    rows.add(
      every,
      Uint16Array.from(every, (doc) => doc % 65_536),
    );
    const tail = Int32Array.from([1 << 15, entryCount - 1]);
    rows.add(tail, Uint16Array.of(3, 4));
    const { written } = allRows(rows, 1);
    expect(written.size).toBe(entryCount);
    const codesOf = (doc: number) => {
      const found: number[] = [];
      readFrequentRow(written.get(doc)!, Int32Array.of(0, 1), (index, code) => found.push(index, code));
      return found;
    };
    expect(codesOf(0)).toEqual([0, 0]);
    expect(codesOf(1 << 15)).toEqual([0, (1 << 15) % 65_536, 1, 3]);
    expect(codesOf(entryCount - 1)).toEqual([0, (entryCount - 1) % 65_536, 1, 4]);
  });

  it("refuses malformed rows with a BinaryArrayError, never a wrong posting", () => {
    const wanted = Int32Array.of(0, 1, 2);
    const read = (bytes: number[]) => readFrequentRow(Uint8Array.from(bytes), wanted, () => {});
    expect(() => read([1])).toThrow(BinaryArrayError); // a number without its code
    expect(() => read([1, 0x80])).toThrow(BinaryArrayError); // a truncated code
    expect(() => read([1, 0, 0, 0])).toThrow(BinaryArrayError); // a gap of 0: not ascending
    expect(() => read([1, 0xff, 0xff, 0xff, 0x01])).toThrow(BinaryArrayError); // an overlong code
    expect(() => read([])).not.toThrow();
  });

  it("are written by default from 262,144 entries on, for lists of a sixteenth of them", () => {
    expect(frequentMinimum(FREQUENT_FROM_ENTRIES - 1, undefined)).toBeNull();
    expect(frequentMinimum(1_000_000, undefined)).toBe(62_500);
    expect(frequentMinimum(10, 3)).toBe(3);
    expect(frequentMinimum(1_000_000, 0)).toBeNull();
  });
});

describe("coded lists' headers", () => {
  it("give a coded list's count, distinct values and bound, as the whole list has them", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 5_000 }), { minLength: 2, maxLength: 600 }),
        fc.array(fc.double({ min: 0, max: 40, noNaN: true }), { minLength: 1, maxLength: 300 }),
        (docs, pool) => {
          docs.sort((left, right) => left - right);
          const contributions = Float64Array.from(docs, (_, index) => pool[(index * 7) % pool.length]!);
          const parts = encodeWireListParts(docs, contributions);
          const whole = decodeWireList(parts.bytes.slice(), 5_001);
          if (parts.codes === null) {
            expect(() => decodeWireHeader(parts.bytes.slice(0, parts.headerBytes))).toThrow(BinaryArrayError);
            return;
          }
          const header = decodeWireHeader(parts.bytes.slice(0, parts.headerBytes));
          expect(header.count).toBe(docs.length);
          expect([...header.values]).toEqual([...whole.contributions]);
          expect(header.upper).toBe(whole.upper);
          expect(header.width).toBe(whole.codes instanceof Uint8Array ? 1 : 2);
          expect([...parts.codes]).toEqual([...whole.codes!]);
          // A header cut short or with a byte too many is refused.
          expect(() => decodeWireHeader(parts.bytes.slice(0, parts.headerBytes - 1))).toThrow(
            BinaryArrayError,
          );
          expect(() => decodeWireHeader(parts.bytes.slice(0, parts.headerBytes + 1))).toThrow(
            BinaryArrayError,
          );
        },
      ),
      { seed: propertySeed("wire-headers"), numRuns: propertyRuns(200) },
    );
  });
});
