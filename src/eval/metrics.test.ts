import { describe, expect, it } from "vitest";
import { meanMetrics, ndcgAt, quantile, queryMetrics, recallAt, reciprocalRankAt } from "./metrics.js";

const judgments = (entries: [string, number][]) => new Map(entries);

describe("nDCG@10 (linear gains, trec_eval conventions)", () => {
  it("matches a hand-computed graded example", () => {
    // Judged: d1 = 2, d2 = 1, d3 = 0 (judged non-relevant), d4 = 1. Ranking: d3, d1, d5 (unjudged), d2.
    // DCG  = 2 / log2(3) + 1 / log2(5)            = 1.2618595 + 0.4306766 = 1.6925361
    // IDCG = 2 / log2(2) + 1 / log2(3) + 1 / log2(4) = 2 + 0.6309298 + 0.5  = 3.1309298 (d4 counts though unretrieved)
    const qrels = judgments([
      ["d1", 2],
      ["d2", 1],
      ["d3", 0],
      ["d4", 1],
    ]);
    expect(ndcgAt(["d3", "d1", "d5", "d2"], qrels, 10)).toBeCloseTo(
      1.6925360652163082 / 3.1309297535714578,
      12,
    );
    expect(ndcgAt(["d3", "d1", "d5", "d2"], qrels, 10)).toBeCloseTo(0.5405857679450102, 12);
  });

  it("builds the ideal ranking from every judged relevant document, best grades first", () => {
    // Only b (grade 1) is retrieved, at rank 1; the ideal is a (2), b (1), c (1): 1 / (2 + 1/log2(3) + 1/2).
    const qrels = judgments([
      ["a", 2],
      ["b", 1],
      ["c", 1],
    ]);
    expect(ndcgAt(["b"], qrels, 10)).toBeCloseTo(0.31939394323979897, 12);
  });

  it("is 1 for the ideal order, 0 without relevant results in the cut, 0 without relevant judgments", () => {
    const qrels = judgments([
      ["a", 3],
      ["b", 1],
    ]);
    expect(ndcgAt(["a", "b", "x"], qrels, 10)).toBe(1);
    expect(ndcgAt(["b", "a"], qrels, 10)).toBeLessThan(1);
    const late = ["x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "a"];
    expect(ndcgAt(late, qrels, 10)).toBe(0);
    expect(ndcgAt(["a"], judgments([["a", 0]]), 10)).toBe(0);
    expect(ndcgAt([], qrels, 10)).toBe(0);
  });

  it("cuts the ideal at k too", () => {
    // 12 relevant documents of grade 1, all retrieved: nDCG@10 is 1 (both DCG and IDCG stop at rank 10).
    const ids = Array.from({ length: 12 }, (_, index) => `r${index}`);
    const qrels = judgments(ids.map((id) => [id, 1]));
    expect(ndcgAt(ids, qrels, 10)).toBeCloseTo(1, 12);
  });

  it("treats negative grades as non-relevant", () => {
    const qrels = judgments([
      ["a", -1],
      ["b", 1],
    ]);
    expect(ndcgAt(["a", "b"], qrels, 10)).toBeCloseTo(1 / Math.log2(3), 12);
  });
});

describe("Recall@k and MRR@k", () => {
  const qrels = judgments([
    ["d1", 2],
    ["d2", 1],
    ["d3", 0],
    ["d4", 1],
  ]);

  it("counts relevant results in the cut over all relevant judgments", () => {
    expect(recallAt(["d3", "d1", "d5", "d2"], qrels, 10)).toBeCloseTo(2 / 3, 12);
    expect(recallAt(["d3", "d1", "d5", "d2"], qrels, 2)).toBeCloseTo(1 / 3, 12);
    expect(recallAt(["d3"], qrels, 10)).toBe(0);
    expect(recallAt(["d1"], judgments([["d1", 0]]), 10)).toBe(0);
  });

  it("reports Recall@100 beyond rank 10", () => {
    const ranking = [...Array.from({ length: 40 }, (_, index) => `x${index}`), "d4", "d1", "d2"];
    const metrics = queryMetrics(ranking, qrels);
    expect(metrics.recall10).toBe(0);
    expect(metrics.recall100).toBe(1);
    expect(metrics.ndcg10).toBe(0);
    expect(metrics.mrr10).toBe(0);
  });

  it("takes the reciprocal rank of the first relevant result within k", () => {
    expect(reciprocalRankAt(["d3", "d1", "d2"], qrels, 10)).toBe(0.5);
    expect(reciprocalRankAt(["d4"], qrels, 10)).toBe(1);
    expect(reciprocalRankAt(["d3", "x", "d1"], qrels, 2)).toBe(0);
    expect(reciprocalRankAt([], qrels, 10)).toBe(0);
  });

  it("averages per-query metrics", () => {
    const mean = meanMetrics([
      { ndcg10: 1, recall10: 0.5, recall100: 1, mrr10: 1 },
      { ndcg10: 0, recall10: 0.25, recall100: 0.5, mrr10: 0.5 },
    ]);
    expect(mean).toEqual({ ndcg10: 0.5, recall10: 0.375, recall100: 0.75, mrr10: 0.75 });
    expect(meanMetrics([])).toEqual({ ndcg10: 0, recall10: 0, recall100: 0, mrr10: 0 });
  });
});

describe("quantile (nearest rank)", () => {
  it("picks the smallest value with at least q·n values at or below it", () => {
    const values = [5, 1, 3, 2, 4];
    expect(quantile(values, 0.5)).toBe(3);
    expect(quantile(values, 0.2)).toBe(1);
    expect(quantile(values, 0.21)).toBe(2);
    expect(quantile(values, 0.99)).toBe(5);
    expect(quantile(values, 0)).toBe(1);
    expect(quantile([], 0.5)).toBeNaN();
  });
});
