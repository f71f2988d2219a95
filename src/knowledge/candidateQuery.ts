/**
 * What a turn asks the search backends for: the query's phrase and lexical tokens (bounded), and the scope
 * (enabled integrations, blocked domains) with the authorization rule every backend and the expansion apply.
 */
import type {
  KnowledgeConversationTurn,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalRequest,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { HISTORY_TURN_CHARS, MAX_QUERY_CHARS, MAX_QUERY_TOKENS } from "./defaults.js";
import { tokenize } from "./normalize.js";
import type { KnowledgeCandidateQuery } from "./searchBackend.js";

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
