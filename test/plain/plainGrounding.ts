/**
 * A plain, obviously-correct implementation of lexground's retrieval (SPEC sections 4-7), written for clarity,
 * not speed: nested `Map`s, plain loops, a scan of every entry and every phrase key per query.
 *
 * It is the oracle of the property tests (the fast engine must select the same entries with the same scores) and
 * the baseline of the benchmark. It deliberately shares only the normalization pipeline (`normalizeText`, SPEC §2)
 * and the input caps with the engine, and tokenizes exactly as the spec defines it (normalize, then split on single
 * spaces, then the length cap), not with the engine's segmented fast path. So
 * a bug in the engine's index structures, scoring, eligibility or ranking cannot hide in both.
 */
import { MAX_QUERY_CHARS, MAX_QUERY_TOKENS, MAX_TOKEN_LENGTH } from "../../src/knowledge/defaults.js";
import { normalizeText } from "../../src/knowledge/normalize.js";
import type {
  KnowledgeFieldName,
  KnowledgeFieldWeights,
  KnowledgeLexicalMatch,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeRetrievalRequest,
  KnowledgeScoredCandidate,
  KnowledgeSelection,
  NormalizedKnowledgeEntry,
} from "../../src/types/knowledge.js";

/**
 * SPEC §2: `tokenize(s)` is `normalizeText(s)` split on single spaces (`[]` when empty), each token then cut to
 * `MAX_TOKEN_LENGTH` code units without splitting a surrogate pair.
 */
export function tokenize(text: string): string[] {
  const normalized = normalizeText(text);
  if (normalized === "") return [];
  return normalized.split(" ").map((token) => {
    if (token.length <= MAX_TOKEN_LENGTH) return token;
    const end = /[\uD800-\uDBFF]/.test(token[MAX_TOKEN_LENGTH - 1]!)
      ? MAX_TOKEN_LENGTH - 1
      : MAX_TOKEN_LENGTH;
    return token.slice(0, end);
  });
}

/** Scoring order of the fields; contributions are added field by field in this order (SPEC §4). */
export const PLAIN_FIELDS: readonly KnowledgeFieldName[] = [
  "title",
  "aliases",
  "keywords",
  "summary",
  "body",
];

/** Characters of each recent turn that feed the lexical query (SPEC §6.3, `HISTORY_TURN_CHARS`). */
export const PLAIN_HISTORY_TURN_CHARS = 400;

/** Options of {@link PlainKnowledgeIndex}. */
export type PlainIndexOptions = {
  fieldWeights: KnowledgeFieldWeights;
  /** BM25 term-frequency saturation. Default 1.5. */
  k1?: number;
  /** BM25 length normalization. Default 0.75. */
  b?: number;
};

/** The five token arrays of one entry's search document (SPEC §3). */
export function plainDocumentFields(entry: NormalizedKnowledgeEntry): Record<KnowledgeFieldName, string[]> {
  return {
    title: tokenize(entry.title),
    aliases: entry.aliases.flatMap((alias) => tokenize(alias)),
    keywords: entry.keywords.flatMap((keyword) => tokenize(keyword)),
    summary: tokenize(entry.summary),
    body: tokenize(entry.body),
  };
}

/** A phrase as the phrase maps key it: its tokens joined by single spaces. */
export function plainPhrase(text: string): string {
  return tokenize(text).join(" ");
}

/** Field-aware BM25 ("sum of per-field BM25") over nested maps, exactly as SPEC §4 states it. */
export class PlainKnowledgeIndex {
  readonly fieldWeights: KnowledgeFieldWeights;
  readonly k1: number;
  readonly b: number;
  /** field → term → entry id → term frequency. */
  private readonly postings = new Map<KnowledgeFieldName, Map<string, Map<string, number>>>();
  /** field → entry id → field length in tokens. */
  private readonly lengths = new Map<KnowledgeFieldName, Map<string, number>>();
  /** field → average length over ALL documents (documents with an empty field count as 0). */
  private readonly averageLengths = new Map<KnowledgeFieldName, number>();
  private readonly documentCount: number;

  constructor(entries: readonly NormalizedKnowledgeEntry[], options: PlainIndexOptions) {
    this.fieldWeights = { ...options.fieldWeights };
    this.k1 = options.k1 ?? 1.5;
    this.b = options.b ?? 0.75;
    this.documentCount = entries.length;
    for (const field of PLAIN_FIELDS) {
      this.postings.set(field, new Map());
      this.lengths.set(field, new Map());
    }
    for (const entry of entries) {
      const fields = plainDocumentFields(entry);
      for (const field of PLAIN_FIELDS) {
        const tokens = fields[field];
        this.lengths.get(field)!.set(entry.id, tokens.length);
        const fieldPostings = this.postings.get(field)!;
        for (const token of tokens) {
          let byEntry = fieldPostings.get(token);
          if (byEntry === undefined) {
            byEntry = new Map();
            fieldPostings.set(token, byEntry);
          }
          byEntry.set(entry.id, (byEntry.get(entry.id) ?? 0) + 1);
        }
      }
    }
    for (const field of PLAIN_FIELDS) {
      let total = 0;
      for (const length of this.lengths.get(field)!.values()) total += length;
      this.averageLengths.set(field, this.documentCount === 0 ? 0 : total / this.documentCount);
    }
  }

  /** Number of indexed documents (N). */
  get size(): number {
    return this.documentCount;
  }

  /** Average length of a field over all documents. */
  averageLength(field: KnowledgeFieldName): number {
    return this.averageLengths.get(field)!;
  }

  /**
   * Scores every document that contains a query term, in field-major then term order, and returns the best
   * `topK`, ties by id in code-unit order. Documents outside `eligibleIds` (when given) are skipped.
   */
  search(
    queryTokens: readonly string[],
    topK: number,
    eligibleIds?: ReadonlySet<string>,
  ): KnowledgeLexicalMatch[] {
    if (this.documentCount === 0 || queryTokens.length === 0) return [];
    const uniqueTokens: string[] = [];
    const seen = new Set<string>();
    for (const token of queryTokens) {
      if (seen.has(token)) continue;
      seen.add(token);
      uniqueTokens.push(token);
    }
    const { k1, b } = this;
    const totals = new Map<string, number>();
    const fieldScores = new Map<string, Partial<Record<KnowledgeFieldName, number>>>();
    const N = this.documentCount;
    for (const field of PLAIN_FIELDS) {
      const weight = this.fieldWeights[field];
      const avgdl = this.averageLengths.get(field)!;
      if (!(weight > 0) || avgdl <= 0) continue;
      const fieldPostings = this.postings.get(field)!;
      const fieldLengths = this.lengths.get(field)!;
      for (const term of uniqueTokens) {
        const byEntry = fieldPostings.get(term);
        if (byEntry === undefined) continue;
        const df = byEntry.size;
        const idf = Math.log(1 + (N - df + 0.5) / (df + 0.5));
        for (const [id, tf] of byEntry) {
          if (tf <= 0) continue;
          if (eligibleIds !== undefined && !eligibleIds.has(id)) continue;
          const len = fieldLengths.get(id)!;
          const contribution = weight * idf * ((tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * len) / avgdl)));
          totals.set(id, (totals.get(id) ?? 0) + contribution);
          let scores = fieldScores.get(id);
          if (scores === undefined) {
            scores = {};
            fieldScores.set(id, scores);
          }
          scores[field] = (scores[field] ?? 0) + contribution;
        }
      }
    }
    const matches: KnowledgeLexicalMatch[] = [];
    for (const [id, score] of totals) matches.push({ id, score, fieldScores: fieldScores.get(id)! });
    matches.sort(compareByScoreThenId);
    return matches.slice(0, Math.max(0, topK));
  }
}

/** Score descending, then id ascending by UTF-16 code units (plain `<`, never `localeCompare`). */
export function compareByScoreThenId(
  left: { id: string; score: number },
  right: { id: string; score: number },
) {
  if (left.score !== right.score) return right.score - left.score;
  if (left.id < right.id) return -1;
  if (left.id > right.id) return 1;
  return 0;
}

/** Everything {@link plainRetrieve} needs, built once from the entries: the lexical index and the phrase maps. */
export type PlainSnapshot = {
  entries: readonly NormalizedKnowledgeEntry[];
  entriesById: Map<string, NormalizedKnowledgeEntry>;
  /** Phrase of an id or title → ids of the entries it names. */
  exactIndex: Map<string, Set<string>>;
  /** Phrase of an alias → ids of the entries it names. */
  aliasIndex: Map<string, Set<string>>;
  lexical: PlainKnowledgeIndex;
};

/** Builds the plain snapshot: phrase maps and the nested-map BM25 index. */
export function buildPlainSnapshot(
  entries: readonly NormalizedKnowledgeEntry[],
  options: PlainIndexOptions,
): PlainSnapshot {
  const entriesById = new Map<string, NormalizedKnowledgeEntry>();
  const exactIndex = new Map<string, Set<string>>();
  const aliasIndex = new Map<string, Set<string>>();
  const addKey = (index: Map<string, Set<string>>, key: string, id: string) => {
    if (key === "") return;
    let ids = index.get(key);
    if (ids === undefined) {
      ids = new Set();
      index.set(key, ids);
    }
    ids.add(id);
  };
  for (const entry of entries) {
    entriesById.set(entry.id, entry);
    for (const text of [entry.id, entry.title]) addKey(exactIndex, plainPhrase(text), entry.id);
    for (const alias of entry.aliases) addKey(aliasIndex, plainPhrase(alias), entry.id);
  }
  return { entries, entriesById, exactIndex, aliasIndex, lexical: new PlainKnowledgeIndex(entries, options) };
}

/** SPEC §6.2: active, domain not blocked (exact match), and no integrations or one of them enabled. */
export function plainIsAuthorized(
  entry: NormalizedKnowledgeEntry,
  enabledIntegrations: readonly string[],
  blockedDomains: readonly string[],
): boolean {
  if (entry.status !== "active") return false;
  if (blockedDomains.includes(entry.domain)) return false;
  if (entry.integrations.length === 0) return true;
  const enabled = enabledIntegrations.map((integration) => integration.toLowerCase());
  return entry.integrations.some((integration) => enabled.includes(integration.toLowerCase()));
}

/** SPEC §7 on the trimmed candidates. */
export function plainConfidence(
  candidates: readonly KnowledgeScoredCandidate[],
): KnowledgeRetrievalConfidence {
  const top = candidates[0];
  if (top === undefined) return "none";
  if (top.exact || top.alias) return "high";
  if (Object.keys(top.fieldScores).length >= 2) return "medium";
  const second = candidates[1];
  if (second !== undefined && top.score >= 1.5 * second.score) return "medium";
  return "low";
}

/** The capped query tokens: the text cut to `MAX_QUERY_CHARS` code units, at most `MAX_QUERY_TOKENS` tokens. */
export function plainQueryTokens(query: string): string[] {
  return tokenize(query.slice(0, MAX_QUERY_CHARS)).slice(0, MAX_QUERY_TOKENS);
}

/**
 * The lexical token list: the query tokens, then each recent turn's first 400 code units tokenized, de-duplicated
 * keeping the first occurrence and cut to `MAX_QUERY_TOKENS`.
 */
export function plainLexicalTokens(
  queryTokens: readonly string[],
  request: KnowledgeRetrievalRequest,
): string[] {
  const all = [...queryTokens];
  for (const turn of request.recentTurns) all.push(...tokenize(turn.text.slice(0, PLAIN_HISTORY_TURN_CHARS)));
  return [...new Set(all)].slice(0, MAX_QUERY_TOKENS);
}

/** Every contiguous window of 1..maxLength tokens, by size then start, duplicates removed. */
export function plainNgrams(tokens: readonly string[], maxLength: number): string[] {
  const ngrams: string[] = [];
  const seen = new Set<string>();
  for (let size = 1; size <= Math.min(maxLength, tokens.length); size++) {
    for (let start = 0; start + size <= tokens.length; start++) {
      const ngram = tokens.slice(start, start + size).join(" ");
      if (seen.has(ngram)) continue;
      seen.add(ngram);
      ngrams.push(ngram);
    }
  }
  return ngrams;
}

/**
 * SPEC §5-§7, naively: phrase hits from the current query, eligibility by scanning every entry, lexical search
 * over the eligible set, boosts, ranking, trimming, one-hop relation expansion and confidence.
 *
 * `source` is either the entries (a snapshot is built with `resolved`'s weights, k1 and b) or a prebuilt
 * {@link PlainSnapshot} (whose own weights, k1 and b then apply, as with the engine's snapshot). Only the
 * NeuroLink-parity modes exist here; asking for another analyzer or scoring mode throws.
 */
export function plainRetrieve(
  source: readonly NormalizedKnowledgeEntry[] | PlainSnapshot,
  request: KnowledgeRetrievalRequest,
  resolved: KnowledgeResolvedRetrieval,
  blockedDomains: readonly string[] = [],
): KnowledgeSelection {
  if ((resolved.analyzer ?? "none") !== "none")
    throw new Error("plainRetrieve supports only analyzer 'none'");
  if ((resolved.scoring ?? "sum") !== "sum") throw new Error("plainRetrieve supports only scoring 'sum'");
  const snapshot = isPlainSnapshot(source)
    ? source
    : buildPlainSnapshot(source, { fieldWeights: resolved.fieldWeights, k1: resolved.k1, b: resolved.b });

  // §5: phrase hits from the current query only.
  const queryTokens = plainQueryTokens(request.query);
  let maxLength = 0;
  for (const key of [...snapshot.exactIndex.keys(), ...snapshot.aliasIndex.keys()]) {
    maxLength = Math.max(maxLength, key.split(" ").length);
  }
  const exactHits = new Map<string, string[]>();
  const aliasHits = new Map<string, string[]>();
  const record = (hits: Map<string, string[]>, ids: Set<string> | undefined, ngram: string) => {
    if (ids === undefined) return;
    for (const id of ids) {
      const phrases = hits.get(id) ?? [];
      phrases.push(ngram);
      hits.set(id, phrases);
    }
  };
  for (const ngram of plainNgrams(queryTokens, maxLength)) {
    record(exactHits, snapshot.exactIndex.get(ngram), ngram);
    record(aliasHits, snapshot.aliasIndex.get(ngram), ngram);
  }

  // §6.2: eligibility by scanning every entry.
  const eligible = new Set<string>();
  for (const entry of snapshot.entries) {
    if (plainIsAuthorized(entry, request.enabledIntegrations, blockedDomains)) eligible.add(entry.id);
  }

  // §6.3-§6.4: lexical search over the eligible set.
  const lexicalMatches = snapshot.lexical.search(
    plainLexicalTokens(queryTokens, request),
    resolved.candidateLimit * 2,
    eligible,
  );
  const lexicalById = new Map(lexicalMatches.map((match) => [match.id, match]));

  // §6.5-§6.7: candidate union in insertion order, scores, ranking.
  const candidateIds = new Set<string>(); // a Set keeps insertion order and drops repeats
  const addCandidate = (id: string) => {
    if (eligible.has(id)) candidateIds.add(id);
  };
  for (const id of exactHits.keys()) addCandidate(id);
  for (const id of aliasHits.keys()) addCandidate(id);
  for (const match of lexicalMatches) addCandidate(match.id);
  const candidates: KnowledgeScoredCandidate[] = [...candidateIds].map((id) => {
    const match = lexicalById.get(id);
    const exact = exactHits.has(id);
    const alias = aliasHits.has(id);
    const lexical = match?.score ?? 0;
    let score = lexical;
    if (exact) score += resolved.exactBoost;
    if (alias) score += resolved.aliasBoost;
    return {
      id,
      score,
      exact,
      alias,
      lexical,
      fieldScores: match ? { ...match.fieldScores } : {},
      matchedPhrases: [...(exactHits.get(id) ?? []), ...(aliasHits.get(id) ?? [])],
    };
  });
  candidates.sort(compareByScoreThenId);

  // §6.8: counts and cuts.
  const candidateCount = candidates.length;
  const trimmed = candidates.slice(0, Math.max(0, resolved.candidateLimit));
  const primary = trimmed
    .slice(0, Math.max(0, resolved.resultLimit))
    .map((candidate) => snapshot.entriesById.get(candidate.id)!);

  // §6.9: one hop of relations (related ids, then the parent), authorized and not yet selected.
  const expanded: NormalizedKnowledgeEntry[] = [];
  const selected = new Set(primary.map((entry) => entry.id));
  outer: for (const entry of primary) {
    if (expanded.length >= resolved.relationLimit) break;
    const relations = [...entry.relatedEntryIds];
    if (entry.parentEntryId !== undefined) relations.push(entry.parentEntryId);
    for (const relatedId of relations) {
      if (expanded.length >= resolved.relationLimit) break outer;
      if (selected.has(relatedId)) continue;
      const related = snapshot.entriesById.get(relatedId);
      if (related === undefined) continue;
      if (!plainIsAuthorized(related, request.enabledIntegrations, blockedDomains)) continue;
      selected.add(relatedId);
      expanded.push(related);
    }
  }

  return { primary, expanded, candidates: trimmed, confidence: plainConfidence(trimmed), candidateCount };
}

function isPlainSnapshot(
  source: readonly NormalizedKnowledgeEntry[] | PlainSnapshot,
): source is PlainSnapshot {
  return !Array.isArray(source);
}
