/**
 * Adaptive cut-offs with hand-checked numbers: a snapshot whose lexical searcher returns fixed scores, so every
 * floor and gap below can be computed by hand.
 */
import { describe, expect, it } from "vitest";
import type {
  KnowledgeEntryInput,
  KnowledgeIndexSnapshot,
  KnowledgeLexicalMatch,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfig,
  KnowledgeScoredCandidate,
} from "../types/knowledge.js";
import { resolveRetrieval } from "./config.js";
import { validateGroundingConfig } from "./configValidation.js";
import { applyScoreCutoffs, expansionAllowed, expansionSourceCount } from "./cutoffs.js";
import { buildIndexSnapshot } from "./knowledgeIndex.js";
import { normalizeAndValidate } from "./resolve.js";
import { retrieve } from "./retrieval.js";

/** Entries a–e (lexical scores 10, 8, 4.9, 4.5, 1) plus x and y, related to a and b respectively. */
const ENTRIES: KnowledgeEntryInput[] = [
  { id: "a", title: "Alpha", summary: "first", domain: "d", integrations: [], relatedEntryIds: ["x"] },
  { id: "b", title: "Bravo", summary: "second", domain: "d", integrations: [], relatedEntryIds: ["y"] },
  { id: "c", title: "Charlie", summary: "third", domain: "d", integrations: [] },
  { id: "d", title: "Delta", summary: "fourth", domain: "d", integrations: [] },
  { id: "e", title: "Echo", summary: "fifth", domain: "d", integrations: [] },
  { id: "x", title: "Xray", summary: "related to a", domain: "d", integrations: [] },
  { id: "y", title: "Yankee", summary: "related to b", domain: "d", integrations: [] },
];
const SCORES: [string, number][] = [
  ["a", 10],
  ["b", 8],
  ["c", 4.9],
  ["d", 4.5],
  ["e", 1],
];

function fixedSnapshot(scores: readonly [string, number][] = SCORES): KnowledgeIndexSnapshot {
  const { entries, validation } = normalizeAndValidate([{ id: "s", entries: ENTRIES }], {
    manifestVersion: "1",
  });
  expect(validation.ok).toBe(true);
  const snapshot = buildIndexSnapshot(entries);
  return {
    ...snapshot,
    lexical: {
      search: (_tokens, topK): KnowledgeLexicalMatch[] =>
        scores.slice(0, topK).map(([id, score]) => ({ id, score, fieldScores: { body: score } })),
    },
  };
}

function settings(config: KnowledgeRetrievalConfig): KnowledgeResolvedRetrieval {
  return resolveRetrieval(config);
}

// "zulu" names no entry, so no phrase boost applies and the scores are exactly the fixed ones.
const request = { query: "zulu", recentTurns: [], enabledIntegrations: [] };

function candidate(id: string, score: number): KnowledgeScoredCandidate {
  return { id, score, exact: false, alias: false, lexical: score, fieldScores: {}, matchedPhrases: [] };
}

describe("minRelativeScore (relative score floor)", () => {
  it("drops primary candidates below the fraction of the top score: 0.5 × 10 = 5 keeps a (10), b (8)", () => {
    const selection = retrieve(fixedSnapshot(), request, settings({ minRelativeScore: 0.5 }));
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a", "b"]);
    const cut = { rule: "minRelativeScore", threshold: 5, endedAt: "c" };
    expect(selection.candidates.map((entry) => entry.cut)).toEqual([undefined, undefined, cut, cut, cut]);
  });

  it("keeps a candidate exactly on the floor: 0.45 × 10 = 4.5 keeps d (4.5), drops e (1)", () => {
    const selection = retrieve(fixedSnapshot(), request, settings({ minRelativeScore: 0.45 }));
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a", "b", "c", "d"]);
    expect(selection.candidates[4]!.cut).toEqual({ rule: "minRelativeScore", threshold: 4.5, endedAt: "e" });
  });

  it("is off at 0 and when the top score is not positive", () => {
    expect(retrieve(fixedSnapshot(), request, settings({ minRelativeScore: 0 })).primary).toHaveLength(5);
    const negative = fixedSnapshot([
      ["a", -1],
      ["b", -2],
    ]);
    expect(retrieve(negative, request, settings({ minRelativeScore: 1 })).primary).toHaveLength(2);
  });
});

describe("scoreGapRatio (gap rule)", () => {
  it("ends the list at the first score below ratio × previous: 0.6 keeps 10, 8 (≥ 6), 4.9 (≥ 4.8), 4.5 (≥ 2.94), drops 1 (< 2.7)", () => {
    const selection = retrieve(fixedSnapshot(), request, settings({ scoreGapRatio: 0.6 }));
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a", "b", "c", "d"]);
    const threshold = selection.candidates[4]!.cut!.threshold;
    expect(threshold).toBeCloseTo(2.7, 12);
    expect(selection.candidates[4]!.cut).toEqual({ rule: "scoreGapRatio", threshold, endedAt: "e" });
  });

  it("0.65 ends at c: 4.9 < 0.65 × 8 = 5.2, and c, d, e all carry the cut", () => {
    const selection = retrieve(fixedSnapshot(), request, settings({ scoreGapRatio: 0.65 }));
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a", "b"]);
    for (const cut of selection.candidates.slice(2).map((entry) => entry.cut)) {
      expect(cut?.rule).toBe("scoreGapRatio");
      expect(cut?.endedAt).toBe("c");
      expect(cut?.threshold).toBeCloseTo(5.2, 12);
    }
  });

  it("the floor is checked first when both rules end the list at the same candidate", () => {
    const selection = retrieve(
      fixedSnapshot(),
      request,
      settings({ minRelativeScore: 0.5, scoreGapRatio: 0.65 }),
    );
    expect(selection.candidates[2]!.cut).toEqual({ rule: "minRelativeScore", threshold: 5, endedAt: "c" });
  });

  it("does not apply after a non-positive score", () => {
    const outcome = applyScoreCutoffs([candidate("p", 0), candidate("q", -5)], { scoreGapRatio: 1 });
    expect(outcome).toEqual({ kept: 2 });
  });
});

describe("minResults (entries the cut-offs always keep)", () => {
  it("keeps the first n whatever their scores: floor 0.9 × 10 = 9 keeps a alone, with minResults 2 a and b", () => {
    expect(
      retrieve(fixedSnapshot(), request, settings({ minRelativeScore: 0.9 })).primary.map(
        (entry) => entry.id,
      ),
    ).toEqual(["a"]);
    const selection = retrieve(fixedSnapshot(), request, settings({ minRelativeScore: 0.9, minResults: 2 }));
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a", "b"]);
    // The list ends at c, the first candidate past the kept ones below the floor 9.
    const cut = { rule: "minRelativeScore", threshold: 9, endedAt: "c" };
    expect(selection.candidates.map((entry) => entry.cut)).toEqual([undefined, undefined, cut, cut, cut]);
  });

  it("the gap rule resumes after the kept entries: 0.7 ends at c (4.9 < 5.6); with minResults 4 at e (1 < 3.15)", () => {
    const gap = retrieve(fixedSnapshot(), request, settings({ scoreGapRatio: 0.7 }));
    expect(gap.primary.map((entry) => entry.id)).toEqual(["a", "b"]);
    const kept = retrieve(fixedSnapshot(), request, settings({ scoreGapRatio: 0.7, minResults: 4 }));
    expect(kept.primary.map((entry) => entry.id)).toEqual(["a", "b", "c", "d"]);
    expect(kept.candidates[4]!.cut?.endedAt).toBe("e");
    expect(kept.candidates[4]!.cut?.threshold).toBeCloseTo(0.7 * 4.5, 12);
  });

  it("never adds entries: beyond resultLimit, the candidates found, or without a cut-off rule it changes nothing", () => {
    const limited = retrieve(
      fixedSnapshot(),
      request,
      settings({ minRelativeScore: 0.9, minResults: 4, resultLimit: 3 }),
    );
    expect(limited.primary.map((entry) => entry.id)).toEqual(["a", "b", "c"]);
    expect(limited.candidates.some((entry) => entry.cut)).toBe(false);
    const all = retrieve(fixedSnapshot(), request, settings({ minRelativeScore: 0.9, minResults: 9 }));
    expect(all.primary).toHaveLength(5);
    expect(retrieve(fixedSnapshot(), request, settings({ minResults: 2 })).primary).toHaveLength(5);
    expect(
      applyScoreCutoffs([candidate("a", 10), candidate("b", 1)], { minRelativeScore: 0.5, minResults: 1 }),
    ).toEqual({
      kept: 1,
      cut: { rule: "minRelativeScore", threshold: 5, endedAt: "b" },
    });
  });

  it("must be an integer >= 1", () => {
    for (const value of [0, 1.5, -1, Number.NaN]) {
      const [issue] = validateGroundingConfig({ retrieval: { minResults: value } });
      expect(issue?.path).toBe("retrieval.minResults");
      expect(issue?.message).toBe(`retrieval.minResults must be an integer >= 1, got ${value}`);
    }
    expect(validateGroundingConfig({ retrieval: { minResults: 3 } })).toEqual([]);
    expect(settings({ minResults: 2 }).minResults).toBe(2);
    expect("minResults" in settings({})).toBe(false);
  });
});

describe("cut-offs act after the result limit and leave confidence alone", () => {
  it("candidates beyond resultLimit carry no cut; only the primary ones are examined", () => {
    const selection = retrieve(fixedSnapshot(), request, settings({ resultLimit: 3, scoreGapRatio: 0.65 }));
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a", "b"]);
    expect(selection.candidates.map((entry) => entry.cut?.rule)).toEqual([
      undefined,
      undefined,
      "scoreGapRatio",
      undefined,
      undefined,
    ]);
  });

  it("confidence and candidates are the same with and without cut-offs", () => {
    for (const rule of ["seed", "calibrated"] as const) {
      const plain = retrieve(fixedSnapshot(), request, settings({ confidenceRule: rule }));
      const cut = retrieve(
        fixedSnapshot(),
        request,
        settings({ confidenceRule: rule, minRelativeScore: 0.9, scoreGapRatio: 0.9 }),
      );
      expect(cut.primary.map((entry) => entry.id)).toEqual(["a"]);
      expect(cut.confidence).toBe(plain.confidence);
      expect(cut.candidates.map((entry) => [entry.id, entry.score])).toEqual(
        plain.candidates.map((entry) => [entry.id, entry.score]),
      );
      expect(cut.candidateCount).toBe(plain.candidateCount);
    }
  });

  it("unset, nothing changes: no cut marks, all primary entries, full expansion", () => {
    const selection = retrieve(fixedSnapshot(), request, settings({}));
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a", "b", "c", "d", "e"]);
    expect(selection.candidates.every((entry) => !("cut" in entry))).toBe(true);
    expect(selection.expanded.map((entry) => entry.id)).toEqual(["x", "y"]);
    expect("expansionSkipped" in selection).toBe(false);
  });
});

describe("expansion rules", () => {
  it("expansionFromTop: 1 follows only a's relations, 0 none, 5 all", () => {
    const expandedWith = (expansionFromTop: number) =>
      retrieve(fixedSnapshot(), request, settings({ expansionFromTop })).expanded.map((entry) => entry.id);
    expect(expandedWith(1)).toEqual(["x"]);
    expect(expandedWith(0)).toEqual([]);
    expect(expandedWith(5)).toEqual(["x", "y"]);
  });

  it("expansionFromTop counts primary entries after the cut-offs", () => {
    const selection = retrieve(
      fixedSnapshot(),
      request,
      settings({ minRelativeScore: 0.9, expansionFromTop: 2 }),
    );
    expect(selection.primary.map((entry) => entry.id)).toEqual(["a"]);
    expect(selection.expanded.map((entry) => entry.id)).toEqual(["x"]);
  });

  it("expansionMinConfidence: the seed rule rates this turn low (no phrase, one field, 10 < 1.5 × 8)", () => {
    const low = retrieve(fixedSnapshot(), request, settings({ expansionMinConfidence: "low" }));
    expect(low.confidence).toBe("low");
    expect(low.expanded.map((entry) => entry.id)).toEqual(["x", "y"]);
    const medium = retrieve(fixedSnapshot(), request, settings({ expansionMinConfidence: "medium" }));
    expect(medium.expanded).toEqual([]);
    expect(medium.expansionSkipped).toBe("expansionMinConfidence");
    // A 1.5× lead makes it medium: 12 ≥ 1.5 × 8.
    const leading = fixedSnapshot([
      ["a", 12],
      ["b", 8],
    ]);
    const medium2 = retrieve(leading, request, settings({ expansionMinConfidence: "medium" }));
    expect(medium2.confidence).toBe("medium");
    expect(medium2.expanded.map((entry) => entry.id)).toEqual(["x", "y"]);
    expect(retrieve(leading, request, settings({ expansionMinConfidence: "high" })).expanded).toEqual([]);
  });

  it("helpers: the confidence order and the source count", () => {
    expect(expansionAllowed("none", {})).toBe(true);
    expect(expansionAllowed("high", { expansionMinConfidence: "high" })).toBe(true);
    expect(expansionAllowed("medium", { expansionMinConfidence: "high" })).toBe(false);
    expect(expansionAllowed("low", { expansionMinConfidence: "low" })).toBe(true);
    expect(expansionAllowed("none", { expansionMinConfidence: "low" })).toBe(false);
    expect(expansionSourceCount(4, {})).toBe(4);
    expect(expansionSourceCount(4, { expansionFromTop: 2 })).toBe(2);
    expect(expansionSourceCount(1, { expansionFromTop: 2 })).toBe(1);
  });
});
