/**
 * Shadow mode: a turn retrieves and reports everything but injects nothing, so a team can measure on live traffic
 * what grounding would do (and compare configurations side by side on the same turns) before turning it on.
 *
 * The engine marks a shadow outcome itself; the client and the AI SDK middleware apply {@link asShadowOutcome}
 * again to whatever their engine returned when a turn asked for shadow mode, so a host's own engine wrapper that
 * ignores the flag still cannot get a block into the prompt.
 *
 * @module
 */
import type {
  KnowledgeGroundingOutcome,
  KnowledgeShadowEvent,
  KnowledgeShadowReport,
} from "../types/knowledge.js";

/**
 * The shadow form of an outcome: `ephemeralContext` null (nothing to inject), the block that would have been
 * injected in `shadowContext`, `metadata.shadow` true; the retrieval and any alternatives unchanged. Idempotent.
 */
export function asShadowOutcome(outcome: KnowledgeGroundingOutcome): KnowledgeGroundingOutcome {
  if (outcome.metadata?.shadow === true && outcome.ephemeralContext === null) return outcome;
  return {
    ...outcome,
    ephemeralContext: null,
    shadowContext: outcome.ephemeralContext ?? outcome.shadowContext ?? null,
    metadata: { ...outcome.metadata, shadow: true },
  };
}

/** The report of one outcome: its injected block, else the block it would have injected. */
export function shadowReportOf(outcome: KnowledgeGroundingOutcome): KnowledgeShadowReport {
  const context = outcome.ephemeralContext ?? outcome.shadowContext ?? null;
  const block = typeof context?.content === "string" && context.content !== "" ? context.content : null;
  return {
    metadata: outcome.metadata,
    block,
    citations: block === null ? [] : (context?.citations ?? []).slice(),
    contextTokens: block === null ? 0 : (outcome.metadata?.contextTokens ?? 0),
  };
}

/**
 * The `knowledge:shadow` report of a turn's outcome, or null when the turn was neither in shadow mode nor had
 * alternatives (then there is nothing to report beyond the usual metadata).
 */
export function shadowEventOf(
  query: string,
  outcome: KnowledgeGroundingOutcome,
): KnowledgeShadowEvent | null {
  const shadow = outcome.metadata?.shadow === true;
  const alternatives = outcome.alternatives ?? {};
  if (!shadow && Object.keys(alternatives).length === 0) return null;
  const reports: Record<string, KnowledgeShadowReport> = {};
  for (const [name, alternative] of Object.entries(alternatives)) reports[name] = shadowReportOf(alternative);
  return {
    query,
    primary: { ...shadowReportOf(outcome), injected: !shadow && outcome.ephemeralContext !== null },
    alternatives: reports,
  };
}
