/**
 * One turn's retrieval in the CLI, with everything the engine knows about it: the candidates with their scores per
 * field, boosts and matched phrases, the cuts, the expansion, the rendered context and the timings.
 */
import { performance } from "node:perf_hooks";
import { assembleKnowledgeContext, DEFAULT_MAX_CONTEXT_TOKENS, retrieve } from "../index.js";
import { DEFAULT_ANALYZER } from "../knowledge/defaults.js";
import type {
  KnowledgeCandidateCut,
  KnowledgeCitation,
  KnowledgeExpansionSkip,
  KnowledgeFieldName,
  KnowledgeRetrievalConfidence,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { parseList } from "./io.js";

export type { CliGroundingConfig } from "./config.js";

import type { PreparedKnowledgeBase } from "./session.js";

/** Flags that scope one turn. */
export type TurnScope = {
  integrations?: string | string[];
  allIntegrations?: boolean;
  blockedDomains?: string | string[];
  resultLimit?: number;
};

/** One ranked candidate, with the evidence behind its score. */
export type ExplainedCandidate = {
  rank: number;
  id: string;
  title: string;
  kind: string;
  score: number;
  lexical: number;
  exact: boolean;
  alias: boolean;
  fieldScores: Partial<Record<KnowledgeFieldName, number>>;
  matchedPhrases: string[];
  /** Whether the candidate made it into the primary selection. */
  selected: boolean;
  /** Why an adaptive cut-off removed it from the primary selection (absent otherwise). */
  cut?: KnowledgeCandidateCut;
};

/** Everything one turn produced, as `query --json` prints it. */
export type TurnReport = {
  query: string;
  enabledIntegrations: string[];
  blockedDomains: string[];
  confidence: KnowledgeRetrievalConfidence;
  /** Eligible candidates before the candidate-limit cut. */
  candidateCount: number;
  candidates: ExplainedCandidate[];
  primary: { id: string; title: string; summary: string; version: string }[];
  expanded: { id: string; title: string; summary: string; version: string; via: string | null }[];
  /** Set when an expansion rule stopped relation expansion. */
  expansionSkipped?: KnowledgeExpansionSkip;
  context: {
    text: string;
    tokens: number;
    maxTokens: number;
    truncated: boolean;
    citations: KnowledgeCitation[];
  };
  timing: { retrieveMs: number; assembleMs: number };
};

function asList(value: string | string[] | undefined): string[] | undefined {
  return Array.isArray(value) ? value : parseList(value);
}

/** The integrations and blocked domains a turn runs with: flags first, then the config file, then none. */
export function resolveScope(
  prepared: PreparedKnowledgeBase,
  scope: TurnScope,
): { enabledIntegrations: string[]; blockedDomains: string[] } {
  return {
    enabledIntegrations: scope.allIntegrations ? prepared.integrations : (asList(scope.integrations) ?? []),
    blockedDomains: asList(scope.blockedDomains) ?? prepared.config.blockedDomains ?? [],
  };
}

/** Runs one turn on a prepared knowledge base. */
export function runTurn(prepared: PreparedKnowledgeBase, query: string, scope: TurnScope = {}): TurnReport {
  const { enabledIntegrations, blockedDomains } = resolveScope(prepared, scope);
  const resolved =
    scope.resultLimit !== undefined
      ? { ...prepared.resolved, resultLimit: scope.resultLimit }
      : prepared.resolved;
  const retrieveStart = performance.now();
  const selection = retrieve(
    prepared.snapshot,
    { query, recentTurns: [], enabledIntegrations },
    resolved,
    blockedDomains,
  );
  const retrieveMs = performance.now() - retrieveStart;
  const assembleStart = performance.now();
  const assembled = assembleKnowledgeContext(selection, prepared.context, {
    query,
    analyzer: resolved.analyzer ?? DEFAULT_ANALYZER,
  });
  const assembleMs = performance.now() - assembleStart;

  const primaryIds = new Set(selection.primary.map((entry) => entry.id));
  const byId = prepared.snapshot.entriesById;
  const candidates = selection.candidates.map((candidate, index) => {
    const entry = byId.get(candidate.id);
    return {
      rank: index + 1,
      id: candidate.id,
      title: entry?.title ?? "",
      kind: entry?.kind ?? "",
      score: candidate.score,
      lexical: candidate.lexical,
      exact: candidate.exact,
      alias: candidate.alias,
      fieldScores: candidate.fieldScores,
      matchedPhrases: candidate.matchedPhrases,
      selected: primaryIds.has(candidate.id),
      ...(candidate.cut ? { cut: candidate.cut } : {}),
    };
  });
  const describe = (entry: NormalizedKnowledgeEntry) => ({
    id: entry.id,
    title: entry.title,
    summary: entry.summary,
    version: entry.version,
  });
  const expanded = selection.expanded.map((entry) => {
    const via = selection.primary.find((primary) =>
      (prepared.snapshot.relationIndex.get(primary.id) ?? []).includes(entry.id),
    );
    return { ...describe(entry), via: via?.id ?? null };
  });
  return {
    query,
    enabledIntegrations,
    blockedDomains,
    confidence: selection.confidence,
    candidateCount: selection.candidateCount,
    candidates,
    primary: selection.primary.map(describe),
    expanded,
    ...(selection.expansionSkipped ? { expansionSkipped: selection.expansionSkipped } : {}),
    context: {
      text: assembled.assembledContext,
      tokens: assembled.contextTokens,
      maxTokens: prepared.context.maxTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
      truncated: assembled.truncated,
      citations: assembled.citations,
    },
    timing: { retrieveMs, assembleMs },
  };
}
