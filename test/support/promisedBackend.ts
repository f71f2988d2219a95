/**
 * An external index backend for tests that need no database: the in-memory snapshot answering through promises,
 * publishing generations as an external store does; setting `failure` makes every call fail.
 */
import { buildIndexSnapshot, type KnowledgeIndexBuildOptions } from "../../src/knowledge/knowledgeIndex.js";
import { snapshotSearchBackend } from "../../src/knowledge/retrieval.js";
import type {
  KnowledgeBackendIndex,
  KnowledgeBackendStatus,
  KnowledgeCandidateQuery,
  KnowledgeIndexBackend,
} from "../../src/knowledge/searchBackend.js";
import type { NormalizedKnowledgeEntry } from "../../src/types/knowledge.js";

/** The in-memory snapshot behind promises, publishing generations like an external store. */
export class PromisedBackend implements KnowledgeIndexBackend {
  readonly name = "promised";
  index: KnowledgeBackendIndex | null = null;
  failure: Error | null = null;
  publishes = 0;
  private contentKey: string | null = null;

  async publish(
    entries: readonly NormalizedKnowledgeEntry[],
    options: { indexOptions: KnowledgeIndexBuildOptions; contentKey: string },
  ) {
    if (this.failure) throw this.failure;
    if (this.index && this.contentKey === options.contentKey)
      return { generation: this.index.generation, entryCount: this.index.entryCount, reused: true };
    this.publishes++;
    const snapshot = buildIndexSnapshot(entries, options.indexOptions);
    const memory = snapshotSearchBackend(snapshot);
    const generation = (this.index?.generation ?? 0) + 1;
    this.index = {
      generation,
      entryCount: snapshot.entryCount,
      options: options.indexOptions,
      searcher: {
        candidates: async (query: KnowledgeCandidateQuery) => memory.candidates(query),
        selectionEntries: async (ids, query) => memory.selectionEntries(ids, query),
      },
    };
    this.contentKey = options.contentKey;
    return { generation, entryCount: snapshot.entryCount, reused: false };
  }

  async current() {
    if (this.failure) throw this.failure;
    return this.index;
  }

  status(): KnowledgeBackendStatus {
    return {
      name: this.name,
      degraded: this.failure !== null,
      lastError: this.failure?.message ?? null,
      generation: this.index?.generation ?? null,
      entryCount: this.index?.entryCount ?? 0,
    };
  }

  async close() {}
}
