import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { TermCounter } from "./termCounter.js";
import { TermDictionary } from "./termDictionary.js";

/** The ids of the tokens of `text` as indexing finds them (packed and lowercased by the ASCII tokenizer). */
function tokenIds(dictionary: TermDictionary, text: string): number[] {
  const counter = new TermCounter(dictionary);
  counter.countTexts([text], 1);
  return [...counter.fieldTerms];
}

describe("TermDictionary", () => {
  it("interns strings and the tokenizer's packed, lowercased tokens to the same ids, through growth", () => {
    const dictionary = new TermDictionary();
    expect(tokenIds(dictionary, "Alpha BETA gamma")).toEqual([0, 1, 2]);
    expect(dictionary.intern("alpha")).toBe(0);
    expect(dictionary.get("beta")).toBe(1);
    expect(dictionary.get("BETA")).toBe(-1);
    for (let index = 0; index < 20_000; index++) expect(dictionary.intern(`term${index}`)).toBe(index + 3);
    for (let index = 0; index < 20_000; index += 997) expect(dictionary.get(`term${index}`)).toBe(index + 3);
    expect(tokenIds(dictionary, "gamma, TERM19999!")).toEqual([2, 20_002]);
    expect(dictionary.size).toBe(20_003);
    expect(dictionary.term(0)).toBe("alpha");
    for (const name of ["__proto__", "constructor", "toString"])
      expect(dictionary.get(dictionary.term(dictionary.intern(name)))).toBeGreaterThan(0);
  });
});

describe("TermDictionary against a Map", () => {
  it("gives the same ids as a Map for any terms: long, short, control characters, non-ASCII, lookalikes", () => {
    const unit = fc.constantFrom(..."ab09zé\u0000 \u007fß".split(""));
    const term = fc.oneof(
      fc.string({ unit, maxLength: 6 }),
      fc.string({ unit: fc.constantFrom("a", "b"), minLength: 14, maxLength: 40 }),
      fc.string({ unit: "binary", maxLength: 20 }),
    );
    fc.assert(
      fc.property(fc.array(term, { maxLength: 200 }), (terms) => {
        const dictionary = new TermDictionary();
        const oracle = new Map<string, number>();
        for (const value of terms) {
          if (!oracle.has(value)) oracle.set(value, oracle.size);
          expect(dictionary.intern(value)).toBe(oracle.get(value));
        }
        expect(dictionary.size).toBe(oracle.size);
        for (const [value, id] of oracle) {
          expect(dictionary.get(value)).toBe(id);
          expect(dictionary.term(id)).toBe(value);
        }
        expect(dictionary.allTerms()).toEqual([...oracle.keys()]);
        // A token of ASCII letters and digits, capitalized in the text, finds the same id as its string.
        for (const value of oracle.keys()) {
          if (!/^[a-z0-9]+$/.test(value)) continue;
          const source = `-${value[0]!.toUpperCase()}${value.slice(1)}-`;
          expect(tokenIds(dictionary, source)).toEqual([oracle.get(value)]);
        }
      }),
      { seed: propertySeed("term dictionary"), numRuns: propertyRuns(300) },
    );
  });
});

describe("TermDictionary tables (index artifacts)", () => {
  it("a dictionary loaded from its tables finds every term under the same id and can still grow", () => {
    const original = new TermDictionary();
    const terms = ["a", "payouts", "x".repeat(40), "enablemultistepflow", "ünïcode", "日本", "z9"];
    for (let index = 0; index < 3000; index++) terms.push(`term${index}${"q".repeat(index % 30)}`);
    for (const term of terms) original.intern(term);
    const loaded = TermDictionary.fromTables(original.exportTables());
    expect(loaded.size).toBe(original.size);
    for (const term of terms) expect(loaded.get(term)).toBe(original.get(term));
    expect(loaded.get("missing")).toBe(-1);
    for (let id = 0; id < 50; id++) expect(loaded.term(id)).toBe(original.term(id));
    // Growing a loaded dictionary leaves the exported tables untouched.
    const added = loaded.intern("brandnewterm");
    expect(added).toBe(original.size);
    expect(original.get("brandnewterm")).toBe(-1);
    expect(loaded.get("brandnewterm")).toBe(added);
  });

  it("damaged tables are an error where they are read (a lookup, a term, the first added term), never an endless probe, a read out of bounds or another term's id", () => {
    const original = new TermDictionary();
    const terms = Array.from({ length: 100 }, (_, index) => `term${index}${"q".repeat(index % 25)}`);
    for (const term of terms) original.intern(term);
    const tables = original.exportTables();
    const corrupt = (message: string) => new TypeError(`corrupt: ${message}`);
    /** Every lookup either answers as the original or throws the loader's error; returns how many threw. */
    const lookupsThrown = (loaded: TermDictionary): number => {
      let thrown = 0;
      for (const term of [...terms, "missing", "m".repeat(30)]) {
        try {
          expect(loaded.get(term)).toBe(original.get(term));
        } catch (caught) {
          expect(caught).toBeInstanceOf(TypeError);
          thrown++;
        }
      }
      return thrown;
    };
    // Every slot used: a lookup that misses finds no empty slot to stop at; adding a term checks the table whole.
    const full = TermDictionary.fromTables(
      { ...tables, table: tables.table.map((value, index) => (index % 2 === 1 ? 1 : value)) },
      corrupt,
    );
    expect(() => full.get("missing")).toThrow(TypeError);
    expect(() => full.intern("added")).toThrow(TypeError);
    // Every used slot naming a missing term: each lookup that reads one throws.
    const badIds = TermDictionary.fromTables(
      {
        ...tables,
        table: tables.table.map((value, index) => (index % 2 === 1 && value !== 0 ? 9999 : value)),
      },
      corrupt,
    );
    expect(lookupsThrown(badIds)).toBeGreaterThanOrEqual(terms.length);
    expect(() => badIds.intern("added")).toThrow(TypeError);
    // A record with an impossible length, and a long term's tail outside the pool: reading them throws.
    const longId = terms.findIndex((term) => term.length > 16);
    const badRecords = TermDictionary.fromTables(
      {
        ...tables,
        records: tables.records.map((value, index) =>
          index === 0 ? 5000 : index === longId * 8 + 5 ? 1_000_000 : value,
        ),
      },
      corrupt,
    );
    expect(() => badRecords.term(0)).toThrow(TypeError);
    expect(() => badRecords.term(longId)).toThrow(TypeError);
    expect(() => badRecords.get(terms[longId]!)).toThrow(TypeError);
    expect(lookupsThrown(badRecords)).toBe(2);
    expect(() => badRecords.intern("added")).toThrow(TypeError);
    // Sizes that cannot be right, and non-ASCII terms that do not match their records, are refused at once.
    expect(() => TermDictionary.fromTables({ ...tables, table: tables.table.subarray(0, 6) })).toThrow(
      RangeError,
    );
    expect(() => TermDictionary.fromTables({ ...tables, nonAscii: [[0, "ü"]] })).toThrow(RangeError);
    // Intact tables: nothing throws, and the first added term copies them (the exported ones stay as they were).
    const intact = TermDictionary.fromTables(tables, corrupt);
    expect(lookupsThrown(intact)).toBe(0);
    const tableBefore = tables.table.slice();
    expect(intact.intern("added")).toBe(terms.length);
    expect(tables.table).toEqual(tableBefore);
  });
});
