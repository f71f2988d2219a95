/**
 * The seam between per-turn selection and the index that serves it. Selection (union of phrase hits and lexical
 * matches, boosts, sort, cuts, confidence, relation expansion) is one piece of code in `retrieval.ts`; what it
 * asks of an index is two calls: the eligible candidates of a query, and the entries (with their relations) of
 * the primary selection. The in-memory snapshot answers synchronously; a database backend (`lexground/postgres`)
 * answers with promises. No module beyond `retrieval.ts` and the engine knows which one serves.
 */
import type {
  KnowledgeLexicalMatch,
  KnowledgeValidationResult,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { snapshotSourceArrays } from "./hostValues.js";
import { buildKnowledgeIndexCacheKeyAsync } from "./indexCache.js";
import type { KnowledgeIndexBuildOptions } from "./knowledgeIndex.js";
import { commitChange, type KnowledgeRegistry, registryGroups } from "./knowledgeRegistry.js";
import type { PlannedChange } from "./registryChanges.js";
import { type NormalizedSourceGroup, normalizeSourcesAsync } from "./resolve.js";

/** One turn's question to a search backend. Tokens come from the engine's tokenizer (analysis is the index's). */
export type KnowledgeCandidateQuery = {
  /** The query's tokens (at most `MAX_QUERY_TOKENS`), for exact id/title and alias phrase lookup. */
  phraseTokens: readonly string[];
  /** The query's tokens followed by the recent turns' tokens, for the lexical search (before analysis). */
  lexicalTokens: readonly string[];
  /** Most lexical matches to return. */
  topK: number;
  /** Enabled integrations, lowercased. */
  enabledIntegrations: ReadonlySet<string>;
  /** Blocked domains (exact). */
  blockedDomains: ReadonlySet<string>;
};

/** The eligible candidates of one query. Entries that the scope may not see are absent everywhere. */
export type KnowledgeCandidateEvidence = {
  /** Entry id → the exact (id or title) phrases of the query that name it, in phrase generation order. */
  exact: ReadonlyMap<string, readonly string[]>;
  /** Entry id → the alias phrases of the query that name it, in phrase generation order. */
  alias: ReadonlyMap<string, readonly string[]>;
  /** The best `topK` lexical matches: score descending, ties by entry id in code-unit order. */
  matches: readonly KnowledgeLexicalMatch[];
};

/** The entries of a primary selection and what relation expansion needs. */
export type KnowledgeSelectionEntries = {
  /** Looks up an entry: every primary id, and at least every authorized entry the primaries' relations name. */
  entry(id: string): NormalizedKnowledgeEntry | undefined;
  /** The relations of an entry (related ids, then the parent id), for the primary entries. */
  relations(id: string): readonly string[] | undefined;
};

/**
 * What an index must answer for a turn. Each call may return its value or a promise of it: the in-memory index
 * answers synchronously, so its turns never wait for a microtask.
 */
export type KnowledgeSearchBackend = {
  /** Eligible phrase hits and the lexical top-K of a query. */
  candidates(
    query: KnowledgeCandidateQuery,
  ): KnowledgeCandidateEvidence | Promise<KnowledgeCandidateEvidence>;
  /** The primary entries (`ids`, all eligible candidates of the same query) and their relations' targets. */
  selectionEntries(
    ids: readonly string[],
    query: KnowledgeCandidateQuery,
  ): KnowledgeSelectionEntries | Promise<KnowledgeSelectionEntries>;
};

/** Health of an external index backend, reported in the engine's status. */
export type KnowledgeBackendStatus = {
  /** The backend's name, e.g. `"postgres"`. */
  name: string;
  /** True while the backend cannot answer (connection refused, timeouts): turns fail open meanwhile. */
  degraded: boolean;
  /** The last error the backend met, or null. Cleared by the next success. */
  lastError: string | null;
  /** The published index generation being served, or null when none is known yet. */
  generation: number | null;
  /** Entries of the served generation (0 when none). */
  entryCount: number;
};

/** An opened, published index: searched by turns until the backend publishes another. */
export type KnowledgeBackendIndex = {
  /** Its generation number (increasing with each publication). */
  generation: number;
  entryCount: number;
  /** The index parameters it was built with. */
  options: KnowledgeIndexBuildOptions;
  searcher: KnowledgeSearchBackend;
  /**
   * Optional: the entries of this generation with these ids (unknown ids are absent; any order), whatever their
   * status or scope: callers that show an entry (the MCP server's `get_entry`) check eligibility themselves.
   */
  entriesById?(ids: readonly string[]): Promise<NormalizedKnowledgeEntry[]>;
};

/** The outcome of {@link KnowledgeIndexBackend.publish}. */
export type KnowledgeBackendPublishResult = {
  generation: number;
  entryCount: number;
  /** True when the published generation already held this content (nothing was written). */
  reused: boolean;
};

/**
 * An external index that engines (many processes) share: one publishes validated entries as a new generation,
 * all search the current one. Given to the engine as `backend` (see `lexground/postgres`).
 */
export type KnowledgeIndexBackend = {
  /** Its name in status and messages, e.g. `"postgres"`. */
  readonly name: string;
  /**
   * Indexes `entries` into a new generation and publishes it atomically, unless the current generation was built
   * from the same `contentKey` (then it is reused). A failure leaves the previous generation serving.
   */
  publish(
    entries: readonly NormalizedKnowledgeEntry[],
    options: { indexOptions: KnowledgeIndexBuildOptions; contentKey: string },
  ): Promise<KnowledgeBackendPublishResult>;
  /** The current generation, or null when nothing is published. Cheap: cached, refreshed as generations change. */
  current(): Promise<KnowledgeBackendIndex | null>;
  /** Health, without I/O. */
  status(): KnowledgeBackendStatus;
  /** Releases connections the backend opened itself. */
  close(): Promise<void>;
  /**
   * Optional: publishes `entries` (the complete registry after an incremental update) knowing that only the
   * entries with `changedIds` differ from the generation published under `baseContentKey` (plus removals), whose
   * entries that are gone or replaced are `previousEntries` (as they were published), so the backend can write the
   * new generation from that one instead of indexing everything again. Same contract as
   * {@link publish}: atomic, exact (equal to publishing `entries`), the previous generation serving on failure.
   * Without it, updates publish `entries` in full.
   */
  update?(
    entries: readonly NormalizedKnowledgeEntry[],
    options: KnowledgeBackendUpdateOptions,
  ): Promise<KnowledgeBackendPublishResult>;
};

/** What {@link KnowledgeIndexBackend.update} knows about an incremental update besides the final registry. */
export type KnowledgeBackendUpdateOptions = {
  indexOptions: KnowledgeIndexBuildOptions;
  contentKey: string;
  /** The content key of the generation the update starts from. */
  baseContentKey: string;
  /** Ids upserted since that generation. */
  changedIds: readonly string[];
  /** Entries of that generation that are gone or replaced, as they were published. */
  previousEntries: readonly NormalizedKnowledgeEntry[];
};

/** Whether a value looks like a {@link KnowledgeIndexBackend} (used to validate the engine's `backend` option). */
export function isIndexBackend(value: unknown): value is KnowledgeIndexBackend {
  if (value === null || typeof value !== "object") return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.publish === "function" &&
    typeof record.current === "function" &&
    typeof record.status === "function"
  );
}

/** What publishing a source set to a backend gave: its validation, and the publication when it was valid. */
export type KnowledgeBackendBuildResult = {
  validation: KnowledgeValidationResult;
  cacheKey: string;
  /** The validated entries by source (the start of the registry incremental updates change). */
  groups: NormalizedSourceGroup[];
  published: KnowledgeBackendPublishResult | null;
};

/**
 * Validates `sources` as the engine does (yielding to the event loop), then publishes the entries to `backend`
 * under their content key (the in-memory cache's key, so identical content is recognized across processes).
 * Rejects only when the backend fails; invalid sources come back in `validation` with `published: null`.
 */
export async function publishToBackend(
  backend: KnowledgeIndexBackend,
  sources: unknown,
  options: KnowledgeIndexBuildOptions,
  fallbackVersion: string,
): Promise<KnowledgeBackendBuildResult> {
  const normalized = await normalizeSourcesAsync(snapshotSourceArrays(sources), {
    manifestVersion: fallbackVersion,
  });
  const cacheKey = await buildKnowledgeIndexCacheKeyAsync(normalized.groups, options);
  const groups = normalized.groups;
  if (!normalized.validation.ok)
    return { validation: normalized.validation, cacheKey, groups, published: null };
  const published = await backend.publish(normalized.entries, {
    indexOptions: options,
    contentKey: cacheKey,
  });
  return { validation: normalized.validation, cacheKey, groups, published };
}

/**
 * Publishes a planned (valid) incremental change of `registry`, whose content is published under
 * `baseContentKey`: the registry after the change goes to the backend's `update` (or `publish`) under its own
 * content key. `registry` itself is not changed: the caller installs the returned one once this resolves (a
 * failure leaves the caller's registry, and the backend's serving generation, as they were).
 */
export async function publishChangeToBackend(
  backend: KnowledgeIndexBackend,
  registry: KnowledgeRegistry,
  change: PlannedChange,
  options: KnowledgeIndexBuildOptions,
  baseContentKey: string,
): Promise<{ registry: KnowledgeRegistry; contentKey: string; published: KnowledgeBackendPublishResult }> {
  const next: KnowledgeRegistry = {
    sources: registry.sources.map((source) => ({ ...source, entries: new Map(source.entries) })),
    sourceOf: new Map(registry.sourceOf),
    canonicalTwins: new Map(registry.canonicalTwins),
  };
  commitChange(next, change);
  const groups = registryGroups(next);
  const contentKey = await buildKnowledgeIndexCacheKeyAsync(groups, options);
  const entries = groups.flatMap((group) => group.entries);
  const published = backend.update
    ? await backend.update(entries, {
        indexOptions: options,
        contentKey,
        baseContentKey,
        changedIds: change.upserted.map(({ entry }) => entry.id),
        previousEntries: [...change.removed, ...change.upserted.map(({ entry }) => entry.id)].flatMap(
          (id) => {
            const home = registry.sourceOf.get(id);
            const previous = home === undefined ? undefined : registry.sources[home]!.entries.get(id);
            return previous ? [previous] : [];
          },
        ),
      })
    : await backend.publish(entries, { indexOptions: options, contentKey });
  return { registry: next, contentKey, published };
}
