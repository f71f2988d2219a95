/** Options of the PostgreSQL backend: their type, defaults and validation error. */
import { hasErrorMarker } from "../knowledge/errors.js";
import type { PostgresPool } from "./driver.js";

/** Options of `createPostgresBackend`. */
export type PostgresBackendOptions = {
  /** Where the primary is (`postgres://user@host:5432/db`). Either this or `pool`. */
  connectionString?: string;
  /**
   * A `pg.Pool` of the host's (lexground does not end it). Its connections should turn off parallel plans and JIT
   * (`options: "-c max_parallel_workers_per_gather=0 -c jit=off"`), as lexground's own pools do.
   */
  pool?: PostgresPool;
  /** A read replica for turns (`readPool` or `readConnectionString`); default: the primary. */
  readConnectionString?: string;
  /** A pool of a read replica for turns (the host's; not ended by lexground). */
  readPool?: PostgresPool;
  /** The schema holding lexground's tables (created when missing). Default `"lexground"`. */
  schema?: string;
  /** Server-side limit of one turn's statements on pools lexground creates. Default 2000 ms. */
  statementTimeoutMs?: number;
  /** How long a turn waits for a free connection (pools lexground creates). Default 2000 ms. */
  connectionTimeoutMs?: number;
  /** Connections per pool lexground creates. Default 10. */
  maxConnections?: number;
  /** How stale the cached serving generation may get before a turn checks it again. Default 1000 ms. */
  generationCheckMs?: number;
  /** Published generations kept (the serving one included); older ones are dropped. Default 2. */
  keepGenerations?: number;
  /** Approximate bytes per bulk-insert statement of an incremental update (publications use `COPY`). Default 8 MiB. */
  batchBytes?: number;
  /**
   * After an incremental update (`engine.upsert/remove/update`), how long without another update before the
   * writer publishes the registry again as a fresh generation (compaction: an updated generation is exact, but
   * turns on it do not use the pruned layout). Default 60,000 ms.
   */
  compactionDelayMs?: number;
  /**
   * Bytes of decoded postings a reader keeps for its next turns (per backend, least recently used terms forgotten
   * first; coded: about 5 to 6 bytes per posting, 12 for a list of too many distinct contributions). A turn fetches from the database only the postings of terms not held for the
   * serving generation. 0 disables it. Default: sized for the generation served, 64 MiB up to 262,144 entries,
   * then in inverse proportion to its entry count down to 24 MiB (from 699,051 entries; at a million entries a 64 MiB
   * cache answered 8% of the lookups and 40 MiB served turns as fast: a workload's lists grow with the generation, so
   * a cache of that order holds a shrinking part of them while it costs the reader the same memory). The same bytes
   * also bound what a generation with frequent lists keeps for its deferring turns: the partial-sum buffer, and
   * (within half of them) the coded bytes of the frequent lists those turns read whole only to sum.
   */
  postingCacheBytes?: number;
  /**
   * Bytes of fetched postings the reader's concurrent turns may hold together while they rank them (as decoded:
   * about 5 to 6 bytes per posting): a turn that must fetch lists waits, first come first served, while the turns already fetching hold
   * that much; one turn always runs, however large. Bounds a reader's memory under many concurrent
   * history-heavy turns without changing any answer. 0: no bound. Default 32 MiB.
   */
  fetchBudgetBytes?: number;
  /**
   * Posting lists holding at least this many entries are frequent: a publication also writes each entry's postings
   * in them (a second copy of those postings, about 2 bytes each), and a turn reads only their headers first, ranks
   * the other lists, then reads the frequent postings of the few entries that can still reach the top K instead of
   * the whole lists (same answers; see "Many replicas" in the README). 0: none. Default: a sixteenth of the entries,
   * for generations of 262,144 entries or more (none below: every list is read whole, as before).
   */
  frequentListDocuments?: number;
};

export const DEFAULTS = {
  schema: "lexground",
  statementTimeoutMs: 2_000,
  connectionTimeoutMs: 2_000,
  maxConnections: 10,
  generationCheckMs: 1_000,
  keepGenerations: 2,
  batchBytes: 8 * 1024 * 1024,
  compactionDelayMs: 60_000,
  fetchBudgetBytes: 32 * 1024 * 1024,
} as const;

const OPTIONS_ERROR_MARKER = Symbol.for("lexground.PostgresBackendOptionsError");

/** Raised for bad backend options (at creation, so a misconfiguration is found at start-up). */
export class PostgresBackendOptionsError extends TypeError {
  override readonly name = "PostgresBackendOptionsError";
  /** Stable machine-readable code. */
  readonly code = "INVALID_BACKEND_OPTIONS";
  readonly [OPTIONS_ERROR_MARKER] = true;

  /** True for a `PostgresBackendOptionsError` from any copy of the package. */
  static isInstance(error: unknown): error is PostgresBackendOptionsError {
    return hasErrorMarker(error, OPTIONS_ERROR_MARKER);
  }
}

/** Option `key`, or its default; a {@link PostgresBackendOptionsError} when it is not a number >= `minimum`. */
export function readOption<K extends keyof typeof DEFAULTS>(
  options: PostgresBackendOptions,
  key: K,
  minimum: number,
): number {
  return readGivenOption(options, key, minimum) ?? (DEFAULTS[key] as number);
}

/**
 * Option `key` when given (undefined when not: an option whose default depends on what is served); a
 * {@link PostgresBackendOptionsError} when it is not a number >= `minimum`.
 */
export function readGivenOption(
  options: PostgresBackendOptions,
  key: "postingCacheBytes" | "frequentListDocuments" | keyof typeof DEFAULTS,
  minimum: number,
): number | undefined {
  const value = options[key];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < minimum) {
    throw new PostgresBackendOptionsError(
      `createPostgresBackend: ${key} must be a number >= ${minimum}, got ${String(value)}`,
    );
  }
  return value;
}
