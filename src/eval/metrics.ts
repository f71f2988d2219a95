/**
 * Ranking metrics with `trec_eval` conventions, so figures compare with published BEIR numbers:
 *
 * - Relevance judgments are graded; a grade > 0 is relevant, 0 (or negative) is judged non-relevant, and an
 *   unjudged document counts as non-relevant.
 * - nDCG@k uses linear gains (the grade itself) and the discount `log2(rank + 1)` for 1-based ranks; the ideal DCG
 *   is computed from **all** judged relevant documents of the query (not only the retrieved ones), best grades first.
 * - Recall@k is the share of the query's relevant documents found in the first k results.
 * - MRR@k is the reciprocal rank of the first relevant document within the first k results, 0 when there is none.
 * - A query whose judgments hold no relevant document scores 0 on every metric (as `trec_eval` does).
 *
 * @module
 */

/** Relevance grades of one query: document id → grade (> 0 relevant). */
export type QueryJudgments = ReadonlyMap<string, number>;

/** Every metric of one query. */
export type QueryMetrics = {
  ndcg10: number;
  recall10: number;
  recall100: number;
  mrr10: number;
};

/** Names of the metrics, in display order. */
export const METRIC_NAMES: readonly (keyof QueryMetrics)[] = ["ndcg10", "recall10", "recall100", "mrr10"];

/** Display labels of the metrics. */
export const METRIC_LABELS: Readonly<Record<keyof QueryMetrics, string>> = {
  ndcg10: "nDCG@10",
  recall10: "Recall@10",
  recall100: "Recall@100",
  mrr10: "MRR@10",
};

function gainOf(judgments: QueryJudgments, id: string): number {
  const grade = judgments.get(id);
  return grade !== undefined && grade > 0 ? grade : 0;
}

function relevantCount(judgments: QueryJudgments): number {
  let count = 0;
  for (const grade of judgments.values()) if (grade > 0) count++;
  return count;
}

/** nDCG@k of a ranked list of document ids. */
export function ndcgAt(ranking: readonly string[], judgments: QueryJudgments, k: number): number {
  const ideal = [...judgments.values()]
    .filter((grade) => grade > 0)
    .sort((left, right) => right - left)
    .slice(0, k);
  let idealDcg = 0;
  for (let index = 0; index < ideal.length; index++) idealDcg += ideal[index]! / Math.log2(index + 2);
  if (idealDcg === 0) return 0;
  let dcg = 0;
  const depth = Math.min(k, ranking.length);
  for (let index = 0; index < depth; index++) {
    const gain = gainOf(judgments, ranking[index]!);
    if (gain > 0) dcg += gain / Math.log2(index + 2);
  }
  return dcg / idealDcg;
}

/** Recall@k: relevant documents in the first k results ÷ all relevant documents of the query. */
export function recallAt(ranking: readonly string[], judgments: QueryJudgments, k: number): number {
  const relevant = relevantCount(judgments);
  if (relevant === 0) return 0;
  let found = 0;
  const depth = Math.min(k, ranking.length);
  for (let index = 0; index < depth; index++) if (gainOf(judgments, ranking[index]!) > 0) found++;
  return found / relevant;
}

/** MRR@k (for one query, the reciprocal rank): 1 / rank of the first relevant result within k, else 0. */
export function reciprocalRankAt(ranking: readonly string[], judgments: QueryJudgments, k: number): number {
  const depth = Math.min(k, ranking.length);
  for (let index = 0; index < depth; index++) {
    if (gainOf(judgments, ranking[index]!) > 0) return 1 / (index + 1);
  }
  return 0;
}

/** Every metric of one query's ranking. */
export function queryMetrics(ranking: readonly string[], judgments: QueryJudgments): QueryMetrics {
  return {
    ndcg10: ndcgAt(ranking, judgments, 10),
    recall10: recallAt(ranking, judgments, 10),
    recall100: recallAt(ranking, judgments, 100),
    mrr10: reciprocalRankAt(ranking, judgments, 10),
  };
}

/** Arithmetic mean of each metric over queries (0 for no queries). */
export function meanMetrics(perQuery: readonly QueryMetrics[]): QueryMetrics {
  const mean: QueryMetrics = { ndcg10: 0, recall10: 0, recall100: 0, mrr10: 0 };
  if (perQuery.length === 0) return mean;
  for (const metrics of perQuery) for (const name of METRIC_NAMES) mean[name] += metrics[name];
  for (const name of METRIC_NAMES) mean[name] /= perQuery.length;
  return mean;
}

/**
 * The value at quantile `q` (0..1) of `values` by the nearest-rank method (the smallest value with at least
 * `q · n` values at or below it); NaN for an empty list.
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = values.slice().sort((left, right) => left - right);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}
