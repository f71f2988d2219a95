import { describe, expect, it } from "vitest";
import { resolveRetrieval } from "../../src/knowledge/config.js";
import { validateGroundingConfig } from "../../src/knowledge/configValidation.js";
import { buildIndexSnapshot } from "../../src/knowledge/knowledgeIndex.js";
import { resolveEntry } from "../../src/knowledge/resolve.js";
import { classifyCalibratedConfidence, classifyConfidence, retrieve } from "../../src/knowledge/retrieval.js";
import type { KnowledgeScoredCandidate } from "../../src/types/knowledge.js";

function candidate(overrides: Partial<KnowledgeScoredCandidate> & { id: string }): KnowledgeScoredCandidate {
  return {
    score: 0,
    exact: false,
    alias: false,
    lexical: 0,
    fieldScores: {},
    matchedPhrases: [],
    ...overrides,
  };
}

describe("calibrated confidence rule", () => {
  it("gives high only to a multi-word phrase hit that leads the second candidate by 1.2×", () => {
    const phraseTop = candidate({
      id: "a",
      exact: true,
      matchedPhrases: ["payment links"],
      score: 112,
      lexical: 12,
      fieldScores: { title: 12 },
    });
    expect(classifyCalibratedConfidence([phraseTop])).toBe("high");
    expect(
      classifyCalibratedConfidence([phraseTop, candidate({ id: "b", score: 93.3, lexical: 93.3 })]),
    ).toBe("high");
    // 112 < 1.2 × 94: the phrase hit does not lead enough, but it still is a multi-word phrase hit.
    expect(classifyCalibratedConfidence([phraseTop, candidate({ id: "b", score: 94, lexical: 94 })])).toBe(
      "medium",
    );
  });

  it("does not trust a one-word title or id hit by itself", () => {
    const oneWord = candidate({ id: "a", exact: true, matchedPhrases: ["access"], score: 105, lexical: 5 });
    // The seed calls this high; the calibrated rule looks at the lexical lead instead: 5 < 1.3 × 4.5.
    const runnerUp = candidate({ id: "b", score: 4.5, lexical: 4.5 });
    expect(classifyConfidence([oneWord, runnerUp])).toBe("high");
    expect(classifyCalibratedConfidence([oneWord, runnerUp])).toBe("low");
    expect(classifyCalibratedConfidence([oneWord, candidate({ id: "b", score: 3.8, lexical: 3.8 })])).toBe(
      "medium",
    );
  });

  it("uses the lexical lead for medium and ignores how many fields matched", () => {
    const top = candidate({
      id: "a",
      score: 13,
      lexical: 13,
      fieldScores: { title: 5, summary: 4, body: 4 },
    });
    expect(classifyConfidence([top, candidate({ id: "b", score: 12, lexical: 12 })])).toBe("medium");
    expect(classifyCalibratedConfidence([top, candidate({ id: "b", score: 12, lexical: 12 })])).toBe("low");
    expect(classifyCalibratedConfidence([top, candidate({ id: "b", score: 10, lexical: 10 })])).toBe(
      "medium",
    );
    expect(classifyCalibratedConfidence([top])).toBe("medium");
    expect(classifyCalibratedConfidence([])).toBe("none");
    // A top candidate without lexical evidence (only a one-word phrase hit) and nothing else: low.
    expect(
      classifyCalibratedConfidence([candidate({ id: "a", exact: true, matchedPhrases: ["x"], score: 100 })]),
    ).toBe("low");
  });

  it("is opt-in through retrieval.confidenceRule; the default stays the seed's", () => {
    expect(resolveRetrieval().confidenceRule).toBe("seed");
    expect(resolveRetrieval({ confidenceRule: "calibrated" }).confidenceRule).toBe("calibrated");
    expect(classifyConfidence([], "seed")).toBe("none");
    const issues = validateGroundingConfig({
      enabled: true,
      sources: [],
      retrieval: { confidenceRule: "strict" },
    });
    expect(issues).toEqual([
      {
        level: "error",
        code: "bad-config",
        message: 'retrieval.confidenceRule must be "seed" or "calibrated", got "strict"',
        path: "retrieval.confidenceRule",
      },
    ]);

    const entries = [
      resolveEntry(
        { id: "guide.access", title: "Access", summary: "Who can sign in.", domain: "d", integrations: [] },
        "1",
      ),
      resolveEntry(
        {
          id: "guide.roles",
          title: "Team roles",
          summary: "Roles decide what each member can change, including access to payouts.",
          domain: "d",
          integrations: [],
        },
        "1",
      ),
    ];
    const snapshot = buildIndexSnapshot(entries);
    const request = { query: "can a member change payouts access", recentTurns: [], enabledIntegrations: [] };
    const seed = retrieve(snapshot, request, resolveRetrieval());
    const calibrated = retrieve(snapshot, request, resolveRetrieval({ confidenceRule: "calibrated" }));
    // Same ranking either way: the rule only classifies.
    expect(calibrated.candidates).toEqual(seed.candidates);
    expect(seed.candidates[0]!.id).toBe("guide.access");
    expect(seed.confidence).toBe("high");
    expect(calibrated.confidence).toBe(classifyCalibratedConfidence(calibrated.candidates));
    expect(calibrated.confidence).not.toBe("high");
  });
});
