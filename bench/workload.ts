/**
 * What every benchmarked implementation is given: the same sources, the same normalized entries and the same
 * queries, so the numbers compare like with like.
 */
import type {
  KnowledgeConversationTurn,
  KnowledgeSource,
  NormalizedKnowledgeEntry,
} from "../src/types/knowledge.js";

/** One benchmark turn: the current query, recent conversation and the integrations enabled for it. */
export type BenchQuery = {
  query: string;
  recentTurns: KnowledgeConversationTurn[];
  enabledIntegrations: string[];
};

/** A registry and its queries. */
export type Workload = {
  /** Short label, e.g. `synthetic-10k` or `scifact`. */
  name: string;
  /** Where it came from, for the report. */
  description: string;
  /** The raw sources, as a host configures them (the engine's `ground()` path starts here). */
  sources: KnowledgeSource[];
  /** The same entries after `normalizeAndValidate`: the input of every index build. */
  entries: NormalizedKnowledgeEntry[];
  queries: BenchQuery[];
  /** Separate queries of the same kind, run before measuring to warm up the JIT and caches. */
  warmupQueries: BenchQuery[];
  blockedDomains: string[];
};
