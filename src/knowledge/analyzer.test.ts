import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import {
  createEnglishAnalyzer,
  ENGLISH_EXTENDED_STOP_WORDS,
  ENGLISH_STOP_WORDS,
  getAnalyzer,
  porterStem,
} from "./analyzer.js";
import { resolveRetrieval } from "./config.js";
import { validateGroundingConfig } from "./configValidation.js";
import { buildIndexSnapshot } from "./knowledgeIndex.js";
import { resolveEntry } from "./resolve.js";
import { retrieve } from "./retrieval.js";

/**
 * Porter (1980) full-stemmer outputs, checked by hand against the paper's rules (each word traced through steps
 * 1a-5) and the reference implementation's departures (-bli → -ble, -logi → -log).
 */
const PORTER_CASES: [string, string][] = [
  // Step 1a
  ["caresses", "caress"],
  ["ponies", "poni"],
  ["ties", "ti"],
  ["caress", "caress"],
  ["cats", "cat"],
  // Step 1b
  ["feed", "feed"],
  ["agreed", "agre"],
  ["plastered", "plaster"],
  ["bled", "bled"],
  ["motoring", "motor"],
  ["sing", "sing"],
  ["conflated", "conflat"],
  ["troubled", "troubl"],
  ["sized", "size"],
  ["hopping", "hop"],
  ["tanned", "tan"],
  ["falling", "fall"],
  ["hissing", "hiss"],
  ["fizzed", "fizz"],
  ["failing", "fail"],
  ["filing", "file"],
  ["hoped", "hope"],
  // Step 1c
  ["happy", "happi"],
  ["sky", "sky"],
  ["say", "sai"],
  // Step 2 (then later steps)
  ["relational", "relat"],
  ["conditional", "condit"],
  ["rational", "ration"],
  ["valenci", "valenc"],
  ["hesitanci", "hesit"],
  ["digitizer", "digit"],
  ["conformabli", "conform"],
  ["radicalli", "radic"],
  ["differentli", "differ"],
  ["vileli", "vile"],
  ["analogousli", "analog"],
  ["vietnamization", "vietnam"],
  ["predication", "predic"],
  ["operator", "oper"],
  ["feudalism", "feudal"],
  ["decisiveness", "decis"],
  ["hopefulness", "hope"],
  ["callousness", "callous"],
  ["formaliti", "formal"],
  ["sensitiviti", "sensit"],
  ["sensibiliti", "sensibl"],
  // Step 3
  ["triplicate", "triplic"],
  ["formative", "form"],
  ["formalize", "formal"],
  ["electriciti", "electr"],
  ["electrical", "electr"],
  ["hopeful", "hope"],
  ["goodness", "good"],
  // Step 4
  ["revival", "reviv"],
  ["allowance", "allow"],
  ["inference", "infer"],
  ["airliner", "airlin"],
  ["gyroscopic", "gyroscop"],
  ["adjustable", "adjust"],
  ["defensible", "defens"],
  ["irritant", "irrit"],
  ["replacement", "replac"],
  ["adjustment", "adjust"],
  ["dependent", "depend"],
  ["adoption", "adopt"],
  ["homologou", "homolog"],
  ["communism", "commun"],
  ["activate", "activ"],
  ["angulariti", "angular"],
  ["homologous", "homolog"],
  ["effective", "effect"],
  ["bowdlerize", "bowdler"],
  // Step 5
  ["probate", "probat"],
  ["rate", "rate"],
  ["cease", "ceas"],
  ["controll", "control"],
  ["roll", "roll"],
  // Multi-step and departures from the paper kept by the reference implementation
  ["generalizations", "gener"],
  ["oscillators", "oscil"],
  ["luxuriating", "luxuri"],
  ["consolingly", "consolingli"],
  ["knightly", "knightli"],
  ["archaeology", "archaeolog"],
  ["possibly", "possibl"],
];

describe("porterStem", () => {
  it.each(PORTER_CASES)("%s → %s", (word, stem) => {
    expect(porterStem(word)).toBe(stem);
  });

  it("leaves words of one or two letters, numbers, mixed tokens and other scripts alone", () => {
    for (const token of ["a", "is", "as", "2024", "h1n1", "covid19", "café", "日本語", "x86s", ""]) {
      expect(porterStem(token)).toBe(token);
    }
  });

  it("never lengthens a word, never empties it, and is deterministic (property)", () => {
    const seed = propertySeed("porterStem");
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,24}$/), (word) => {
        const stem = porterStem(word);
        expect(stem.length).toBeGreaterThan(0);
        expect(stem.length).toBeLessThanOrEqual(word.length);
        expect(stem).toMatch(/^[a-z]+$/);
        expect(porterStem(word)).toBe(stem);
      }),
      { seed, numRuns: propertyRuns(500) },
    );
  });
});

describe("English analyzer", () => {
  it("drops stop words (including the possessive fragment s) and stems the rest", () => {
    const analyzer = createEnglishAnalyzer();
    expect(analyzer(["the", "patient", "s", "running", "shoes", "are", "not", "relational"])).toEqual([
      "patient",
      "run",
      "shoe",
      "relat",
    ]);
    expect(analyzer([])).toEqual([]);
    expect(analyzer(["the", "of", "and"])).toEqual([]);
  });

  it("documents a small list: Lucene's 33 English stop words plus s", () => {
    expect(ENGLISH_STOP_WORDS.size).toBe(34);
    for (const word of ["the", "a", "of", "not", "s"]) expect(ENGLISH_STOP_WORDS.has(word)).toBe(true);
    for (const word of ["what", "how", "t", "i"]) expect(ENGLISH_STOP_WORDS.has(word)).toBe(false);
  });

  it("accepts another stemmer and stop list", () => {
    const analyzer = createEnglishAnalyzer({ stem: (word) => word.toUpperCase(), stopWords: new Set(["x"]) });
    expect(analyzer(["x", "y", "the"])).toEqual(["Y", "THE"]);
  });

  it("english-extended also drops the words of how a question is asked, keeps meaningful particles", () => {
    const extended = getAnalyzer("english-extended")!;
    expect(extended).toBe(getAnalyzer("english-extended"));
    // "How do I turn off my payouts? Why can't we sign up?" as the tokenizer gives it.
    const tokens = ["how", "do", "i", "turn", "off", "my", "payouts", "why", "can", "t", "we", "sign", "up"];
    expect(extended(tokens)).toEqual(["turn", "off", "payout", "sign", "up"]);
    expect(getAnalyzer("english")!(tokens)).toEqual([
      "how",
      "do",
      "i",
      "turn",
      "off",
      "my",
      "payout",
      "why",
      "can",
      "t",
      "we",
      "sign",
      "up",
    ]);
    for (const word of ENGLISH_STOP_WORDS) expect(ENGLISH_EXTENDED_STOP_WORDS.has(word)).toBe(true);
    for (const word of ["up", "down", "out", "off", "over", "under", "never", "without"]) {
      expect(ENGLISH_EXTENDED_STOP_WORDS.has(word)).toBe(false);
    }
  });

  it("is returned by getAnalyzer('english'), once; 'none' has no analyzer; other names throw", () => {
    expect(getAnalyzer("none")).toBeNull();
    const english = getAnalyzer("english");
    expect(english).toBe(getAnalyzer("english"));
    expect(english!(["runs"])).toEqual(["run"]);
    expect(() => getAnalyzer("french" as "english")).toThrow(RangeError);
  });
});

describe("analyzer inside the index", () => {
  const entries = [
    resolveEntry(
      {
        id: "guide.running",
        title: "The Runner",
        summary: "Runs and running shoes.",
        body: "How runners train.",
        domain: "d",
        integrations: [],
      },
      "1",
    ),
    resolveEntry(
      {
        id: "guide.other",
        title: "Swimming",
        summary: "Pools.",
        body: "Laps.",
        domain: "d",
        integrations: [],
      },
      "1",
    ),
  ];

  it("matches inflected forms only with the English analyzer", () => {
    const plain = buildIndexSnapshot(entries, { analyzer: "none" });
    const english = buildIndexSnapshot(entries, { analyzer: "english" });
    expect(plain.lexical.search(["run"], 10)).toEqual([]);
    expect(english.lexical.search(["run"], 10).map((match) => match.id)).toEqual(["guide.running"]);
    expect(english.lexical.search(["the", "of"], 10)).toEqual([]);
  });

  it("leaves exact title and id phrase matching unchanged", () => {
    const resolved = resolveRetrieval({ analyzer: "english" });
    const snapshot = buildIndexSnapshot(entries, { analyzer: "english" });
    expect(snapshot.exactIndex.has("the runner")).toBe(true);
    const selection = retrieve(
      snapshot,
      { query: "the runner", recentTurns: [], enabledIntegrations: [] },
      resolved,
    );
    expect(selection.candidates[0]!.id).toBe("guide.running");
    expect(selection.candidates[0]!.exact).toBe(true);
    expect(selection.candidates[0]!.matchedPhrases).toEqual(["the runner"]);
    expect(selection.confidence).toBe("high");
    // The stemmed form is not a phrase: "the run" has lexical evidence but no exact hit.
    const stemmed = retrieve(
      snapshot,
      { query: "the run", recentTurns: [], enabledIntegrations: [] },
      resolved,
    );
    expect(stemmed.candidates[0]!.exact).toBe(false);
    expect(stemmed.candidates[0]!.lexical).toBeGreaterThan(0);
  });
});

describe("english-extended through configuration and the index", () => {
  it("is a valid analyzer name; others are a configuration issue naming the choices", () => {
    expect(validateGroundingConfig({ retrieval: { analyzer: "english-extended" } })).toEqual([]);
    const [issue] = validateGroundingConfig({ retrieval: { analyzer: "klingon" } });
    expect(issue?.message).toBe(
      'retrieval.analyzer must be "none", "english" or "english-extended", got "klingon"',
    );
  });

  it("scores a question by what it is about: question words match nothing", () => {
    const entries = [
      resolveEntry(
        { id: "a", title: "Payout timing", summary: "When payouts arrive.", domain: "d", integrations: [] },
        "1",
      ),
      resolveEntry(
        { id: "b", title: "How do I", summary: "How can I do what I should?", domain: "d", integrations: [] },
        "1",
      ),
    ];
    const extended = buildIndexSnapshot(entries, { analyzer: "english-extended" });
    const english = buildIndexSnapshot(entries, { analyzer: "english" });
    const question = ["how", "do", "i", "get", "my", "payouts"];
    expect(extended.lexical.search(question, 10).map((match) => match.id)).toEqual(["a"]);
    expect(english.lexical.search(question, 10).map((match) => match.id)).toContain("b");
  });
});
