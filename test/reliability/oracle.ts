/**
 * An independent filter-then-rank oracle for authorization tests (RELIABILITY 36) and the naive BM25 scorer
 * (RELIABILITY 39). Written from SPEC §4-§6 with nothing but arrays and plain loops: it shares only the tokenizer
 * and the query caps with the engine (as the plain oracle in test/plain does), and not the plain oracle's code, so
 * a mistake copied into both would have to be made a third time.
 *
 * The order of work is the point: first decide, entry by entry, what the caller may see; then score only those
 * entries (corpus statistics stay over every entry, as the engine's IDF does); then cut; then expand relations
 * among allowed entries only.
 */
import { HISTORY_TURN_CHARS, MAX_QUERY_CHARS, MAX_QUERY_TOKENS, tokenize } from "../../src/index.js";
import type {
  KnowledgeFieldName,
  KnowledgeFieldWeights,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalRequest,
  NormalizedKnowledgeEntry,
} from "../../src/types/knowledge.js";

export const ORACLE_FIELDS: readonly KnowledgeFieldName[] = [
  "title",
  "aliases",
  "keywords",
  "summary",
  "body",
];

/** The entitlement rule, restated: active, domain not blocked (exact), no integrations or one enabled (any case). */
export function oracleAllowed(
  entry: NormalizedKnowledgeEntry,
  enabledIntegrations: readonly string[],
  blockedDomains: readonly string[],
): boolean {
  if (entry.status !== "active") return false;
  for (const domain of blockedDomains) if (domain === entry.domain) return false;
  if (entry.integrations.length === 0) return true;
  for (const mine of entry.integrations) {
    for (const enabled of enabledIntegrations) {
      if (mine.toLowerCase() === enabled.toLowerCase()) return true;
    }
  }
  return false;
}

/** Tokens of one field of an entry. */
export function fieldTokens(entry: NormalizedKnowledgeEntry, field: KnowledgeFieldName): string[] {
  switch (field) {
    case "title":
      return tokenize(entry.title);
    case "summary":
      return tokenize(entry.summary);
    case "body":
      return tokenize(entry.body);
    case "aliases":
      return entry.aliases.flatMap((alias) => tokenize(alias));
    case "keywords":
      return entry.keywords.flatMap((keyword) => tokenize(keyword));
  }
}

function countOf(tokens: readonly string[], term: string): number {
  let count = 0;
  for (const token of tokens) if (token === term) count++;
  return count;
}

/** Whether `phrase` (tokens) occurs as a contiguous run of `tokens`. */
function containsRun(tokens: readonly string[], phrase: readonly string[]): boolean {
  if (phrase.length === 0 || phrase.length > tokens.length) return false;
  outer: for (let start = 0; start + phrase.length <= tokens.length; start++) {
    for (let offset = 0; offset < phrase.length; offset++) {
      if (tokens[start + offset] !== phrase[offset]) continue outer;
    }
    return true;
  }
  return false;
}

/**
 * Naive sum-of-per-field BM25 of one entry for a list of distinct terms, over the whole corpus (every entry
 * counts in N, df and the average length, authorized or not), added field by field, term by term.
 */
export function naiveFieldScores(
  corpus: readonly NormalizedKnowledgeEntry[],
  entry: NormalizedKnowledgeEntry,
  terms: readonly string[],
  weights: KnowledgeFieldWeights,
  k1: number,
  b: number,
): { total: number; fields: Partial<Record<KnowledgeFieldName, number>> } {
  const fields: Partial<Record<KnowledgeFieldName, number>> = {};
  let total = 0;
  const N = corpus.length;
  for (const field of ORACLE_FIELDS) {
    const weight = weights[field];
    if (!(weight > 0)) continue;
    const tokensOf = corpus.map((other) => fieldTokens(other, field));
    let totalLength = 0;
    for (const tokens of tokensOf) totalLength += tokens.length;
    const averageLength = N === 0 ? 0 : totalLength / N;
    if (!(averageLength > 0)) continue;
    const own = fieldTokens(entry, field);
    for (const term of terms) {
      const tf = countOf(own, term);
      if (tf === 0) continue;
      let df = 0;
      for (const tokens of tokensOf) if (tokens.includes(term)) df++;
      const idf = Math.log(1 + (N - df + 0.5) / (df + 0.5));
      const contribution =
        (weight * idf * (tf * (k1 + 1))) / (tf + k1 * (1 - b + (b * own.length) / averageLength));
      total += contribution;
      fields[field] = (fields[field] ?? 0) + contribution;
    }
  }
  return { total, fields };
}

/** One ranked candidate of the oracle. */
export type OracleCandidate = { id: string; score: number; lexical: number; exact: boolean; alias: boolean };

/** What the oracle expects one retrieval to select. */
export type OracleSelection = {
  allowedIds: Set<string>;
  /** Allowed entries with any evidence (a lexical term or a phrase of the query). */
  allowedMatching: number;
  candidates: OracleCandidate[];
  candidateCount: number;
  primary: string[];
  expanded: string[];
};

function byScoreThenId(left: { id: string; score: number }, right: { id: string; score: number }): number {
  if (left.score !== right.score) return right.score - left.score;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}

/** Filter, then rank, then cut, then expand: SPEC §6 restated for the default analyzer and scoring. */
export function oracleRetrieve(
  corpus: readonly NormalizedKnowledgeEntry[],
  request: KnowledgeRetrievalRequest,
  resolved: KnowledgeResolvedRetrieval,
  blockedDomains: readonly string[],
): OracleSelection {
  const k1 = resolved.k1 ?? 1.5;
  const b = resolved.b ?? 0.75;
  // 1. Filter.
  const allowed = corpus.filter((entry) => oracleAllowed(entry, request.enabledIntegrations, blockedDomains));
  const allowedIds = new Set(allowed.map((entry) => entry.id));

  // 2. Rank the allowed entries only.
  const queryTokens = tokenize(request.query.slice(0, MAX_QUERY_CHARS)).slice(0, MAX_QUERY_TOKENS);
  const lexicalTerms: string[] = [];
  const addTerm = (token: string) => {
    if (!lexicalTerms.includes(token)) lexicalTerms.push(token);
  };
  for (const token of queryTokens) addTerm(token);
  for (const turn of request.recentTurns)
    for (const token of tokenize(turn.text.slice(0, HISTORY_TURN_CHARS))) addTerm(token);
  const terms = lexicalTerms.slice(0, MAX_QUERY_TOKENS);

  const lexical: OracleCandidate[] = [];
  const phrase: OracleCandidate[] = [];
  let allowedMatching = 0;
  for (const entry of allowed) {
    const { total } = naiveFieldScores(corpus, entry, terms, resolved.fieldWeights, k1, b);
    const exact = [entry.id, entry.title].some((text) => containsRun(queryTokens, tokenize(text)));
    const alias = entry.aliases.some((text) => containsRun(queryTokens, tokenize(text)));
    if (total > 0 || exact || alias) allowedMatching++;
    if (total > 0) lexical.push({ id: entry.id, score: total, lexical: total, exact, alias });
    else if (exact || alias) phrase.push({ id: entry.id, score: 0, lexical: 0, exact, alias });
  }
  // The lexical search keeps its best 2 × candidateLimit; phrase hits join whatever their lexical rank.
  lexical.sort(byScoreThenId);
  const lexicalKept = lexical.slice(0, Math.max(0, resolved.candidateLimit * 2));
  const keptIds = new Set(lexicalKept.map((candidate) => candidate.id));
  const union: OracleCandidate[] = [...lexicalKept];
  for (const candidate of [...lexical.slice(lexicalKept.length), ...phrase]) {
    if (keptIds.has(candidate.id)) continue;
    if (candidate.exact || candidate.alias) union.push({ ...candidate, score: 0, lexical: 0 });
  }
  for (const candidate of union) {
    candidate.score =
      candidate.lexical +
      (candidate.exact ? resolved.exactBoost : 0) +
      (candidate.alias ? resolved.aliasBoost : 0);
  }
  union.sort(byScoreThenId);

  // 3. Cut.
  const candidates = union.slice(0, Math.max(0, resolved.candidateLimit));
  const primary = candidates.slice(0, Math.max(0, resolved.resultLimit)).map((candidate) => candidate.id);

  // 4. Expand one hop among allowed entries.
  const byId = new Map(corpus.map((entry) => [entry.id, entry]));
  const expanded: string[] = [];
  const selected = new Set(primary);
  for (const id of primary) {
    const entry = byId.get(id)!;
    const relations = [...entry.relatedEntryIds];
    if (entry.parentEntryId !== undefined) relations.push(entry.parentEntryId);
    for (const relatedId of relations) {
      if (expanded.length >= resolved.relationLimit) break;
      if (selected.has(relatedId) || !allowedIds.has(relatedId)) continue;
      selected.add(relatedId);
      expanded.push(relatedId);
    }
  }
  return { allowedIds, allowedMatching, candidates, candidateCount: union.length, primary, expanded };
}
