/**
 * Knowledge search for adapters that hand entries to a framework (the AI SDK tool, the LangChain retriever): one
 * grounding through the engine, then the selected entries with their ranking scores and, for entries added by
 * relation expansion, the primary entry that brought them in.
 *
 * @module
 */

import { DEFAULT_RECENT_TURNS } from "../knowledge/defaults.js";
import type {
  KnowledgeConversationTurn,
  KnowledgeGroundingOutcome,
  KnowledgeIndexSnapshot,
  KnowledgeRequestScope,
  KnowledgeRetrievalConfidence,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { citationMarker, groundSafely, type KnowledgeEngineLike } from "./engine.js";

/** One entry found by {@link searchKnowledgeEntries}. */
export type KnowledgeSearchHit = {
  entry: NormalizedKnowledgeEntry;
  /** `[KB:<id>@<version>]`. */
  citation: string;
  /**
   * Ranking score (lexical BM25 plus the exact and alias boosts that applied); `null` for entries added by relation
   * expansion, which are not ranked, and when the engine does not report candidates.
   */
  score: number | null;
  /** Whether the entry was added by relation expansion rather than ranked. */
  expanded: boolean;
  /** The primary entry whose relation brought an expanded entry in; `null` for primary entries (or if unknown). */
  expandedFrom: string | null;
};

/** Result of {@link searchKnowledgeEntries}. */
export type KnowledgeSearchOutcome = {
  /** Primary entries in rank order, then expanded ones. Empty when nothing matched or grounding failed open. */
  hits: KnowledgeSearchHit[];
  confidence: KnowledgeRetrievalConfidence;
  /** The engine's outcome (block, metadata with any `failureReason`, full retrieval). */
  outcome: KnowledgeGroundingOutcome;
};

/**
 * Grounds `query` with the engine and returns the entries it selected, with scores and expansion origins. Never
 * throws: a grounding failure gives no hits and `outcome.metadata.failureReason`.
 */
export async function searchKnowledgeEntries(
  engine: KnowledgeEngineLike,
  input: { query: string; recentTurns?: KnowledgeConversationTurn[]; scope?: KnowledgeRequestScope },
): Promise<KnowledgeSearchOutcome> {
  const recentTurns = (input.recentTurns ?? []).slice(-DEFAULT_RECENT_TURNS);
  // A search is asked for, not injected: shadow mode does not apply, and shadow alternatives are not evaluated.
  const outcome = await groundSafely(engine, {
    query: input.query,
    recentTurns,
    ...(input.scope === undefined ? {} : { scope: input.scope }),
    shadow: false,
    shadowAlternatives: false,
  });
  const retrieval = outcome.retrieval;
  if (!retrieval) return { hits: [], confidence: outcome.metadata.confidence ?? "none", outcome };

  const byId = new Map(retrieval.entries.map((entry) => [entry.id, entry]));
  const primary = retrieval.selectedEntryIds.map((id) => byId.get(id)).filter((entry) => entry !== undefined);
  const expanded = retrieval.expandedEntryIds
    .map((id) => byId.get(id))
    .filter((entry) => entry !== undefined);

  // The engine reports every ranked candidate's score; engines without that report none.
  const scores = new Map((retrieval.candidates ?? []).map((candidate) => [candidate.id, candidate.score]));
  let snapshot: KnowledgeIndexSnapshot | null = null;
  try {
    snapshot = engine.getSnapshot?.() ?? null;
    // Relations are only meaningful on the snapshot that produced the selection (a rebuild may have swapped it).
    if (snapshot && !primary.every((entry) => snapshot!.entriesById.get(entry.id) === entry)) snapshot = null;
  } catch {
    snapshot = null;
  }

  const hits: KnowledgeSearchHit[] = primary.map((entry) => ({
    entry,
    citation: citationMarker(entry.id, entry.version),
    score: scores.get(entry.id) ?? null,
    expanded: false,
    expandedFrom: null,
  }));
  for (const entry of expanded) {
    // The engine expands primary entries in rank order, each through its relations in order; the first primary
    // entry that lists this one is the one that brought it in.
    const origin = snapshot
      ? primary.find((candidate) => snapshot!.relationIndex.get(candidate.id)?.includes(entry.id))
      : undefined;
    hits.push({
      entry,
      citation: citationMarker(entry.id, entry.version),
      score: null,
      expanded: true,
      expandedFrom: origin?.id ?? null,
    });
  }
  return { hits, confidence: retrieval.confidence, outcome };
}
