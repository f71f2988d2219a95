/**
 * What the middleware reports on each step's result and on a stream's `finish` part:
 * `providerMetadata[providerOptionsKey]`.
 */
import type { LanguageModelV3StreamPart, SharedV3ProviderMetadata } from "@ai-sdk/provider";
import type { KnowledgeGroundingMetadata } from "../types/knowledge.js";
import type { StepGrounding } from "./aiSdkMemo.js";
import { citationMarker } from "./engine.js";

/**
 * The grounding metadata placed in `providerMetadata[providerOptionsKey]` of every grounded step's result (and of
 * the stream's `finish` part): the engine's content-free metadata plus the citation markers of the block.
 */
export type GroundingProviderMetadata = KnowledgeGroundingMetadata & {
  /** Citation markers (`[KB:id@version]`) of the entries included in the block. */
  citations: string[];
  /** Whether a block was added to the prompt. */
  grounded: boolean;
  /** True when this step reused the retrieval of an earlier step of the same turn instead of retrieving again. */
  reused: boolean;
  /** In shadow mode: the citation markers of the block that would have been added (lexground). */
  shadowCitations?: string[];
};

function toProviderMetadata(grounding: StepGrounding): GroundingProviderMetadata {
  const { metadata, ephemeralContext } = grounding.outcome;
  const result: GroundingProviderMetadata = {
    retrievalMode: "lexical",
    selectedIds: Array.isArray(metadata.selectedIds) ? metadata.selectedIds.slice() : [],
    expandedIds: Array.isArray(metadata.expandedIds) ? metadata.expandedIds.slice() : [],
    candidateCount: metadata.candidateCount ?? 0,
    contextTokens: metadata.contextTokens ?? 0,
    truncated: metadata.truncated === true,
    durationMs: metadata.durationMs ?? 0,
    citations: (ephemeralContext?.citations ?? []).map((citation) =>
      citationMarker(citation.id, citation.version),
    ),
    grounded: ephemeralContext !== null && ephemeralContext !== undefined,
    reused: grounding.reused,
  };
  // providerMetadata must be JSON: optional fields are left out rather than set to undefined.
  if (metadata.confidence !== undefined) result.confidence = metadata.confidence;
  if (metadata.failureReason !== undefined) result.failureReason = metadata.failureReason;
  if (metadata.shadow === true) {
    result.shadow = true;
    result.shadowCitations = (grounding.outcome.shadowContext?.citations ?? []).map((citation) =>
      citationMarker(citation.id, citation.version),
    );
  }
  return result;
}

export function withMetadata(
  providerMetadata: SharedV3ProviderMetadata | undefined,
  key: string,
  grounding: StepGrounding,
): SharedV3ProviderMetadata {
  return { ...providerMetadata, [key]: toProviderMetadata(grounding) };
}

/** A stream transform that adds the grounding metadata to the `finish` part and passes every other part through. */
export function finishWithMetadata(
  key: string,
  grounding: StepGrounding,
): TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart> {
  return new TransformStream({
    transform(part, controller) {
      if (part.type === "finish") {
        controller.enqueue({
          ...part,
          providerMetadata: withMetadata(part.providerMetadata, key, grounding),
        });
      } else {
        controller.enqueue(part);
      }
    },
  });
}
