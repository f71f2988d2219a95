/** Per-query differences between two evaluated configurations (what `lexground eval --diff` lists). */
import type { EvalQuery } from "./data.js";
import type { EvalConfigurationResult, EvalQueryDiff } from "./reportTypes.js";

/**
 * Per-query differences between two configurations' results: queries whose nDCG@10, confidence or top result
 * changed, largest |Δ nDCG@10| first (ties by query id).
 */
export function diffConfigurations(
  first: EvalConfigurationResult,
  second: EvalConfigurationResult,
  queries: readonly EvalQuery[],
): EvalQueryDiff[] {
  const texts = new Map(queries.map((query) => [query.id, query.text]));
  const secondById = new Map(second.queries.map((result) => [result.id, result]));
  const diffs: EvalQueryDiff[] = [];
  for (const before of first.queries) {
    const after = secondById.get(before.id);
    if (!after) continue;
    const delta = after.metrics.ndcg10 - before.metrics.ndcg10;
    if (Math.abs(delta) < 1e-12 && before.confidence === after.confidence && before.topId === after.topId) {
      continue;
    }
    diffs.push({
      id: before.id,
      text: texts.get(before.id) ?? "",
      before: before.metrics.ndcg10,
      after: after.metrics.ndcg10,
      delta,
      confidenceBefore: before.confidence,
      confidenceAfter: after.confidence,
      topBefore: before.topId,
      topAfter: after.topId,
    });
  }
  diffs.sort(
    (left, right) =>
      Math.abs(right.delta) - Math.abs(left.delta) || (left.id < right.id ? -1 : left.id > right.id ? 1 : 0),
  );
  return diffs;
}
