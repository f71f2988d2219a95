/**
 * Per-turn selection: phrase lookup, authorization, lexical search, scoring, cuts, relation expansion and
 * confidence. Everything here is synchronous and bounded by the query (its tokens and their postings), never by
 * the number of entries, except the first turn of each distinct scope, which builds that scope's eligibility mask.
 * The rooms: `candidateQuery.ts` (the query and the scope), `snapshotBackend.ts` (the in-memory search),
 * `confidence.ts` (the confidence rules); this file ranks the evidence and finishes the selection.
 */
import type {
  KnowledgeIndexSnapshot,
  KnowledgeLexicalMatch,
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
  const { exact, alias } = evidence;
  const matches = new Map<string, KnowledgeLexicalMatch>();
  for (const match of evidence.matches) matches.set(match.id, match);
  // Every candidate's score as its object holds it (the same sum), but only the best `candidateLimit` become
  // objects: at a million entries a turn's phrase hits named hundreds of entries, each made a candidate (an
  // object, its phrases copied), all sorted, then nearly all cut.
  const best = new BestCandidates(sliceEnd(Math.max(0, resolved.candidateLimit)));
  const scoreOf = (id: string, isExact: boolean, isAlias: boolean): number =>
    (matches.get(id)?.score ?? 0) + (isExact ? resolved.exactBoost : 0) + (isAlias ? resolved.aliasBoost : 0);
  for (const id of exact.keys()) best.offer(id, scoreOf(id, true, alias.has(id)));
  for (const id of alias.keys()) if (!exact.has(id)) best.offer(id, scoreOf(id, false, true));
  for (const id of matches.keys())
    if (!exact.has(id) && !alias.has(id)) best.offer(id, scoreOf(id, false, false));
  const trimmed = best.ranked().map(({ id, score }): KnowledgeScoredCandidate => {
    const match = matches.get(id);
    const exactPhrases = exact.get(id);
    const aliasPhrases = alias.get(id);
    const candidate: KnowledgeScoredCandidate = {
      id,
      score,
      exact: exactPhrases !== undefined,
      alias: aliasPhrases !== undefined,
      lexical: match ? match.score : 0,
      fieldScores: match ? match.fieldScores : {},
      matchedPhrases: [],
    };
    if (exactPhrases) candidate.matchedPhrases.push(...exactPhrases);
    if (aliasPhrases) candidate.matchedPhrases.push(...aliasPhrases);
    return candidate;
  });
  // Confidence is classified on the trimmed candidates before any adaptive cut-off (see cutoffs.ts).
  const confidence = classifyConfidence(trimmed, resolved.confidenceRule);
  let primary = trimmed.slice(0, Math.max(0, resolved.resultLimit));
  const cutoff = applyScoreCutoffs(primary, resolved);
  if (cutoff.cut) {
    for (const candidate of primary.slice(cutoff.kept)) candidate.cut = { ...cutoff.cut };
    primary = primary.slice(0, cutoff.kept);
  }
  return { trimmed, primary, confidence, candidateCount: best.count };
}

/** What `array.slice(0, value)` keeps at most: `value` truncated, 0 for NaN. */
function sliceEnd(value: number): number {
  return Number.isNaN(value) ? 0 : Math.trunc(value);
}

/**
 * The best `keep` of the candidates offered, by score descending then id (code-unit order), as sorting them all
 * and keeping the first `keep` would give (ids are distinct, so the order is total), and how many were offered.
 */
class BestCandidates {
  private readonly kept: { id: string; score: number }[] = [];
  count = 0;
  constructor(private readonly keep: number) {}

  offer(id: string, score: number): void {
    this.count++;
    const kept = this.kept;
    if (kept.length >= this.keep) {
      if (this.keep <= 0 || !ahead(id, score, kept[kept.length - 1]!)) return;
      kept.pop();
    }
    // Binary search for the first kept candidate this one is ahead of.
    let low = 0;
    let high = kept.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (ahead(id, score, kept[middle]!)) high = middle;
      else low = middle + 1;
    }
    kept.splice(low, 0, { id, score });
  }

  ranked(): { id: string; score: number }[] {
    return this.kept;
  }
}

/** Whether a candidate (`id`, `score`) ranks ahead of `other`. */
function ahead(id: string, score: number, other: { id: string; score: number }): boolean {
  return score !== other.score ? score > other.score : compareCodeUnits(id, other.id) < 0;
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
