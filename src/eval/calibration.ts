/**
 * How well confidence classes predict a relevant top result: per-class precision (calibration) and the ROC AUC
 * of the class as a score (discrimination), for the configuration's rule or any other on the same candidates.
 */
import type { KnowledgeConfidenceRule, KnowledgeRetrievalConfidence } from "../types/knowledge.js";
import { type CalibrationCell, CONFIDENCE_CLASSES, type EvalQueryResult } from "./reportTypes.js";

export function byRuleOf(
  results: readonly EvalQueryResult[],
  rule: KnowledgeConfidenceRule,
): { calibration: Record<KnowledgeRetrievalConfidence, CalibrationCell>; discrimination: number | null } {
  const relabeled = results.map((result) => ({
    confidence: result.confidenceByRule[rule],
    topRelevant: result.topRelevant,
  }));
  return { calibration: calibrate(relabeled), discrimination: discrimination(relabeled) };
}

const CLASS_RANK: Record<KnowledgeRetrievalConfidence, number> = { none: 0, low: 1, medium: 2, high: 3 };

/**
 * ROC AUC of the confidence class (none < low < medium < high) as a predictor of a relevant top result; ties
 * count half. Null when every query or no query has a relevant top result.
 */
export function discrimination(
  results: readonly Pick<EvalQueryResult, "confidence" | "topRelevant">[],
): number | null {
  const positives = [0, 0, 0, 0];
  const negatives = [0, 0, 0, 0];
  for (const result of results) {
    const rank = CLASS_RANK[result.confidence];
    if (result.topRelevant) positives[rank]!++;
    else negatives[rank]!++;
  }
  const positiveCount = positives.reduce((sum, count) => sum + count, 0);
  const negativeCount = negatives.reduce((sum, count) => sum + count, 0);
  if (positiveCount === 0 || negativeCount === 0) return null;
  let wins = 0;
  for (let positive = 0; positive < 4; positive++) {
    for (let negative = 0; negative < 4; negative++) {
      const pairs = positives[positive]! * negatives[negative]!;
      if (positive > negative) wins += pairs;
      else if (positive === negative) wins += pairs / 2;
    }
  }
  return wins / (positiveCount * negativeCount);
}

/** Per confidence class: how many queries got it and how often their top result was relevant. */
export function calibrate(
  results: readonly Pick<EvalQueryResult, "confidence" | "topRelevant">[],
): Record<KnowledgeRetrievalConfidence, CalibrationCell> {
  const cells = {} as Record<KnowledgeRetrievalConfidence, CalibrationCell>;
  for (const name of CONFIDENCE_CLASSES) cells[name] = { count: 0, relevantTop: 0, precision: null };
  for (const result of results) {
    const cell = cells[result.confidence];
    cell.count++;
    if (result.topRelevant) cell.relevantTop++;
  }
  for (const name of CONFIDENCE_CLASSES) {
    const cell = cells[name];
    cell.precision = cell.count > 0 ? cell.relevantTop / cell.count : null;
  }
  return cells;
}
