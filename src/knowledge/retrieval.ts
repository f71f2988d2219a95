/**
 * Per-turn selection: phrase lookup, authorization, lexical search, scoring, cuts, relation expansion and
 * confidence. Everything here is synchronous and bounded by the query (its tokens and their postings), never by
 * the number of entries, except the first turn of each distinct scope, which builds that scope's eligibility mask.
 */
import type {
  KnowledgeConfidenceRule,
  KnowledgeConversationTurn,
  KnowledgeIndexSnapshot,
  KnowledgeLexicalMatch,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeRetrievalRequest,
  KnowledgeScoredCandidate,
  KnowledgeSelection,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { applyScoreCutoffs, expansionAllowed, expansionSourceCount } from "./cutoffs.js";
import {
  CONFIDENCE_DOMINANCE_RATIO,
  CONFIDENCE_MIN_FIELDS,
  HISTORY_TURN_CHARS,
  MAX_QUERY_CHARS,
  MAX_QUERY_TOKENS,
} from "./defaults.js";
import { phraseIds } from "./derivedMaps.js";
import {
  type CompiledSnapshot,
  compareCodeUnits,
  getCompiledSnapshot,
  KnowledgeLexicalIndex,
} from "./knowledgeIndex.js";
import { phraseWordCount, tokenize } from "./normalize.js";
import { PhraseTrie } from "./phraseTrie.js";
import type {
  KnowledgeCandidateEvidence,
  KnowledgeCandidateQuery,
  KnowledgeSearchBackend,
  KnowledgeSelectionEntries,
} from "./searchBackend.js";

/** Phrase hits of one query: entry id → matched phrases, for exact (id/title) and alias keys. */
export type KnowledgePhraseHits = {
  exact: Map<string, string[]>;
  alias: Map<string, string[]>;
};

/** The query text as used: at most {@link MAX_QUERY_CHARS} code units, `""` for non-strings. */
function boundedQuery(query: unknown): string {
  if (typeof query !== "string") return "";
  return query.length > MAX_QUERY_CHARS ? query.slice(0, MAX_QUERY_CHARS) : query;
}

/** Tokens of the query used for phrase lookup (at most {@link MAX_QUERY_TOKENS}). */
export function queryTokens(query: unknown): string[] {
  const tokens = tokenize(boundedQuery(query));
  return tokens.length > MAX_QUERY_TOKENS ? tokens.slice(0, MAX_QUERY_TOKENS) : tokens;
}

/**
 * Finds every contiguous query phrase (1 word up to the longest indexed phrase) that is an exact or alias key.
 * Phrases are reported in NeuroLink's generation order: by length, then by start, each distinct phrase once.
 * The walk from each start follows the phrase trie and stops as soon as no key continues the n-gram.
 */
export function lookupPhrases(
  tokens: readonly string[],
  snapshot: KnowledgeIndexSnapshot,
  phraseTrie: PhraseTrie,
): KnowledgePhraseHits {
  const exact = new Map<string, string[]>();
  const alias = new Map<string, string[]>();
  const record = (target: Map<string, string[]>, ids: Set<string> | undefined, phrase: string): void => {
    if (!ids) return;
    for (const id of ids) {
      const list = target.get(id);
      if (list) list.push(phrase);
      else target.set(id, [phrase]);
    }
  };
  for (const keyIndex of phraseTrie.matchIndices(tokens)) {
    const phrase = phraseTrie.keyAt(keyIndex);
    record(exact, phraseIds(snapshot.exactIndex, phraseTrie, keyIndex, phrase), phrase);
    record(alias, phraseIds(snapshot.aliasIndex, phraseTrie, keyIndex, phrase), phrase);
  }
  return { exact, alias };
}

/** Lowercased set of enabled integrations (non-strings ignored). */
function enabledSet(enabledIntegrations: unknown): Set<string> {
  const set = new Set<string>();
  if (Array.isArray(enabledIntegrations)) {
    for (const integration of enabledIntegrations)
      if (typeof integration === "string") set.add(integration.toLowerCase());
  }
  return set;
}

/**
 * Whether an entry may be retrieved for a request: it is `active`, its domain is not blocked (exact,
 * case-sensitive), and it has no integrations or one of them is enabled (case-insensitive).
 */
export function isAuthorized(
  entry: NormalizedKnowledgeEntry,
  enabledIntegrations: ReadonlySet<string> | readonly string[],
  blockedDomains?: ReadonlySet<string> | readonly string[],
): boolean {
  if (entry.status !== "active") return false;
  if (blockedDomains) {
    const blocked =
      "has" in blockedDomains ? blockedDomains.has(entry.domain) : blockedDomains.includes(entry.domain);
    if (blocked) return false;
  }
  if (entry.integrations.length === 0) return true;
  const enabled = "has" in enabledIntegrations ? enabledIntegrations : enabledSet(enabledIntegrations);
  for (const integration of entry.integrations) if (enabled.has(integration.toLowerCase())) return true;
  return false;
}

/** The eligibility mask of a scope, from the snapshot's bounded cache or built from precomputed lists. */
function eligibilityMask(
  compiled: CompiledSnapshot,
  enabled: ReadonlySet<string>,
  blocked: ReadonlySet<string>,
): Uint8Array {
  const key = JSON.stringify([[...blocked].sort(compareCodeUnits), [...enabled].sort(compareCodeUnits)]);
  const cache = compiled.eligibilityCache;
  const cached = cache.get(key);
  if (cached) return cached;
  const mask = compiled.universalMask.slice();
  for (const integration of enabled) {
    const docs = compiled.activeByIntegration.get(integration);
    if (docs) for (const doc of docs) mask[doc] = 1;
  }
  for (const domain of blocked) {
    const docs = compiled.byDomain.get(domain);
    if (docs) for (const doc of docs) mask[doc] = 0;
  }
  cache.set(key, mask);
  return mask;
}

/** Phrase tries of snapshots built elsewhere (built once per snapshot, from its maps). */
const fallbackPhraseTries = new WeakMap<KnowledgeIndexSnapshot, PhraseTrie>();
function phraseTrieOf(snapshot: KnowledgeIndexSnapshot, compiled: CompiledSnapshot | undefined): PhraseTrie {
  if (compiled) return compiled.phraseTrie;
  let trie = fallbackPhraseTries.get(snapshot);
  if (!trie) {
    trie = new PhraseTrie();
    for (const key of snapshot.exactIndex.keys()) trie.add(key);
    for (const key of snapshot.aliasIndex.keys()) if (!snapshot.exactIndex.has(key)) trie.add(key);
    trie.trimToSize();
    fallbackPhraseTries.set(snapshot, trie);
  }
  return trie;
}

/** Lexical tokens of a request: the query's, then the first 400 code units of each recent turn's. */
function lexicalTokens(tokens: readonly string[], recentTurns: unknown): string[] {
  const all = tokens.slice();
  if (Array.isArray(recentTurns)) {
    for (const turn of recentTurns as KnowledgeConversationTurn[]) {
      const text = turn && typeof turn.text === "string" ? turn.text : "";
      if (text === "") continue;
      for (const token of tokenize(text.slice(0, HISTORY_TURN_CHARS))) all.push(token);
    }
  }
  return all;
}

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

function compareCandidates(left: KnowledgeScoredCandidate, right: KnowledgeScoredCandidate): number {
  if (left.score !== right.score) return right.score - left.score;
  return compareCodeUnits(left.id, right.id);
}

/** The candidate query of a request: phrase and lexical tokens, `2 × candidateLimit`, the scope as sets. */
export function candidateQuery(
  request: KnowledgeRetrievalRequest,
  resolved: KnowledgeResolvedRetrieval,
  blockedDomains?: readonly string[],
): KnowledgeCandidateQuery {
  const tokens = queryTokens(request?.query);
  const blocked = new Set<string>();
  if (Array.isArray(blockedDomains))
    for (const domain of blockedDomains) if (typeof domain === "string") blocked.add(domain);
  return {
    phraseTokens: tokens,
    lexicalTokens: lexicalTokens(tokens, request?.recentTurns),
    topK: resolved.candidateLimit * 2,
    enabledIntegrations: enabledSet(request?.enabledIntegrations),
    blockedDomains: blocked,
  };
}

/** The in-memory snapshot as a {@link KnowledgeSearchBackend} (synchronous). */
class SnapshotSearchBackend implements KnowledgeSearchBackend, KnowledgeSelectionEntries {
  private readonly compiled: CompiledSnapshot | undefined;
  constructor(private readonly snapshot: KnowledgeIndexSnapshot) {
    this.compiled = getCompiledSnapshot(snapshot);
  }

  candidates(query: KnowledgeCandidateQuery): KnowledgeCandidateEvidence {
    const snapshot = this.snapshot;
    const compiled = this.compiled;
    const hits = lookupPhrases(query.phraseTokens, snapshot, phraseTrieOf(snapshot, compiled));
    let matches: KnowledgeLexicalMatch[];
    let isEligible: (id: string) => boolean;
    if (compiled && snapshot.lexical instanceof KnowledgeLexicalIndex) {
      const mask = eligibilityMask(compiled, query.enabledIntegrations, query.blockedDomains);
      const lexical = compiled.lexical;
      isEligible = (id) => {
        const doc = lexical.denseIdOf(id);
        return doc >= 0 && mask[doc] === 1;
      };
      matches = lexical.searchWithMask(query.lexicalTokens, query.topK, mask);
    } else {
      // A snapshot assembled by hand or backed by another searcher: the seed's contract with an id set.
      const eligibleIds = new Set<string>();
      for (const entry of snapshot.entriesById.values())
        if (isAuthorized(entry, query.enabledIntegrations, query.blockedDomains)) eligibleIds.add(entry.id);
      isEligible = (id) => eligibleIds.has(id);
      matches = snapshot.lexical.search(query.lexicalTokens as string[], query.topK, eligibleIds);
    }
    return {
      exact: eligibleHits(hits.exact, isEligible),
      alias: eligibleHits(hits.alias, isEligible),
      matches,
    };
  }

  selectionEntries(): KnowledgeSelectionEntries {
    return this;
  }

  entry(id: string): NormalizedKnowledgeEntry | undefined {
    return this.snapshot.entriesById.get(id);
  }

  relations(id: string): readonly string[] | undefined {
    return this.snapshot.relationIndex.get(id);
  }
}

/** The phrase hits of eligible entries only (usually all of them: then the map itself). */
function eligibleHits(
  hits: Map<string, string[]>,
  isEligible: (id: string) => boolean,
): Map<string, string[]> {
  let filtered: Map<string, string[]> | null = null;
  for (const [id, phrases] of hits) {
    if (isEligible(id)) {
      filtered?.set(id, phrases);
    } else if (filtered === null) {
      filtered = new Map();
      for (const [earlierId, earlierPhrases] of hits) {
        if (earlierId === id) break;
        filtered.set(earlierId, earlierPhrases);
      }
    }
  }
  return filtered ?? hits;
}

const snapshotBackends = new WeakMap<KnowledgeIndexSnapshot, SnapshotSearchBackend>();

/** The search backend of an in-memory snapshot (one per snapshot). */
export function snapshotSearchBackend(snapshot: KnowledgeIndexSnapshot): KnowledgeSearchBackend {
  let backend = snapshotBackends.get(snapshot);
  if (!backend) {
    backend = new SnapshotSearchBackend(snapshot);
    snapshotBackends.set(snapshot, backend);
  }
  return backend;
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
