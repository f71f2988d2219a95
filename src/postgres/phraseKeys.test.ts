import { describe, expect, it } from "vitest";
import { PhraseKeys, phraseGrams } from "./phraseKeys.js";

describe("phrase keys", () => {
  it("numbers the n-grams by size, then start, as size × (tokens + 1) + start", () => {
    expect(phraseGrams(["a", "b", "c"], 2)).toEqual([
      { ord: 4, key: "a" },
      { ord: 5, key: "b" },
      { ord: 6, key: "c" },
      { ord: 8, key: "a b" },
      { ord: 9, key: "b c" },
    ]);
    expect(phraseGrams(["a", "b"], 5)!.map((gram) => gram.key)).toEqual(["a", "b", "a b"]);
    expect(phraseGrams(["a"], 0)).toEqual([]);
  });

  it("refuses to spell out more characters than its budget: the database builds those n-grams", () => {
    const tokens = Array.from({ length: 1_024 }, () => "t0");
    expect(phraseGrams(tokens, 1_024)).toBeNull();
    // Within the budget: every n-gram (3 tokens of 2 letters, up to 3 words: 3 + 2 + 1 n-grams, each word counted
    // with a space: 9 + 12 + 9 characters).
    expect(phraseGrams(["t0", "t0", "t0"], 3, 30)).toHaveLength(6);
    expect(phraseGrams(["t0", "t0", "t0"], 3, 29)).toBeNull();
    // A long key does not refuse a short query.
    expect(phraseGrams(["t0", "t1"], 1_024)).toHaveLength(3);
  });

  it("keeps each key's answer, a key without rows as naming no entry, and asks only for keys not kept", () => {
    const keys = new PhraseKeys();
    const grams = phraseGrams(["pay", "out", "pay"], 2)!;
    const first = keys.lookup(grams);
    expect(first.missing).toEqual(["pay", "out", "pay out", "out pay"]);
    first.known.clear();
    keys.record(
      first.missing,
      [
        { kind: 1, ord: 3, doc: 7 },
        { kind: 2, ord: 1, doc: 4 },
        { kind: 1, ord: 1, doc: 2 },
      ],
      first.known,
    );
    // "pay" occurs twice: both of its n-grams carry its hits, under their own numbers.
    expect(PhraseKeys.hits(grams, first.known)).toEqual([
      { kind: 1, ord: 4, doc: 2 },
      { kind: 2, ord: 4, doc: 4 },
      { kind: 1, ord: 6, doc: 2 },
      { kind: 2, ord: 6, doc: 4 },
      { kind: 1, ord: 8, doc: 7 },
    ]);
    const again = keys.lookup(phraseGrams(["out", "pay", "now"], 2)!);
    expect(again.missing).toEqual(["now", "pay now"]);
    expect(again.known.get("out")).toBeNull();
    expect(again.known.get("out pay")).toBeNull();
    expect(again.known.get("pay")).toEqual({ exact: [2], alias: [4] });
  });
});
