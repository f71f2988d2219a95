import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { MAX_TOKEN_LENGTH } from "./defaults.js";
import { normalizePhrases, normalizeText, phraseKey, tokenize } from "./normalize.js";

describe("normalizeText on NeuroLink's examples", () => {
  it.each([
    ["enableMultiStepFlow", "enable multi step flow"],
    ["enableURLReading", "enable url reading"],
    ["customAccessOptionsV2Enabled", "custom access options v2 enabled"],
    ["HTTPServer", "http server"],
    ["XMLHttpRequest", "xml http request"],
    ["OAuth2Token", "o auth2 token"],
    ["IDs", "i ds"],
    ["iOS", "i os"],
    ["eBay", "e bay"],
    ["gemini3Flash", "gemini3 flash"],
    ["A1B2", "a1 b2"],
    ["ABc", "a bc"],
    ["abc123DEF", "abc123 def"],
    ["ﬁle", "file"],
    ["ＡＢＣ", "abc"],
    ["①", "1"],
    ["x²", "x2"],
    ["Ⅻ", "xii"],
    ["Café Crème", "cafe creme"],
    ["İstanbul", "istanbul"],
    ["Straße", "straße"],
    ["don't", "don t"],
    ["日本語テキスト", "日本語テキスト"],
    ["a_b-c.d/e", "a b c d e"],
    ["", ""],
  ])("%s → %s", (input, expected) => {
    expect(normalizeText(input)).toBe(expected);
  });

  it("loses Indic vowel signs the same way at index and query time", () => {
    expect(normalizeText("मराठी")).toBe("मरठ");
  });

  it("is idempotent", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        const once = normalizeText(text);
        expect(normalizeText(once)).toBe(once);
      }),
      { seed: propertySeed("normalizeText idempotent"), numRuns: propertyRuns(500) },
    );
  });

  it("stays linear on long runs of capitals and mismatching tails (no ReDoS)", () => {
    // The seed's `(\p{Lu}+)(\p{Lu}\p{Ll})` backtracks quadratically here; 50k capitals would take minutes.
    const capitals = `${"A".repeat(50_000)}!`;
    expect(normalizeText(capitals)).toBe("a".repeat(50_000));
    expect(tokenize(`${"Ab".repeat(25_000)}1`)).toHaveLength(25_000);
    expect(normalizeText(`${"É".repeat(50_000)}a`)).toBe(`${"e".repeat(49_999)} ea`);
  });

  it("produces well-formed output from lone surrogates and control characters", () => {
    const text = "a\uD800b\uDC00c\u0000d\u200Fe\u200Df";
    const normalized = normalizeText(text);
    expect(normalized.isWellFormed()).toBe(true);
    expect(normalized).toBe("a b c d e f");
  });
});

describe("tokenize", () => {
  it("splits on single spaces and returns [] for empty input", () => {
    expect(tokenize("gemini-3-flash")).toEqual(["gemini", "3", "flash"]);
    expect(tokenize("")).toEqual([]);
    expect(tokenize("   ...   ")).toEqual([]);
  });

  it("the ASCII fast path equals the Unicode pipeline", () => {
    const asciiText = fc.string({
      unit: fc.constantFrom(..."aAbBzZ09 _-./'\t\n\u0000\u007fQxX".split("")),
      maxLength: 40,
    });
    fc.assert(
      fc.property(asciiText, (text) => {
        const reference = normalizeText(text);
        expect(tokenize(text)).toEqual(reference === "" ? [] : reference.split(" "));
      }),
      { seed: propertySeed("tokenize ascii fast path"), numRuns: propertyRuns(2000) },
    );
  });

  it("the segmented path for mixed text equals the Unicode pipeline on the whole text", () => {
    const interesting = [..."aZ09 -_./'\t<>&"].concat([
      "é",
      "É",
      "e\u0301",
      "ﬁ",
      "Ａ",
      "ａ",
      "①",
      "²",
      "Ⅻ",
      "İ",
      "ß",
      "Σ",
      "σ",
      "ς",
      "β",
      "–",
      "±",
      "日",
      "本",
      "\u0338",
      "\u200D",
      "\u200B",
      "\u00AD",
      "\uD83D\uDE00",
      "\uD800",
      "\uDC00",
      "𝒳",
      "ℂ",
      "℀",
      "½",
      "\u0000",
      "Ǆ",
      "ǅ",
      "ǆ",
      "ﬀ",
      "Ω",
      "K",
    ]);
    const mixed = fc.array(fc.constantFrom(...interesting), { maxLength: 40 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(fc.oneof(mixed, fc.string({ unit: "binary", maxLength: 40 })), (text) => {
        const reference = normalizeText(text);
        expect(tokenize(text)).toEqual(reference === "" ? [] : reference.split(" "));
      }),
      { seed: propertySeed("tokenize segmented path"), numRuns: propertyRuns(3000) },
    );
  });

  it("cuts tokens to the length cap without splitting a surrogate pair", () => {
    const long = "x".repeat(MAX_TOKEN_LENGTH * 3);
    expect(tokenize(`${long} y`)).toEqual(["x".repeat(MAX_TOKEN_LENGTH), "y"]);
    const astral = `${"a".repeat(MAX_TOKEN_LENGTH - 1)}${"𝒳".repeat(10)}`;
    const [token] = tokenize(astral);
    expect(token!.length).toBeLessThanOrEqual(MAX_TOKEN_LENGTH);
    expect(token!.isWellFormed()).toBe(true);
  });

  it("handles a one-million-character token", () => {
    const tokens = tokenize(`start ${"q".repeat(1_000_000)} end`);
    expect(tokens).toEqual(["start", "q".repeat(MAX_TOKEN_LENGTH), "end"]);
  });
});

describe("phrases", () => {
  it("phraseKey equals the tokens joined by spaces (native fast path and fallback agree)", () => {
    const phraseText = fc.string({
      unit: fc.constantFrom(..."aAbBzZ09 _-./'\t\nQxXé\u0301".split("")),
      maxLength: 40,
    });
    const longRun = fc
      .tuple(fc.constantFrom("a", "A", "1"), fc.integer({ min: 120, max: 140 }), phraseText)
      .map(([unit, count, tail]) => unit.repeat(count) + tail);
    fc.assert(
      fc.property(fc.oneof(phraseText, longRun), (text) => {
        expect(phraseKey(text)).toBe(tokenize(text).join(" "));
      }),
      { seed: propertySeed("phraseKey fast path"), numRuns: propertyRuns(3000) },
    );
    for (const text of ["HTTPServer", "fooBar", "ABc", " Mixed  Case-Title. ", "plain words", "v2Beta", ""])
      expect(phraseKey(text)).toBe(tokenize(text).join(" "));
  });

  it("normalizes, drops empties and duplicates, keeps order", () => {
    expect(normalizePhrases(["Multi-Step Flow", "multi step flow", ""])).toEqual(["multi step flow"]);
    expect(normalizePhrases(["b", "a", "B"])).toEqual(["b", "a"]);
  });
  it("turns ids into phrases", () => {
    expect(phraseKey("account.multi-step-flow")).toBe("account multi step flow");
    expect(phraseKey("settings.multi-step-flow")).toBe("settings multi step flow");
  });
});
