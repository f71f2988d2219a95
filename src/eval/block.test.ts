import { describe, expect, it } from "vitest";
import {
  BLOCK_RECALL_CAP,
  type BlockDiagnosisInput,
  blockFigures,
  diagnoseBlock,
  FAILURE_EXPECTED_SHOWN,
  foldForPassage,
  summarizeBlocks,
} from "./block.js";

const judged = (pairs: [string, number][]) => new Map(pairs);

describe("block figures of one query", () => {
  it("counts relevant included entries; precision over included, recall over the relevant", () => {
    // Three included, two of them relevant (grades 2 and 1), one judged 0; four relevant judged in all.
    const figures = blockFigures(
      ["a", "x", "b"],
      120,
      "<knowledge_context>…</knowledge_context>",
      judged([
        ["a", 2],
        ["b", 1],
        ["c", 1],
        ["d", 1],
        ["x", 0],
      ]),
    );
    expect(figures).toEqual({
      includedIds: ["a", "x", "b"],
      tokens: 120,
      relevantIncluded: 2,
      precision: 2 / 3,
      recall: 2 / 4,
      hit: true,
      passage: null,
    });
  });

  it(`caps recall at ${BLOCK_RECALL_CAP} relevant entries (BEIR's capped recall)`, () => {
    const many = judged(Array.from({ length: 40 }, (_, index) => [`r${index}`, 1] as [string, number]));
    const included = Array.from({ length: 5 }, (_, index) => `r${index}`);
    expect(blockFigures(included, 10, "", many).recall).toBe(5 / 10);
    const all = Array.from({ length: 12 }, (_, index) => `r${index}`);
    expect(blockFigures(all, 10, "", many).recall).toBe(12 / 10);
  });

  it("an empty block has no precision, no hit and recall 0; no relevant judgment gives recall 0", () => {
    const empty = blockFigures([], 0, "", judged([["a", 1]]));
    expect(empty.precision).toBeNull();
    expect(empty.recall).toBe(0);
    expect(empty.hit).toBe(false);
    expect(blockFigures(["a"], 5, "x", judged([["a", 0]])).recall).toBe(0);
  });

  it("finds the judged passage with whitespace collapsed and case folded", () => {
    const block =
      "<knowledge_context>\nTitle: Payouts\nInstant payouts arrive\n  within   30 minutes.\n</knowledge_context>";
    expect(
      blockFigures(["a"], 9, block, judged([["a", 1]]), "instant payouts arrive within 30 minutes").passage,
    ).toBe(true);
    expect(blockFigures(["a"], 9, block, judged([["a", 1]]), "within 31 minutes").passage).toBe(false);
    expect(foldForPassage("  A\n\tB  ")).toBe("a b");
  });
});

describe("block summary", () => {
  it("averages by hand: entries and tokens over blocks, precision over non-empty blocks, misses count 0", () => {
    const judgments = judged([
      ["a", 1],
      ["b", 1],
    ]);
    const figures = [
      blockFigures(["a", "x"], 100, "", judgments), // precision 1/2, recall 1/2, hit
      blockFigures(["a", "b", "x", "y"], 300, "", judgments, "p"), // precision 2/4, recall 1, hit, passage missed
      blockFigures([], 0, "", judgments), // empty: no precision, recall 0, miss
    ];
    const summary = summarizeBlocks(figures, 1);
    expect(summary.entries).toBe(6 / 3);
    expect(summary.tokens).toBe(400 / 3);
    expect(summary.precision).toBe((1 / 2 + 2 / 4) / 2);
    expect(summary.recall).toBe((1 / 2 + 1 + 0 + 0) / 4);
    expect(summary.hitShare).toBe(2 / 4);
    expect(summary.emptyBlocks).toBe(1);
    expect(summary.passageQueries).toBe(1);
    expect(summary.passageShare).toBe(0);
    expect(summarizeBlocks([]).precision).toBeNull();
    expect(summarizeBlocks([]).hitShare).toBe(0);
  });
});

describe("failing queries", () => {
  const base = (overrides: Partial<BlockDiagnosisInput>): BlockDiagnosisInput => {
    const judgments = overrides.judgments ?? judged([["good", 1]]);
    const included = ["top", "second", "related"];
    return {
      id: "q1",
      text: "a question",
      judgments,
      figures: blockFigures(included, 50, "", judgments),
      ranking: ["top", "second", "third", "good"],
      scores: new Map([
        ["top", 9],
        ["second", 7.5],
        ["third", 3],
        ["good", 2],
      ]),
      primaryIds: ["top", "second"],
      expandedIds: ["related"],
      resultLimit: 2,
      exists: (id) => id !== "ghost",
      eligible: (id) => id !== "scoped",
      via: (id) => (id === "related" ? "top" : undefined),
      renderedInFull: (id) => id !== "second",
      ...overrides,
    };
  };

  it("is null when the block holds a relevant entry and no passage is missed", () => {
    expect(diagnoseBlock(base({ judgments: judged([["second", 1]]) }))).toBeNull();
  });

  it("says what the block held instead, with rank, score, origin and form", () => {
    const failure = diagnoseBlock(base({}))!;
    expect(failure.included).toEqual([
      { id: "top", relevant: false, rank: 1, score: 9, origin: "primary", form: "full" },
      { id: "second", relevant: false, rank: 2, score: 7.5, origin: "primary", form: "partial" },
      {
        id: "related",
        relevant: false,
        rank: null,
        score: null,
        origin: "expanded",
        via: "top",
        form: "full",
      },
    ]);
    expect(failure.expected).toEqual([
      { id: "good", grade: 1, rank: 4, code: "below-limit", reason: "ranked 4; the block takes the top 2" },
    ]);
    expect(failure.missedPassage).toBeNull();
  });

  it("explains each kind of miss", () => {
    const reasons = (id: string, overrides: Partial<BlockDiagnosisInput> = {}) => {
      const judgments = judged([[id, 1]]);
      return diagnoseBlock(
        base({
          judgments,
          figures: blockFigures(["top", "second", "related"], 50, "", judgments),
          ...overrides,
        }),
      )!.expected[0]!.code;
    };
    expect(reasons("ghost")).toBe("unknown");
    expect(reasons("scoped")).toBe("not-eligible");
    expect(reasons("nowhere")).toBe("not-retrieved");
    expect(reasons("third", { resultLimit: 3 })).toBe("cut");
    expect(reasons("good")).toBe("below-limit");
    // Selected (primary), but not in the block: the budget ran out.
    expect(
      reasons("late", { primaryIds: ["top", "second", "late"], ranking: ["top", "second", "late"] }),
    ).toBe("budget");
  });

  it("uses the selection's cut reason when there is one", () => {
    const judgments = judged([["third", 1]]);
    const failure = diagnoseBlock(
      base({
        judgments,
        figures: blockFigures(["top", "second"], 50, "", judgments),
        resultLimit: 8,
        cutReason: (id) => (id === "third" ? "score 3.00 below the floor 0.5 × 9.00" : undefined),
      }),
    )!;
    expect(failure.expected[0]).toMatchObject({
      code: "cut",
      reason: "score 3.00 below the floor 0.5 × 9.00",
    });
  });

  it("lists the best-ranked relevant entries first, at most five, and counts the rest", () => {
    const judgments = judged([
      ["r9", 1],
      ["r1", 1],
      ["r2", 2],
      ["r3", 1],
      ["r4", 1],
      ["r5", 1],
      ["r6", 1],
    ]);
    const failure = diagnoseBlock(
      base({
        judgments,
        figures: blockFigures(["top"], 10, "", judgments),
        ranking: ["top", "r9", "r1"],
        primaryIds: ["top"],
        expandedIds: [],
      }),
    )!;
    expect(failure.expected.map((entry) => entry.id)).toEqual(["r9", "r1", "r2", "r3", "r4"]);
    expect(failure.expected.length).toBe(FAILURE_EXPECTED_SHOWN);
    expect(failure.moreExpected).toBe(2);
  });

  it("reports a missed passage even when the entry is in the block", () => {
    const judgments = judged([["second", 1]]);
    const failure = diagnoseBlock(
      base({
        judgments,
        passage: "the answer paragraph",
        figures: blockFigures(["top", "second"], 50, "Title: second", judgments, "the answer paragraph"),
      }),
    )!;
    expect(failure.missedPassage).toBe("the answer paragraph");
    expect(failure.expected[0]).toMatchObject({ id: "second", code: "included" });
    expect(failure.expected[0]!.reason).toContain("full body did not fit");
  });
});
