import { describe, expect, it } from "vitest";
import { TermDictionary } from "./termDictionary.js";

describe("TermDictionary", () => {
  it("interns strings and lowercased ASCII ranges to the same ids, through growth", () => {
    const dictionary = new TermDictionary();
    const source = "Alpha BETA gamma";
    expect(dictionary.internRange(source, 0, 5)).toBe(0);
    expect(dictionary.intern("alpha")).toBe(0);
    expect(dictionary.internRange(source, 6, 10)).toBe(1);
    expect(dictionary.get("beta")).toBe(1);
    expect(dictionary.get("BETA")).toBe(-1);
    for (let index = 0; index < 20_000; index++) expect(dictionary.intern(`term${index}`)).toBe(index + 2);
    for (let index = 0; index < 20_000; index += 997) expect(dictionary.get(`term${index}`)).toBe(index + 2);
    expect(dictionary.internRange("xx TERM19999 yy", 3, 12)).toBe(20_001);
    expect(dictionary.size).toBe(20_002);
    expect(dictionary.term(0)).toBe("alpha");
    for (const name of ["__proto__", "constructor", "toString"])
      expect(dictionary.get(dictionary.term(dictionary.intern(name)))).toBeGreaterThan(0);
  });
});
