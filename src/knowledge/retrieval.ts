/**
 * Per-turn selection: phrase lookup, authorization, lexical search, scoring, cuts, relation expansion and
 * confidence. Everything here is synchronous and bounded by the query (its tokens and their postings), never by
 * the number of entries, except the first turn of each distinct scope, which builds that scope's eligibility mask.
 * The rooms: `candidateQuery.ts` (the query and the scope), `snapshotBackend.ts` (the in-memory search),
 * `confidence.ts` (the confidence rules); this file ranks the evidence and finishes the selection.
 */
import type {
  KnowledgeIndexSnapshot,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeRetrievalRequest,
  KnowledgeScoredCandidate,
  KnowledgeSelection,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { candidateQuery, isAuthorized } from "./candidateQuery.js";
import { classifyConfidence } from "./confidence.js";
import { applyScoreCutoffs, expansionAllowed, expansionSourceCount } from "./cutoffs.js";
import { compareCodeUnits } from "./knowledgeIndex.js";
import type {
  KnowledgeCandidateEvidence,
  KnowledgeCandidateQuery,
  KnowledgeSearchBackend,
  KnowledgeSelectionEntries,
} from "./searchBackend.js";
import { type SnapshotSearchBackend, snapshotSearchBackend } from "./snapshotBackend.js";

export { candidateQuery, isAuthorized, queryTokens } from "./candidateQuery.js";
export {
  CALIBRATED_HIGH_LEAD,
  CALIBRATED_HIGH_PHRASE_WORDS,
  CALIBRATED_MEDIUM_LEXICAL_LEAD,
  classifyCalibratedConfidence,
  classifyConfidence,
} from "./confidence.js";
export { type KnowledgePhraseHits, lookupPhrases, snapshotSearchBackend } from "./snapshotBackend.js";

function compareCandidates(left: KnowledgeScoredCandidate, right: KnowledgeScoredCandidate): number {
  if (left.score !== right.score) return right.score - left.score;
  return compareCodeUnits(left.id, right.id);
}

/** The ranked candidates of a query, before entries are looked up. */
type RankedCandidates = {
  trimmed: KnowledgeScoredCandidate[];
  primary: KnowledgeScoredCandidate[];
  confidence: KnowledgeRetrievalConfidence;
  candidateCount: number;
};

/**
 * Union of phrase hits and lexical matches, boosts, sort (score, then id), `candidateLimit` and `resultLimit`
 * cuts, confidence (on the trimmed candidates), then the adaptive cut-offs when configured.
 */
function rankCandidates(
  evidence: KnowledgeCandidateEvidence,
  resolved: KnowledgeResolvedRetrieval,
): RankedCandidates {
  const candidatesById = new Map<string, KnowledgeScoredCandidate>();
  const candidateFor = (id: string): KnowledgeScoredCandidate => {
    let candidate = candidatesById.get(id);
    if (!candidate) {
      candidate = {
        id,
        score: 0,
        exact: false,
        alias: false,
        lexical: 0,
        fieldScores: {},
        matchedPhrases: [],
      };
      candidatesById.set(id, candidate);
    }
    return candidate;
  };
  for (const [id, phrases] of evidence.exact) {
    const candidate = candidateFor(id);
    candidate.exact = true;
    candidate.matchedPhrases.push(...phrases);
  }
  for (const [id, phrases] of evidence.alias) {
    const candidate = candidateFor(id);
    candidate.alias = true;
    candidate.matchedPhrases.push(...phrases);
  }
  for (const match of evidence.matches) {
    const candidate = candidateFor(match.id);
    candidate.lexical = match.score;
    candidate.fieldScores = match.fieldScores;
  }
  const candidates = [...candidatesById.values()];
  for (const candidate of candidates) {
    candidate.score =
      candidate.lexical +
      (candidate.exact ? resolved.exactBoost : 0) +
      (candidate.alias ? resolved.aliasBoost : 0);
  }
  candidates.sort(compareCandidates);
  const candidateCount = candidates.length;
  const trimmed = candidates.slice(0, Math.max(0, resolved.candidateLimit));
  // Confidence is classified on the trimmed candidates before any adaptive cut-off (see cutoffs.ts).
  const confidence = classifyConfidence(trimmed, resolved.confidenceRule);
  let primary = trimmed.slice(0, Math.max(0, resolved.resultLimit));
  const cutoff = applyScoreCutoffs(primary, resolved);
  if (cutoff.cut) {
    for (const candidate of primary.slice(cutoff.kept)) candidate.cut = { ...cutoff.cut };
    primary = primary.slice(0, cutoff.kept);
  }
  return { trimmed, primary, confidence, candidateCount };
}

/** The selection of ranked candidates: their entries and the one-hop relation expansion. */
function finishSelection(
  ranked: RankedCandidates,
  entries: KnowledgeSelectionEntries,
  query: KnowledgeCandidateQuery,
  resolved: KnowledgeResolvedRetrieval,
): KnowledgeSelection {
  const primary = ranked.primary.map((candidate) => {
    const entry = entries.entry(candidate.id);
    if (!entry) throw new Error(`the index has no entry ${JSON.stringify(candidate.id)}`);
    return entry;
  });
  const { confidence } = ranked;
  const expanded: NormalizedKnowledgeEntry[] = [];
  const relationLimit = Math.max(0, resolved.relationLimit);
  const expansionPermitted = expansionAllowed(confidence, resolved);
  if (relationLimit > 0 && expansionPermitted) {
    const selected = new Set(primary.map((entry) => entry.id));
    outer: for (const entry of primary.slice(0, expansionSourceCount(primary.length, resolved))) {
      const relations = entries.relations(entry.id);
      if (!relations) continue;
      for (const relatedId of relations) {
        if (selected.has(relatedId)) continue;
        const related = entries.entry(relatedId);
        if (!related || !isAuthorized(related, query.enabledIntegrations, query.blockedDomains)) continue;
        selected.add(relatedId);
        expanded.push(related);
        if (expanded.length >= relationLimit) break outer;
      }
    }
  }

  const selection: KnowledgeSelection = {
    primary,
    expanded,
    candidates: ranked.trimmed,
    confidence,
    candidateCount: ranked.candidateCount,
  };
  if (!expansionPermitted && relationLimit > 0 && primary.length > 0)
    selection.expansionSkipped = "expansionMinConfidence";
  return selection;
}

/**
 * Selects the entries of one turn (see the module comment and SPEC §6): phrase hits on the query, eligibility
 * before ranking, lexical top `2 × candidateLimit`, union and boosts, sort (score, then id), `candidateLimit`
 * and `resultLimit` cuts, confidence (on the trimmed candidates), the adaptive cut-offs when configured
 * (`minRelativeScore`, `scoreGapRatio`; cut candidates carry `cut`), one-hop relation expansion up to
 * `relationLimit` (limited by `expansionFromTop` and `expansionMinConfidence` when configured).
 */
export function retrieve(
  snapshot: KnowledgeIndexSnapshot,
  request: KnowledgeRetrievalRequest,
  resolved: KnowledgeResolvedRetrieval,
  blockedDomains?: readonly string[],
): KnowledgeSelection {
  const backend = snapshotSearchBackend(snapshot) as SnapshotSearchBackend;
  const query = candidateQuery(request, resolved, blockedDomains);
  const ranked = rankCandidates(backend.candidates(query), resolved);
  return finishSelection(ranked, backend, query, resolved);
}

/**
 * {@link retrieve} over any {@link KnowledgeSearchBackend} (a database answers asynchronously): the same
 * selection code, so the same registry, configuration and query give the same selection on every backend.
 */
export async function retrieveFrom(
  backend: KnowledgeSearchBackend,
  request: KnowledgeRetrievalRequest,
  resolved: KnowledgeResolvedRetrieval,
  blockedDomains?: readonly string[],
): Promise<KnowledgeSelection> {
  const query = candidateQuery(request, resolved, blockedDomains);
  const ranked = rankCandidates(await backend.candidates(query), resolved);
  const ids = ranked.primary.map((candidate) => candidate.id);
  const entries: KnowledgeSelectionEntries =
    ids.length === 0 ? NO_ENTRIES : await backend.selectionEntries(ids, query);
  return finishSelection(ranked, entries, query, resolved);
}

const NO_ENTRIES: KnowledgeSelectionEntries = {
  entry: () => undefined,
  relations: () => undefined,
};
