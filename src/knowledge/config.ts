/**
 * Engine configuration: merging retrieval and context settings with a preset and the defaults
 * (`resolveRetrieval`, `resolveGroundingConfiguration`). A configuration is first read once (`configRead.ts`) and
 * validated (`configValidation.ts`), so bad values become issues instead of NaN scores.
 */

import type {
  KnowledgeContextConfig,
  KnowledgeEffectiveConfiguration,
  KnowledgeGroundingConfig,
  KnowledgeResolvedContext,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfig,
} from "../types/knowledge.js";
import {
  DEFAULT_ALIAS_BOOST,
  DEFAULT_ANALYZER,
  DEFAULT_BM25_B,
  DEFAULT_BM25_K1,
  DEFAULT_CANDIDATE_LIMIT,
  DEFAULT_CONFIDENCE_RULE,
  DEFAULT_EXACT_BOOST,
  DEFAULT_LONG_BODY_TOKENS,
  DEFAULT_MAX_CONTEXT_TOKENS,
  DEFAULT_MAX_PASSAGES,
  DEFAULT_PASSAGE_TOKENS,
  DEFAULT_PASSAGES_MODE,
  DEFAULT_RELATION_LIMIT,
  DEFAULT_RESULT_LIMIT,
  DEFAULT_SCORING_MODE,
  DEFAULT_TIMEOUT_MS,
  MAX_TIMER_DELAY_MS,
} from "./defaults.js";
import { resolveFieldWeights } from "./knowledgeIndex.js";
import { applyPreset } from "./presets.js";

/**
 * Merges retrieval configuration with the defaults. Each value is `config ?? default`, so an explicit 0 is kept;
 * `fieldWeights` may be partial. The adaptive cut-offs and expansion rules have no default and appear only when
 * set. Values are not checked here; see {@link validateGroundingConfig}. A preset is applied before, with
 * `applyPreset` (or use {@link resolveGroundingConfiguration}).
 */
export function resolveRetrieval(config?: KnowledgeRetrievalConfig | null): KnowledgeResolvedRetrieval {
  const source = config && typeof config === "object" ? config : {};
  const resolved: KnowledgeResolvedRetrieval = {
    candidateLimit: source.candidateLimit ?? DEFAULT_CANDIDATE_LIMIT,
    resultLimit: source.resultLimit ?? DEFAULT_RESULT_LIMIT,
    relationLimit: source.relationLimit ?? DEFAULT_RELATION_LIMIT,
    fieldWeights: resolveFieldWeights(source.fieldWeights),
    exactBoost: source.exactBoost ?? DEFAULT_EXACT_BOOST,
    aliasBoost: source.aliasBoost ?? DEFAULT_ALIAS_BOOST,
    k1: source.k1 ?? DEFAULT_BM25_K1,
    b: source.b ?? DEFAULT_BM25_B,
    analyzer: source.analyzer ?? DEFAULT_ANALYZER,
    scoring: source.scoring ?? DEFAULT_SCORING_MODE,
    confidenceRule: source.confidenceRule ?? DEFAULT_CONFIDENCE_RULE,
  };
  if (source.minRelativeScore !== undefined) resolved.minRelativeScore = source.minRelativeScore;
  if (source.scoreGapRatio !== undefined) resolved.scoreGapRatio = source.scoreGapRatio;
  if (source.minResults !== undefined) resolved.minResults = source.minResults;
  if (source.expansionFromTop !== undefined) resolved.expansionFromTop = source.expansionFromTop;
  if (source.expansionMinConfidence !== undefined)
    resolved.expansionMinConfidence = source.expansionMinConfidence;
  return resolved;
}

/**
 * Merges context configuration with the defaults (`maxTokens` 4000, citations on, passages off with 200-token
 * passages, 3 per body, bodies over 600 tokens).
 */
export function resolveContext(config?: KnowledgeContextConfig | null): KnowledgeResolvedContext {
  const source = config && typeof config === "object" ? config : {};
  return {
    maxTokens: source.maxTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
    includeCitations: source.includeCitations !== false,
    passages: source.passages ?? DEFAULT_PASSAGES_MODE,
    passageTokens: source.passageTokens ?? DEFAULT_PASSAGE_TOKENS,
    maxPassages: source.maxPassages ?? DEFAULT_MAX_PASSAGES,
    longBodyTokens: source.longBodyTokens ?? DEFAULT_LONG_BODY_TOKENS,
  };
}

/**
 * The configuration an engine runs with: the preset (default `"neurolink"`) overlaid with the explicit
 * `retrieval` and `context` fields, then completed with the defaults. `context` is also returned as merged but not
 * defaulted (`contextConfig`), which is what `assembleKnowledgeContext` takes. Validate first: an unknown preset
 * name throws a `RangeError` here.
 */
export function resolveGroundingConfiguration(
  config: Pick<KnowledgeGroundingConfig, "preset" | "retrieval" | "context">,
): KnowledgeEffectiveConfiguration & { contextConfig: KnowledgeContextConfig } {
  const merged = applyPreset(config.preset, config.retrieval, config.context);
  return {
    preset: merged.preset,
    retrieval: resolveRetrieval(merged.retrieval),
    context: resolveContext(merged.context),
    contextConfig: merged.context,
  };
}

/**
 * The timeout of one grounding operation. Values above {@link MAX_TIMER_DELAY_MS} (about 24.8 days) are that
 * maximum: Node would otherwise fire such a timer after 1 ms.
 */
export function resolveTimeout(config: Pick<KnowledgeGroundingConfig, "timeoutMs">): number {
  return Math.min(config.timeoutMs ?? DEFAULT_TIMEOUT_MS, MAX_TIMER_DELAY_MS);
}
