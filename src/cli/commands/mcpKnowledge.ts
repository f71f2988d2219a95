/**
 * What `lexground mcp` serves: a knowledge base prepared in this process (`--kb`), or the shared index of a fleet
 * (`--backend postgres://…`), behind one asynchronous shape, so the server in `mcp.ts` wires either to the
 * protocol. Over a backend a search is an engine turn on the published generation (the same selection, scores,
 * confidence and block as in memory), `get_entry` reads the entry by id and checks its scope here, and the
 * entries are not listed as resources (a shared index may hold millions; each is still readable by its URI).
 */
import { citationMarker, isAuthorized, KnowledgeGroundingEngine } from "../../index.js";
import { entryRelationIds } from "../../knowledge/derivedMaps.js";
import type { KnowledgeIndexBackend } from "../../knowledge/searchBackend.js";
import type { NormalizedKnowledgeEntry } from "../../types/knowledge.js";
import type { PreparedKnowledgeBase } from "../session.js";
import {
  entryDocument,
  getEntry,
  type KnowledgeEntryDocument,
  type KnowledgeMcpOptions,
  listEntries,
  narrowIntegrations,
  type SearchKnowledgeEntry,
  type SearchKnowledgeResult,
  searchKnowledge,
} from "./mcpTools.js";

/** The knowledge an MCP server answers from; every call runs in the server's scope (`options`). */
export type McpKnowledge = {
  /** `search_knowledge`: throws {@link McpKnowledgeError} when the search failed (not when nothing matched). */
  search(query: string, options: KnowledgeMcpOptions): Promise<SearchKnowledgeResult>;
  /** `get_entry`: the entry when the scope may read it, otherwise null (unknown and out of scope alike). */
  getEntry(id: string, options: KnowledgeMcpOptions): Promise<KnowledgeEntryDocument | null>;
  /** The readable entries (the resource list); absent when this knowledge does not list them. */
  listEntries?(options: KnowledgeMcpOptions): Promise<NormalizedKnowledgeEntry[]>;
  /** The integrations a call that names `requested` runs with (see {@link narrowIntegrations}). */
  narrowIntegrations(options: KnowledgeMcpOptions, requested: readonly string[]): string[];
};

/** A search or a read that could not be answered (the index unreachable, nothing published): said to the client. */
export class McpKnowledgeError extends Error {
  override readonly name = "McpKnowledgeError";
}

/** The knowledge base prepared in this process (`--kb`): the synchronous tools of `mcpTools.ts`. */
export function preparedMcpKnowledge(prepared: PreparedKnowledgeBase): McpKnowledge {
  return {
    search: async (query, options) => searchKnowledge(prepared, query, options),
    getEntry: async (id, options) => getEntry(prepared, id, options),
    listEntries: async (options) => listEntries(prepared, options),
    narrowIntegrations: (options, requested) => narrowIntegrations(prepared, options, requested),
  };
}

/** Most engines (one per distinct `limit` a call asks for, at most `MCP_MAX_LIMIT` plus the default) kept. */
type EngineByLimit = Map<number | "default", KnowledgeGroundingEngine>;

/**
 * The published generation of a shared index. `config` is the engine configuration of the server (preset,
 * retrieval, context, blocked domains, timeout): every search is a turn of an engine with it and no sources.
 * `--all-integrations` has no meaning here (the integrations are the entries'); the caller refuses it.
 */
export function backendMcpKnowledge(
  backend: KnowledgeIndexBackend,
  config: Record<string, unknown>,
): McpKnowledge {
  const engines: EngineByLimit = new Map();
  const engineFor = (options: KnowledgeMcpOptions): KnowledgeGroundingEngine => {
    const key = options.defaultLimit ?? "default";
    let engine = engines.get(key);
    if (engine === undefined) {
      const retrieval = (config.retrieval ?? {}) as Record<string, unknown>;
      engine = new KnowledgeGroundingEngine({
        timeoutMs: 10_000,
        ...config,
        ...(options.defaultLimit !== undefined
          ? { retrieval: { ...retrieval, resultLimit: options.defaultLimit } }
          : {}),
        ...(options.blockedDomains !== undefined ? { blockedDomains: options.blockedDomains } : {}),
        enabled: true,
        sources: [],
        backend,
        logger: null,
      });
      engines.set(key, engine);
    }
    return engine;
  };
  const blockedDomainsOf = (options: KnowledgeMcpOptions): string[] =>
    options.blockedDomains ?? (config.blockedDomains as string[] | undefined) ?? [];
  const serverIntegrations = (options: KnowledgeMcpOptions): string[] => options.integrations ?? [];

  return {
    async search(query, options) {
      const engine = engineFor(options);
      const outcome = await engine.ground({
        query,
        scope: { enabledIntegrations: serverIntegrations(options) },
      });
      const reason = outcome.metadata.failureReason;
      if (reason !== undefined) {
        throw new McpKnowledgeError(
          reason === "index-not-ready"
            ? "nothing is published in the shared index yet"
            : `the knowledge search failed: ${reason}`,
        );
      }
      const retrieval = outcome.retrieval;
      if (retrieval === null) {
        return { query, confidence: "none", entries: [], citations: [], context: "", candidateCount: 0 };
      }
      const scores = new Map(
        (retrieval.candidates ?? []).map((candidate) => [candidate.id, candidate.score]),
      );
      const primaryIds = new Set(retrieval.selectedEntryIds);
      const primaries = retrieval.entries.filter((entry) => primaryIds.has(entry.id));
      const describe = (
        entry: NormalizedKnowledgeEntry,
        expandedFrom: string | null,
      ): SearchKnowledgeEntry => ({
        id: entry.id,
        title: entry.title,
        summary: entry.summary,
        kind: entry.kind,
        domain: entry.domain,
        version: entry.version,
        citation: citationMarker(entry.id, entry.version),
        score: expandedFrom === null ? (scores.get(entry.id) ?? null) : null,
        expandedFrom,
      });
      // An expanded entry came from the first primary whose relations (related ids, then the parent) name it.
      const via = (id: string): string =>
        primaries.find((primary) => entryRelationIds(primary).includes(id))?.id ?? "";
      return {
        query,
        confidence: retrieval.confidence,
        entries: [
          ...primaries.map((entry) => describe(entry, null)),
          ...retrieval.entries
            .filter((entry) => !primaryIds.has(entry.id))
            .map((entry) => describe(entry, via(entry.id))),
        ],
        citations: retrieval.citations.map((citation) => citationMarker(citation.id, citation.version)),
        context: retrieval.assembledContext,
        candidateCount: retrieval.candidateCount,
      };
    },

    async getEntry(id, options) {
      const enabledIntegrations = serverIntegrations(options);
      const blockedDomains = blockedDomainsOf(options);
      const readable = (entry: NormalizedKnowledgeEntry | undefined): entry is NormalizedKnowledgeEntry =>
        entry !== undefined && isAuthorized(entry, enabledIntegrations, blockedDomains);
      const [entry] = await readEntries(backend, [id]);
      if (!readable(entry) || entry.id !== id) return null;
      const relations = entryRelationIds(entry);
      const related = new Map(
        (await readEntries(backend, relations)).filter(readable).map((other) => [other.id, other]),
      );
      return entryDocument(entry, (relatedId) => relatedId !== undefined && related.has(relatedId));
    },

    narrowIntegrations(options, requested) {
      const enabled = new Set(serverIntegrations(options).map((integration) => integration.toLowerCase()));
      return requested.filter((integration) => enabled.has(integration.toLowerCase()));
    },
  };
}

/** The serving generation's entries with these ids; one retry when the generation was switched meanwhile. */
async function readEntries(
  backend: KnowledgeIndexBackend,
  ids: readonly string[],
): Promise<NormalizedKnowledgeEntry[]> {
  if (ids.length === 0) return [];
  for (let attempt = 0; ; attempt++) {
    const index = await backend.current().catch((error: unknown) => {
      throw new McpKnowledgeError(`the shared index cannot be read: ${messageOf(error)}`);
    });
    if (index === null) throw new McpKnowledgeError("nothing is published in the shared index yet");
    if (!index.entriesById)
      throw new McpKnowledgeError(`the ${backend.name} backend cannot read entries by id`);
    try {
      return await index.entriesById(ids);
    } catch (error) {
      // Once more: a generation dropped by two publications since `current()` is forgotten by the backend, which
      // then answers with the serving one.
      if (attempt === 0) continue;
      throw new McpKnowledgeError(`the shared index cannot be read: ${messageOf(error)}`);
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
