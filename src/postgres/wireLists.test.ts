/** The wire form of posting lists: every document and contribution back bit for bit, and malformed bytes refused. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { BinaryArrayError } from "./binaryArrays.js";
import { codedList } from "./codedLists.js";
import { type FetchedList, listUpperBound } from "./postingCache.js";
import { addWireList, addWireLists, decodeWireList, encodeWireList } from "./wireLists.js";

const NAN_WITH_PAYLOAD = new Float64Array(new BigInt64Array([0x7ff8_0000_0000_1234n]).buffer)[0]!;
const NEGATIVE_NAN = new Float64Array(new BigInt64Array([-0x0008_0000_0000_0001n]).buffer)[0]!;

/** The bits of a float64, so that -0 and 0, and NaN payloads, compare as different. */
function bitsOf(value: number): bigint {
  return new BigInt64Array(Float64Array.of(value).buffer)[0]!;
}

/** A list as the reader compares it: documents, each posting's contribution bits, codes, distinct values, bound. */
function shape(list: FetchedList) {
  return {
    docs: Array.from(list.docs),
    read: Array.from(list.docs, (_, position) =>
      bitsOf(list.contributions[list.codes === undefined ? position : list.codes[position]!]!),
    ),
    codes: list.codes === undefined ? undefined : [list.codes.constructor.name, ...list.codes],
    values: Array.from(list.contributions, bitsOf),
    upper: list.upper,
  };
}

/** Through the wire: encoded, copied out of the encoder's scratch (as a COPY row is), decoded. */
function roundTrip(docs: number[], contributions: Float64Array, entryCount: number): FetchedList {
  return decodeWireList(Uint8Array.from(encodeWireList(Int32Array.from(docs), contributions)), entryCount);
}

const specialValues = [
  0,
  -0,
  Number.NaN,
  NAN_WITH_PAYLOAD,
  NEGATIVE_NAN,
  1e-310,
  -2.5,
  Number.POSITIVE_INFINITY,
];

describe("wire lists", () => {
  it("decode to the reader's coded form of the same list, bit for bit (property)", () => {
    const seed = propertySeed("wire-lists");
    const listArbitrary = fc
      .record({
        // Gaps: mostly small (frequent terms), some long (rare terms), some near the 2^31 limit.
        gaps: fc.array(
          fc.oneof(
            { weight: 6, arbitrary: fc.integer({ min: 1, max: 3 }) },
            { weight: 3, arbitrary: fc.integer({ min: 1, max: 300_000 }) },
            { weight: 1, arbitrary: fc.integer({ min: 1, max: 0x7fff_ffff }) },
          ),
          { minLength: 1, maxLength: 600 },
        ),
        // A few values (coded in one byte), many (two bytes), or all distinct (as they are).
        pool: fc.oneof(
          fc.array(fc.oneof(fc.constantFrom(...specialValues), fc.double()), { minLength: 1, maxLength: 8 }),
          fc.array(fc.double(), { minLength: 257, maxLength: 400 }),
          fc.constant(null),
        ),
        picks: fc.array(fc.nat(), { minLength: 600, maxLength: 600 }),
      })
      .map(({ gaps, pool, picks }) => {
        const docs: number[] = [];
        let doc = -1;
        for (const gap of gaps) {
          if (doc + gap > 0x7fff_fffe) break;
          doc += gap;
          docs.push(doc);
        }
        const contributions = Float64Array.from(docs, (_, position) =>
          pool === null ? position / 7 - 3 : pool[picks[position]! % pool.length]!,
        );
        return { docs, contributions };
      });
    fc.assert(
      fc.property(listArbitrary, ({ docs, contributions }) => {
        const entryCount = docs[docs.length - 1]! + 1;
        const decoded = roundTrip(docs, contributions, entryCount);
        const fetched: FetchedList = {
          docs: Int32Array.from(docs),
          contributions,
          upper: listUpperBound(contributions),
        };
        expect(shape(decoded)).toEqual(shape(codedList(fetched)));
        expect(Object.is(decoded.upper, listUpperBound(contributions))).toBe(true);
        // One entry fewer: the last document names a missing entry.
        expect(() => roundTrip(docs, contributions, entryCount - 1)).toThrow(BinaryArrayError);
        // Summed without its arrays (lists over up to 2^14 entries: a total per entry): each entry's total is what
        // adding the decoded postings gives, bit for bit; one entry fewer is refused.
        if (entryCount <= 1 << 14) {
          const bytes = Uint8Array.from(encodeWireList(Int32Array.from(docs), contributions));
          const start = (doc: number) => (doc % 5) - 2;
          const totals = Float64Array.from({ length: entryCount }, (_, doc) => start(doc));
          expect(addWireList(bytes, totals)).toBe(docs.length);
          const expected = Float64Array.from({ length: entryCount }, (_, doc) => start(doc));
          decoded.docs.forEach((doc, position) => {
            expected[doc]! += decoded.contributions[decoded.codes ? decoded.codes[position]! : position]!;
          });
          const differing = [...totals.keys()].filter(
            (doc) => bitsOf(totals[doc]!) !== bitsOf(expected[doc]!),
          );
          expect(differing).toEqual([]);
          expect(() => addWireList(bytes, new Float64Array(entryCount - 1))).toThrow(BinaryArrayError);
          // Several lists by blocks of entries (here the list twice, blocks of 5): the same additions in the same
          // order per entry as list by list, so the same totals bit for bit.
          const twice = Float64Array.from({ length: entryCount }, (_, doc) => start(doc));
          expect(addWireLists([bytes, bytes], twice, 5)).toEqual([docs.length, docs.length]);
          addWireList(bytes, totals);
          expect([...twice.keys()].filter((doc) => bitsOf(twice[doc]!) !== bitsOf(totals[doc]!))).toEqual([]);
        }
      }),
      { seed, numRuns: propertyRuns(200) },
    );
  });

  it("takes far fewer bytes than packed lists; more than 65,536 distinct values stay as they are", () => {
    const docs = Array.from({ length: 10_000 }, (_, index) => index * 3);
    const few = Float64Array.from(docs, (_, index) => [0.5, 1.25, 2.75][index % 3]!);
    // 3 distinct values: kind, counts, 24 bytes of values, a code and a one-byte gap per posting.
    expect(encodeWireList(Int32Array.from(docs), few).byteLength).toBeLessThan(10_000 * 2 + 40);
    const docsMany = Array.from({ length: 70_000 }, (_, index) => index);
    const many = Float64Array.from(docsMany, (_, index) => 1 + index / 3);
    const plain = roundTrip(docsMany, many, 70_000);
    expect(plain.codes).toBeUndefined();
    expect(Array.from(plain.contributions, bitsOf)).toEqual(Array.from(many, bitsOf));
    const twoBytes = Float64Array.from(docsMany, (_, index) => 1 + (index % 40_000) / 7);
    expect(roundTrip(docsMany, twoBytes, 70_000).codes).toBeInstanceOf(Uint16Array);
    const single = roundTrip([5], Float64Array.of(-0), 6);
    expect(single.codes).toBeUndefined();
    expect(Object.is(single.contributions[0], -0)).toBe(true);
  });

  it("refuses malformed bytes: every truncation, a trailing byte, a code naming no value, a zero gap", () => {
    const docs = [0, 1, 200, 70_000, 70_001];
    const bytes = Uint8Array.from(encodeWireList(Int32Array.from(docs), Float64Array.of(1, 2, 1, 2, 1)));
    expect(Array.from(decodeWireList(bytes, 70_002).docs)).toEqual(docs);
    // Each malformed form refused by the decoder and by the sum alike.
    const refused = (malformed: Uint8Array, entryCount = 70_002) => {
      expect(() => decodeWireList(malformed, entryCount)).toThrow(BinaryArrayError);
      expect(() => addWireList(malformed, new Float64Array(entryCount))).toThrow(BinaryArrayError);
      expect(() => addWireLists([bytes, malformed], new Float64Array(entryCount), 7)).toThrow(
        BinaryArrayError,
      );
    };
    expect(addWireList(bytes, new Float64Array(70_002))).toBe(5);
    for (let length = 0; length < bytes.length; length++) refused(bytes.subarray(0, length));
    refused(Uint8Array.of(...bytes, 1));
    // Kind 1, 5 postings, 2 values (16 bytes), then the codes: the third names a third value.
    const badCode = Uint8Array.from(bytes);
    expect(badCode[0]).toBe(1);
    badCode[3 + 16 + 2] = 2;
    refused(badCode);
    // The second document's gap (1) made 0: not ascending.
    const zeroGap = Uint8Array.from(bytes);
    zeroGap[3 + 16 + 5 + 1] = 0;
    refused(zeroGap);
    refused(Uint8Array.of(7, 1, 1, 1), 10);
  });
});
