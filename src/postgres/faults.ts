/**
 * Faults a turn survives: the SQLSTATE codes of a generation gone from under it, and the searcher that re-runs
 * such a turn on the generation serving now.
 */
import type {
  KnowledgeCandidateEvidence,
  KnowledgeCandidateQuery,
  KnowledgeSearchBackend,
  KnowledgeSelectionEntries,
} from "../knowledge/searchBackend.js";
import type { PostgresBackend } from "./backend.js";

/** PostgreSQL's "undefined table" (a generation dropped while a turn read it). */
export const UNDEFINED_TABLE = "42P01";
/** A column that does not exist (a generation's table written before the column was added). */
export const UNDEFINED_COLUMN = "42703";
/** "invalid schema name": a replica that has not replayed the schema's creation yet. */
export const INVALID_SCHEMA_NAME = "3F000";
/** A replica cancelled the statement: replaying a dropped generation conflicted with it. */
export const RECOVERY_CONFLICT = "40001";

/**
 * A generation's searcher that survives a stale cache: when a turn's first statement finds its generation gone
 * (dropped on the primary after two newer publications, or cancelled by a replica replaying that drop), nothing
 * of the turn is computed yet, so it runs again on the generation serving now; the turn's second statement goes
 * to the same one. A generation that disappears between a turn's two statements still fails that turn (open).
 */
export class GenerationFallbackSearcher implements KnowledgeSearchBackend {
  private readonly moved = new WeakMap<KnowledgeCandidateQuery, KnowledgeSearchBackend>();

  constructor(
    private readonly backend: PostgresBackend,
    private readonly generation: number,
    private readonly inner: KnowledgeSearchBackend,
  ) {}

  async candidates(query: KnowledgeCandidateQuery): Promise<KnowledgeCandidateEvidence> {
    try {
      return await this.inner.candidates(query);
    } catch (error) {
      const code = (error as { code?: unknown })?.code;
      if (code !== UNDEFINED_TABLE && code !== RECOVERY_CONFLICT) throw error;
      this.backend.invalidate();
      const serving = await this.backend.current();
      if (!serving || serving.generation === this.generation) throw error;
      this.moved.set(query, serving.searcher);
      return serving.searcher.candidates(query);
    }
  }

  async selectionEntries(
    ids: readonly string[],
    query: KnowledgeCandidateQuery,
  ): Promise<KnowledgeSelectionEntries> {
    return (this.moved.get(query) ?? this.inner).selectionEntries(ids, query);
  }
}
