/**
 * What the `lexground mcp` tools and resources return, computed without a server: the server's scope, the
 * readable entries, `get_entry`, `search_knowledge` and the entry documents (the server in `mcp.ts` wires them to
 * the protocol).
 */
import { citationMarker, isAuthorized } from "../../index.js";
import type { SearchKnowledgeToolEntry } from "../../integrations/aiSdkTool.js";
import type { NormalizedKnowledgeEntry } from "../../types/knowledge.js";
import type { PreparedKnowledgeBase } from "../session.js";
import { resolveScope, runTurn } from "../turn.js";

/** Most entries one `search_knowledge` call may ask for. */
export const MCP_MAX_LIMIT = 50;

/**
 * Server-side scope and defaults of the `search_knowledge` tool. The scope (integrations, blocked domains) is the
 * widest a call can get: a call's `integrations` can only narrow it (see {@link narrowIntegrations}).
 */
export type KnowledgeMcpOptions = {
  /** Integrations the server enables: all of them when a call names none, the most a call can enable. */
  integrations?: string[];
  /** Enable every integration of the knowledge base (the server's scope is then all of them). */
  allIntegrations?: boolean;
  /** Domains never returned, whatever a call asks. */
  blockedDomains?: string[];
  /** Entries returned when a call gives no limit. Default: the retrieval result limit (8). */
  defaultLimit?: number;
  /** Server version reported to clients. */
  version?: string;
};

/** One entry in a `search_knowledge` result: the same shape as the AI SDK tool's entries. */
export type SearchKnowledgeEntry = SearchKnowledgeToolEntry;

/** Structured result of `search_knowledge`. */
export type SearchKnowledgeResult = {
  query: string;
  confidence: "high" | "medium" | "low" | "none";
  entries: SearchKnowledgeEntry[];
  /** Citation markers of the entries included in `context`. */
  citations: string[];
  /** The rendered, citation-carrying block (empty when nothing matched). */
  context: string;
  candidateCount: number;
};

/** Longest id `get_entry` accepts (ids are short; this bounds the lookup key a client can send). */
export const MCP_MAX_ID_LENGTH = 512;

/** URI prefix of the entry resources: `lexground://entries/<percent-encoded id>`. */
export const ENTRY_RESOURCE_PREFIX = "lexground://entries/";

/** One entry as `get_entry` and the entry resources return it. */
export type KnowledgeEntryDocument = {
  id: string;
  title: string;
  summary: string;
  body: string;
  kind: string;
  domain: string;
  integrations: string[];
  aliases: string[];
  keywords: string[];
  /** Related entries the caller may also read (entries outside the server's scope are left out). */
  relatedEntryIds: string[];
  /** The parent entry, when the caller may read it; otherwise null. */
  parentEntryId: string | null;
  version: string;
  /** `[KB:<id>@<version>]`, to be quoted by the model. */
  citation: string;
};

/** The resource URI of an entry. */
export function entryResourceUri(id: string): string {
  return `${ENTRY_RESOURCE_PREFIX}${encodeURIComponent(id)}`;
}

/** The entry id of a resource URI, or undefined when the URI is not an entry resource. */
export function entryIdOfResourceUri(uri: string): string | undefined {
  if (!uri.startsWith(ENTRY_RESOURCE_PREFIX)) return undefined;
  try {
    return decodeURIComponent(uri.slice(ENTRY_RESOURCE_PREFIX.length));
  } catch {
    return undefined;
  }
}

/** The scope every tool call and resource read of the server runs in (before a call narrows it). */
function serverScope(
  prepared: PreparedKnowledgeBase,
  options: KnowledgeMcpOptions,
): { enabledIntegrations: string[]; blockedDomains: string[] } {
  return resolveScope(prepared, {
    ...(options.integrations !== undefined ? { integrations: options.integrations } : {}),
    ...(options.allIntegrations ? { allIntegrations: true } : {}),
    ...(options.blockedDomains !== undefined ? { blockedDomains: options.blockedDomains } : {}),
  });
}

/** The entries a client of the server may read, in knowledge-base order (the resource list). */
export function listEntries(
  prepared: PreparedKnowledgeBase,
  options: KnowledgeMcpOptions = {},
): NormalizedKnowledgeEntry[] {
  const { enabledIntegrations, blockedDomains } = serverScope(prepared, options);
  return prepared.entries.filter((entry) => isAuthorized(entry, enabledIntegrations, blockedDomains));
}

/**
 * Runs `get_entry` without a server: the entry with this id when a search in the server's scope could return it
 * (active, in the server's integrations, outside its blocked domains), otherwise null, whether the id is unknown
 * or out of scope.
 */
export function getEntry(
  prepared: PreparedKnowledgeBase,
  id: string,
  options: KnowledgeMcpOptions = {},
): KnowledgeEntryDocument | null {
  const { enabledIntegrations, blockedDomains } = serverScope(prepared, options);
  const readable = (entryId: string | undefined): boolean => {
    if (entryId === undefined) return false;
    const entry = prepared.snapshot.entriesById.get(entryId);
    return entry !== undefined && isAuthorized(entry, enabledIntegrations, blockedDomains);
  };
  if (!readable(id)) return null;
  return entryDocument(prepared.snapshot.entriesById.get(id)!, readable);
}

/**
 * An entry as `get_entry` returns it, its relations limited to the entries `readable` says the caller may read
 * (the others are left out of the document).
 */
export function entryDocument(
  entry: NormalizedKnowledgeEntry,
  readable: (id: string | undefined) => boolean,
): KnowledgeEntryDocument {
  return {
    id: entry.id,
    title: entry.title,
    summary: entry.summary,
    body: entry.body,
    kind: entry.kind,
    domain: entry.domain,
    integrations: [...entry.integrations],
    aliases: [...entry.aliases],
    keywords: [...entry.keywords],
    relatedEntryIds: entry.relatedEntryIds.filter((related) => readable(related)),
    parentEntryId: readable(entry.parentEntryId) ? entry.parentEntryId! : null,
    version: entry.version,
    citation: citationMarker(entry.id, entry.version),
  };
}

/** An entry as Markdown: what `get_entry` and a resource read give a model to read. */
export function renderEntryDocument(document: KnowledgeEntryDocument): string {
  const lines = [`# ${document.title}`, "", `${document.citation} · ${document.kind} · ${document.domain}`];
  if (document.integrations.length > 0) lines.push(`Integrations: ${document.integrations.join(", ")}`);
  lines.push("", document.summary);
  if (document.body !== "") lines.push("", document.body);
  const related = [
    ...(document.parentEntryId !== null ? [`parent ${document.parentEntryId}`] : []),
    ...document.relatedEntryIds,
  ];
  if (related.length > 0) lines.push("", `Related: ${related.join(", ")}`);
  return `${lines.join("\n")}\n`;
}

/**
 * The integrations a call that names `requested` runs with: those of `requested` that the server's scope enables
 * (`options.integrations`, or every integration of the knowledge base with `options.allIntegrations`), compared
 * case-insensitively as retrieval does. A call can narrow the server's scope, never widen it: a server started
 * without integrations gives every call integration-free entries only, and a requested integration outside the
 * scope is dropped (so a call naming only such integrations gets integration-free entries only).
 */
export function narrowIntegrations(
  prepared: PreparedKnowledgeBase,
  options: Pick<KnowledgeMcpOptions, "integrations" | "allIntegrations">,
  requested: readonly string[],
): string[] {
  const serverScope = options.allIntegrations ? prepared.integrations : (options.integrations ?? []);
  const enabled = new Set(serverScope.map((integration) => integration.toLowerCase()));
  return requested.filter((integration) => enabled.has(integration.toLowerCase()));
}

/** Runs `search_knowledge` without a server (the tool handler's logic). */
export function searchKnowledge(
  prepared: PreparedKnowledgeBase,
  query: string,
  options: KnowledgeMcpOptions = {},
): SearchKnowledgeResult {
  const report = runTurn(prepared, query, {
    ...(options.integrations !== undefined ? { integrations: options.integrations } : {}),
    ...(options.allIntegrations ? { allIntegrations: true } : {}),
    ...(options.blockedDomains !== undefined ? { blockedDomains: options.blockedDomains } : {}),
    ...(options.defaultLimit !== undefined ? { resultLimit: options.defaultLimit } : {}),
  });
  const scores = new Map(report.candidates.map((candidate) => [candidate.id, candidate.score]));
  const describe = (id: string, expandedFrom: string | null): SearchKnowledgeEntry => {
    const entry = prepared.snapshot.entriesById.get(id)!;
    return {
      id,
      title: entry.title,
      summary: entry.summary,
      kind: entry.kind,
      domain: entry.domain,
      version: entry.version,
      citation: citationMarker(id, entry.version),
      score: expandedFrom === null ? (scores.get(id) ?? null) : null,
      expandedFrom,
    };
  };
  return {
    query,
    confidence: report.confidence,
    entries: [
      ...report.primary.map((entry) => describe(entry.id, null)),
      ...report.expanded.map((entry) => describe(entry.id, entry.via ?? "")),
    ],
    citations: report.context.citations.map((citation) => citationMarker(citation.id, citation.version)),
    context: report.context.text,
    candidateCount: report.candidateCount,
  };
}
