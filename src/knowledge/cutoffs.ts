/**
 * Adaptive cut-offs (lexground): rules that end the primary list where more entries stop helping, and rules that
 * decide whether relation expansion runs. They read only the primary candidates already chosen by the
 * candidate-limit and result-limit cuts (cost O(resultLimit)), never the index.
 *
 * Confidence is not affected: it is classified on the trimmed candidates exactly as without cut-offs (SPEC §7), so
 * a class means the same whichever cut-offs are on; the cut-offs only shrink what is selected and rendered.
 * Unset, every rule is inert and the selection is NeuroLink's.
 *
 * @module
 */
import type {
  KnowledgeCandidateCut,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeScoredCandidate,
} from "../types/knowledge.js";

/** How many primary candidates survive the adaptive cut-offs, and why the list ended there. */
export type KnowledgeCutoffOutcome = {
  /** Primary candidates kept: a prefix of the ones given. */
  kept: number;
  /** Why the list ended at index `kept` (absent when nothing was cut). */
  cut?: KnowledgeCandidateCut;
};

/**
 * Applies `minRelativeScore` and `scoreGapRatio` to the primary candidates (best first) and returns how many are
 * kept. The first `minResults` candidates (default 1) are always kept. Walking down the rest of the list, it ends
 * at the first candidate that scores below `minRelativeScore × top score` (checked first; only when the top score
 * is positive) or below `scoreGapRatio × the previous candidate's score` (only when that score is positive). Both
 * rules are unset or 0 by default, which keeps everything.
 */
export function applyScoreCutoffs(
  primary: readonly KnowledgeScoredCandidate[],
  resolved: Pick<KnowledgeResolvedRetrieval, "minRelativeScore" | "scoreGapRatio" | "minResults">,
): KnowledgeCutoffOutcome {
  const floorFraction = resolved.minRelativeScore ?? 0;
  const gapRatio = resolved.scoreGapRatio ?? 0;
  const alwaysKept = Math.max(1, resolved.minResults ?? 1);
  if (primary.length <= alwaysKept || (!(floorFraction > 0) && !(gapRatio > 0))) {
    return { kept: primary.length };
  }
  const topScore = primary[0]!.score;
  const floor = floorFraction > 0 && topScore > 0 ? floorFraction * topScore : null;
  for (let index = alwaysKept; index < primary.length; index++) {
    const candidate = primary[index]!;
    if (floor !== null && candidate.score < floor) {
      return { kept: index, cut: { rule: "minRelativeScore", threshold: floor, endedAt: candidate.id } };
    }
    const previousScore = primary[index - 1]!.score;
    if (gapRatio > 0 && previousScore > 0 && candidate.score < gapRatio * previousScore) {
      return {
        kept: index,
        cut: { rule: "scoreGapRatio", threshold: gapRatio * previousScore, endedAt: candidate.id },
      };
    }
  }
  return { kept: primary.length };
}

const CONFIDENCE_RANK: Record<KnowledgeRetrievalConfidence, number> = { none: 0, low: 1, medium: 2, high: 3 };

/** Whether the turn's confidence reaches `expansionMinConfidence` (always true when it is unset). */
export function expansionAllowed(
  confidence: KnowledgeRetrievalConfidence,
  resolved: Pick<KnowledgeResolvedRetrieval, "expansionMinConfidence">,
): boolean {
  const minimum = resolved.expansionMinConfidence;
  if (minimum === undefined) return true;
  return CONFIDENCE_RANK[confidence] >= (CONFIDENCE_RANK[minimum] ?? 0);
}

/** How many primary entries relation expansion starts from: `expansionFromTop` when set, else all of them. */
export function expansionSourceCount(
  primaryCount: number,
  resolved: Pick<KnowledgeResolvedRetrieval, "expansionFromTop">,
): number {
  const fromTop = resolved.expansionFromTop;
  return fromTop === undefined ? primaryCount : Math.min(primaryCount, Math.max(0, fromTop));
}
