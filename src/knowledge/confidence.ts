/**
 * Retrieval confidence: the seed's rule (NeuroLink's) and the calibrated one, each a pure function of the trimmed
 * candidates.
 */
import type {
  KnowledgeConfidenceRule,
  KnowledgeRetrievalConfidence,
  KnowledgeScoredCandidate,
} from "../types/knowledge.js";
import { CONFIDENCE_DOMINANCE_RATIO, CONFIDENCE_MIN_FIELDS } from "./defaults.js";
import { phraseWordCount } from "./normalize.js";

/**
 * Classifies retrieval confidence from the (trimmed) candidates. With the default rule `"seed"` (NeuroLink's):
 * `none` without candidates; `high` when the top one matched an id, title or alias phrase; `medium` when it has
 * lexical evidence in at least two fields or scores at least 1.5× the second; otherwise `low`. With
 * `"calibrated"`, see {@link classifyCalibratedConfidence}.
 */
export function classifyConfidence(
  candidates: readonly KnowledgeScoredCandidate[],
  rule: KnowledgeConfidenceRule = "seed",
): KnowledgeRetrievalConfidence {
  if (rule === "calibrated") return classifyCalibratedConfidence(candidates);
  const top = candidates[0];
  if (!top) return "none";
  if (top.exact || top.alias) return "high";
  if (Object.keys(top.fieldScores).length >= CONFIDENCE_MIN_FIELDS) return "medium";
  const second = candidates[1];
  if (second && top.score >= CONFIDENCE_DOMINANCE_RATIO * second.score) return "medium";
  return "low";
}

/** Words a phrase hit needs for `high` under the calibrated rule: one-word titles match too much by chance. */
export const CALIBRATED_HIGH_PHRASE_WORDS = 2;
/** Lead (score ratio) over the second candidate a phrase hit needs for `high` under the calibrated rule. */
export const CALIBRATED_HIGH_LEAD = 1.2;
/** Lexical lead over the second candidate that earns `medium` under the calibrated rule. */
export const CALIBRATED_MEDIUM_LEXICAL_LEAD = 1.3;

/**
 * The `"calibrated"` confidence rule, chosen by measuring how well each class predicts a relevant top result
 * (`lexground eval`; figures in `research/results/confidence.md`). Evidence in two fields says little (a body
 * match is almost always a summary match too), and a one-word title or id inside a long query is mostly chance,
 * so: `none` without candidates; `high` when the top candidate matched an id, title or alias phrase of at least
 * two words and scores at least 1.2× the second; `medium` when its lexical score is at least 1.3× the second's (or
 * it is the only candidate with lexical evidence), or it has such a phrase hit without the lead; otherwise `low`.
 */
export function classifyCalibratedConfidence(
  candidates: readonly KnowledgeScoredCandidate[],
): KnowledgeRetrievalConfidence {
  const top = candidates[0];
  if (!top) return "none";
  const second = candidates[1];
  let phraseWords = 0;
  if (top.exact || top.alias) {
    for (const phrase of top.matchedPhrases) phraseWords = Math.max(phraseWords, phraseWordCount(phrase));
  }
  const multiWordPhrase = phraseWords >= CALIBRATED_HIGH_PHRASE_WORDS;
  if (multiWordPhrase && (!second || top.score >= CALIBRATED_HIGH_LEAD * second.score)) return "high";
  const lexicalLead =
    top.lexical > 0 && (!second || top.lexical >= CALIBRATED_MEDIUM_LEXICAL_LEAD * second.lexical);
  if (lexicalLead || multiWordPhrase) return "medium";
  return "low";
}
