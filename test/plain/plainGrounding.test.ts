/**
 * Checks the plain oracle itself against numbers worked out by hand, so that the property tests that compare the
 * engine with it compare against something known to be right.
 */
import { describe, expect, it } from "vitest";
import { MAX_QUERY_TOKENS } from "../../src/knowledge/defaults.js";
import type {
  KnowledgeFieldWeights,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalRequest,
  NormalizedKnowledgeEntry,
} from "../../src/types/knowledge.js";
import {
  buildPlainSnapshot,
  PlainKnowledgeIndex,
  plainConfidence,
  plainIsAuthorized,
  plainLexicalTokens,
  plainNgrams,
  plainQueryTokens,
  plainRetrieve,
} from "./plainGrounding.js";

const WEIGHTS: KnowledgeFieldWeights = { title: 5, aliases: 5, keywords: 3, summary: 3, body: 1 };

const RESOLVED: KnowledgeResolvedRetrieval = {
  candidateLimit: 24,
  resultLimit: 8,
  relationLimit: 4,
  fieldWeights: WEIGHTS,
  exactBoost: 100,
  aliasBoost: 60,
};

function entry(fields: Partial<NormalizedKnowledgeEntry> & { id: string }): NormalizedKnowledgeEntry {
  return {
    title: fields.id,
    summary: "",
    domain: "d",
    integrations: [],
    kind: "text",
    status: "active",
    body: "",
    aliases: [],
    keywords: [],
    relatedEntryIds: [],
    version: "1",
    ...fields,
  };
}

function request(query: string, extra: Partial<KnowledgeRetrievalRequest> = {}): KnowledgeRetrievalRequest {
  return { query, recentTurns: [], enabledIntegrations: [], ...extra };
}

/*
 * The hand-computed registry (N = 3, k1 = 1.5, b = 0.75):
 *
 *   id            title    aliases   keywords  summary          body
 *   fruit.apple   Apple    [pomme]   []        "red fruit"      "apple apple pie"
 *   fruit.banana  Banana   []        [apple]   "yellow fruit"   ""
 *   veg.carrot    Carrot   []        []        "orange root"    "not an apple"
 *
 * Field lengths and averages over all three documents:
 *   title 1,1,1 → avgdl 1; aliases 1,0,0 → 1/3; keywords 0,1,0 → 1/3; summary 2,2,2 → 2; body 3,0,3 → 2.
 *
 * Query "apple" (one unique term):
 *   title:    df 1, idf = ln(1 + (3 − 1 + 0.5)/(1 + 0.5)) = ln(8/3) = 0.980829…
 *             apple: tf 1, len 1: 1·2.5 / (1 + 1.5·(0.25 + 0.75·1/1)) = 2.5/2.5 = 1
 *             → 5 · ln(8/3) · 1 = 4.904146265…
 *   aliases:  no "apple".
 *   keywords: df 1, idf ln(8/3); banana: tf 1, len 1, avgdl 1/3: norm = 1 + 1.5·(0.25 + 0.75·3) = 4.75
 *             → 3 · ln(8/3) · 2.5/4.75 = 1.548677768…
 *   summary:  no "apple".
 *   body:     df 2, idf = ln(1 + (3 − 2 + 0.5)/(2 + 0.5)) = ln(1.6) = 0.470003629…
 *             len/avgdl = 3/2, so the length part is 1.5·(0.25 + 0.75·1.5) = 2.0625
 *             apple (tf 2): 1 · ln(1.6) · 5/(2 + 2.0625) = 0.578466005…
 *             carrot (tf 1): 1 · ln(1.6) · 2.5/(1 + 2.0625) = 0.383676432…
 *   totals:   apple 4.904146265 + 0.578466005 = 5.482612270; banana 1.548677768; carrot 0.383676432.
 */
const FRUIT = [
  entry({
    id: "fruit.apple",
    title: "Apple",
    aliases: ["pomme"],
    summary: "red fruit",
    body: "apple apple pie",
  }),
  entry({ id: "fruit.banana", title: "Banana", keywords: ["apple"], summary: "yellow fruit" }),
  entry({ id: "veg.carrot", title: "Carrot", summary: "orange root", body: "not an apple" }),
];
const TITLE_APPLE = 5 * Math.log(8 / 3);
const KEYWORDS_BANANA = 3 * Math.log(8 / 3) * (2.5 / 4.75);
const BODY_APPLE = Math.log(1.6) * (5 / 4.0625);
const BODY_CARROT = Math.log(1.6) * (2.5 / 3.0625);
/** The worked numbers above use a different operation order than the formula, so allow rounding (12 digits). */
const near = (value: number) => expect.closeTo(value, 12);

describe("PlainKnowledgeIndex (hand-computed BM25)", () => {
  const index = new PlainKnowledgeIndex(FRUIT, { fieldWeights: WEIGHTS });

  it("averages field lengths over all documents, empty fields included", () => {
    expect(index.averageLength("title")).toBe(1);
    expect(index.averageLength("aliases")).toBeCloseTo(1 / 3, 15);
    expect(index.averageLength("keywords")).toBeCloseTo(1 / 3, 15);
    expect(index.averageLength("summary")).toBe(2);
    expect(index.averageLength("body")).toBe(2);
  });

  it("scores each field with its own idf and sums the weighted parts", () => {
    const results = index.search(["apple"], 10);
    expect(results.map((result) => result.id)).toEqual(["fruit.apple", "fruit.banana", "veg.carrot"]);
    expect(TITLE_APPLE).toBeCloseTo(4.904146265, 8);
    expect(KEYWORDS_BANANA).toBeCloseTo(1.548677768, 8);
    expect(BODY_APPLE).toBeCloseTo(0.578466005, 8);
    expect(BODY_CARROT).toBeCloseTo(0.383676432, 8);
    const [apple, banana, carrot] = results;
    expect(apple!.score).toBeCloseTo(5.48261227, 8);
    expect(apple!.fieldScores).toEqual({ title: near(TITLE_APPLE), body: near(BODY_APPLE) });
    expect(banana!.score).toEqual(near(KEYWORDS_BANANA));
    expect(banana!.fieldScores).toEqual({ keywords: near(KEYWORDS_BANANA) });
    expect(carrot!.score).toEqual(near(BODY_CARROT));
    expect(carrot!.fieldScores).toEqual({ body: near(BODY_CARROT) });
  });

  it("ignores repeated query terms and unknown terms", () => {
    expect(index.search(["apple", "apple", "zzz"], 10)).toEqual(index.search(["apple"], 10));
  });

  it("cuts to topK and skips documents outside the eligible set without changing idf", () => {
    expect(index.search(["apple"], 1).map((result) => result.id)).toEqual(["fruit.apple"]);
    const filtered = index.search(["apple"], 10, new Set(["veg.carrot"]));
    expect(filtered).toEqual([
      { id: "veg.carrot", score: near(BODY_CARROT), fieldScores: { body: near(BODY_CARROT) } },
    ]);
  });

  it("returns nothing for an empty query or an empty index", () => {
    expect(index.search([], 10)).toEqual([]);
    expect(new PlainKnowledgeIndex([], { fieldWeights: WEIGHTS }).search(["apple"], 10)).toEqual([]);
  });

  it("skips fields whose weight is 0", () => {
    const noTitle = new PlainKnowledgeIndex(FRUIT, { fieldWeights: { ...WEIGHTS, title: 0 } });
    const apple = noTitle.search(["apple"], 10).find((result) => result.id === "fruit.apple");
    expect(apple).toEqual({
      id: "fruit.apple",
      score: near(BODY_APPLE),
      fieldScores: { body: near(BODY_APPLE) },
    });
  });

  it("counts inactive entries in N and df", () => {
    // A draft with "apple" in its title makes title df 2 and N 4: idf = ln(1 + 2.5/2.5) = ln 2; the average title
    // length stays 1, so apple's title part becomes 5 · ln 2 · 1.
    const withDraft = new PlainKnowledgeIndex(
      [...FRUIT, entry({ id: "z.draft", title: "apple", status: "draft" })],
      {
        fieldWeights: WEIGHTS,
      },
    );
    const apple = withDraft.search(["apple"], 10).find((result) => result.id === "fruit.apple");
    expect(apple!.fieldScores.title).toBeCloseTo(5 * Math.LN2, 12);
  });

  it("breaks score ties by code-unit order of the id, not locale order", () => {
    const twins = new PlainKnowledgeIndex(
      [entry({ id: "alpha", title: "same words" }), entry({ id: "Zeta", title: "same words" })],
      { fieldWeights: WEIGHTS },
    );
    // "Z" (0x5A) sorts before "a" (0x61) by code unit; localeCompare would put "alpha" first.
    expect(twins.search(["same"], 10).map((result) => result.id)).toEqual(["Zeta", "alpha"]);
  });

  it("uses the given k1 and b", () => {
    // With b = 0 the length part vanishes: tf 2 in body gives 2·(1+1)/(2+1) = 4/3 for k1 = 1.
    const custom = new PlainKnowledgeIndex(FRUIT, { fieldWeights: WEIGHTS, k1: 1, b: 0 });
    const apple = custom.search(["pie"], 10)[0]!;
    // "pie": body df 1 → idf ln(8/3); tf 1: 1·2/(1+1) = 1.
    expect(apple.score).toBeCloseTo(Math.log(8 / 3), 12);
    const body = custom.search(["apple"], 10).find((result) => result.id === "fruit.apple")!.fieldScores.body;
    expect(body).toBeCloseTo(Math.log(1.6) * (4 / 3), 12);
  });
});

describe("plain helpers", () => {
  it("builds n-grams by size then start, without repeats", () => {
    expect(plainNgrams(["a", "b", "a", "b"], 2)).toEqual(["a", "b", "a b", "b a"]);
    expect(plainNgrams(["a", "b"], 9)).toEqual(["a", "b", "a b"]);
    expect(plainNgrams(["a", "b"], 0)).toEqual([]);
  });

  it("authorizes by status, exact domain and case-insensitive integrations", () => {
    const bound = entry({ id: "x", domain: "Billing", integrations: ["Shop"] });
    expect(plainIsAuthorized(bound, ["shop"], [])).toBe(true);
    expect(plainIsAuthorized(bound, [], [])).toBe(false);
    expect(plainIsAuthorized(bound, ["shop-a"], [])).toBe(false);
    expect(plainIsAuthorized(bound, ["SHOP"], ["billing"])).toBe(true);
    expect(plainIsAuthorized(bound, ["SHOP"], ["Billing"])).toBe(false);
    expect(plainIsAuthorized(entry({ id: "y", status: "deprecated" }), [], [])).toBe(false);
  });

  it("classifies confidence by the seed rule", () => {
    const candidate = { id: "a", score: 3, exact: false, alias: false, lexical: 3, matchedPhrases: [] };
    expect(plainConfidence([])).toBe("none");
    expect(plainConfidence([{ ...candidate, alias: true, fieldScores: {} }])).toBe("high");
    expect(plainConfidence([{ ...candidate, fieldScores: { title: 1, body: 2 } }])).toBe("medium");
    expect(plainConfidence([{ ...candidate, fieldScores: { body: 3 } }])).toBe("low");
    const second = { ...candidate, id: "b", score: 2, fieldScores: { body: 2 } };
    // 3 ≥ 1.5 · 2 holds inclusively; 3 ≥ 1.5 · 2.01 does not.
    expect(plainConfidence([{ ...candidate, fieldScores: { body: 3 } }, second])).toBe("medium");
    expect(
      plainConfidence([
        { ...candidate, fieldScores: { body: 3 } },
        { ...second, score: 2.01 },
      ]),
    ).toBe("low");
  });

  it("caps the query tokens and the de-duplicated lexical tokens", () => {
    const words = Array.from({ length: MAX_QUERY_TOKENS + 5 }, (_, index) => `w${index}`);
    const queryTokens = plainQueryTokens(words.join(" "));
    expect(queryTokens).toEqual(words.slice(0, MAX_QUERY_TOKENS));
    const history = { role: "user" as const, text: `w0 ${"h ".repeat(300)}tail` };
    const lexical = plainLexicalTokens(["q", "q"], request("", { recentTurns: [history] }));
    // The turn is cut at 400 code units, so "tail" (after 602) is not read; repeats are dropped.
    expect(lexical).toEqual(["q", "w0", "h"]);
  });
});

describe("plainRetrieve", () => {
  it("adds the exact boost to the lexical score and ranks by the total (hand-computed)", () => {
    const selection = plainRetrieve(FRUIT, request("apple"), RESOLVED);
    expect(selection.candidates).toEqual([
      {
        id: "fruit.apple",
        score: near(TITLE_APPLE + BODY_APPLE + 100),
        exact: true,
        alias: false,
        lexical: near(TITLE_APPLE + BODY_APPLE),
        fieldScores: { title: near(TITLE_APPLE), body: near(BODY_APPLE) },
        matchedPhrases: ["apple"],
      },
      {
        id: "fruit.banana",
        score: near(KEYWORDS_BANANA),
        exact: false,
        alias: false,
        lexical: near(KEYWORDS_BANANA),
        fieldScores: { keywords: near(KEYWORDS_BANANA) },
        matchedPhrases: [],
      },
      {
        id: "veg.carrot",
        score: near(BODY_CARROT),
        exact: false,
        alias: false,
        lexical: near(BODY_CARROT),
        fieldScores: { body: near(BODY_CARROT) },
        matchedPhrases: [],
      },
    ]);
    expect(selection.confidence).toBe("high");
    expect(selection.candidateCount).toBe(3);
    expect(selection.primary.map((item) => item.id)).toEqual(["fruit.apple", "fruit.banana", "veg.carrot"]);
  });

  it("gives an alias-only candidate lexical 0 and no field scores", () => {
    // "pomme" is only an alias: the aliases field scores it too (df 1, len 1, avgdl 1/3 → 5 · ln(8/3) · 2.5/4.75).
    const selection = plainRetrieve(FRUIT, request("pomme"), {
      ...RESOLVED,
      fieldWeights: { ...WEIGHTS, aliases: 0 },
    });
    expect(selection.candidates).toEqual([
      {
        id: "fruit.apple",
        score: 60,
        exact: false,
        alias: true,
        lexical: 0,
        fieldScores: {},
        matchedPhrases: ["pomme"],
      },
    ]);
    const scored = plainRetrieve(FRUIT, request("pomme"), RESOLVED).candidates[0]!;
    expect(scored.lexical).toBeCloseTo(5 * Math.log(8 / 3) * (2.5 / 4.75), 12);
  });

  it("records exact then alias phrases in n-gram order, repeats kept", () => {
    const flow = entry({
      id: "settings.multi-step-flow",
      title: "Multi-Step Flow",
      aliases: ["multi step flow", "enableMultiStepFlow"],
    });
    const selection = plainRetrieve([flow], request("enable multi step flow"), RESOLVED);
    expect(selection.candidates[0]!.matchedPhrases).toEqual([
      "multi step flow",
      "multi step flow",
      "enable multi step flow",
    ]);
    expect(selection.candidates[0]!.score).toBeGreaterThan(160);
  });

  it("filters before the cut and counts candidates before it", () => {
    const entries = [
      entry({ id: "a.blocked-one", domain: "blocked", summary: "shared words" }),
      entry({ id: "b.blocked-two", domain: "blocked", summary: "shared words" }),
      entry({ id: "z.allowed", domain: "open", summary: "shared words" }),
    ];
    const selection = plainRetrieve(
      entries,
      request("shared words"),
      { ...RESOLVED, candidateLimit: 1, resultLimit: 1 },
      ["blocked"],
    );
    expect(selection.primary.map((item) => item.id)).toEqual(["z.allowed"]);
    expect(selection.candidateCount).toBe(1);
  });

  it("expands one hop of authorized relations up to the limit", () => {
    const entries = [
      entry({
        id: "root",
        summary: "needle",
        relatedEntryIds: ["missing", "draft", "child", "root"],
        parentEntryId: "top",
      }),
      entry({ id: "draft", status: "draft" }),
      entry({ id: "child", relatedEntryIds: ["grandchild"] }),
      entry({ id: "grandchild" }),
      entry({ id: "top" }),
    ];
    const all = plainRetrieve(entries, request("needle"), RESOLVED);
    expect(all.primary.map((item) => item.id)).toEqual(["root"]);
    expect(all.expanded.map((item) => item.id)).toEqual(["child", "top"]);
    const one = plainRetrieve(entries, request("needle"), { ...RESOLVED, relationLimit: 1 });
    expect(one.expanded.map((item) => item.id)).toEqual(["child"]);
  });

  it("reports none when nothing matches and rejects modes it does not implement", () => {
    const selection = plainRetrieve(FRUIT, request("xyzzy quux"), RESOLVED);
    expect(selection).toEqual({
      primary: [],
      expanded: [],
      candidates: [],
      confidence: "none",
      candidateCount: 0,
    });
    expect(() => plainRetrieve(FRUIT, request("apple"), { ...RESOLVED, scoring: "bm25f" })).toThrow(
      /scoring/,
    );
  });

  it("gives the same answer from a prebuilt snapshot", () => {
    const snapshot = buildPlainSnapshot(FRUIT, { fieldWeights: WEIGHTS });
    expect(plainRetrieve(snapshot, request("red apple pie"), RESOLVED)).toEqual(
      plainRetrieve(FRUIT, request("red apple pie"), RESOLVED),
    );
  });
});
