/**
 * The PostgreSQL backend's state (see `backend.ts`): every field, the constructor (options checked), health, the
 * pools (the primary's and a read replica's, the host's or lexground's own) and the schema, created or migrated
 * once. `PostgresBackend` adds reading the serving generation, publishing and updates on top.
 */
import type { KnowledgeBackendIndex, KnowledgeBackendStatus } from "../knowledge/searchBackend.js";
import { type CompactionRequest, CompactionSchedule } from "./compaction.js";
import { createPool, loadPostgresDriver, type PostgresPool } from "./driver.js";
import { FetchBudget } from "./fetchBudget.js";
import {
  DEFAULTS,
  type PostgresBackendOptions,
  PostgresBackendOptionsError,
  readGivenOption,
  readOption,
} from "./options.js";
import { PostingCache } from "./postingCache.js";
import type { PublicationPhase, PublicationPhaseObserver } from "./publicationPhases.js";
import { migrateSchema } from "./schema.js";
import type { GenerationRow } from "./serving.js";
import type { TurnProfile } from "./turnProfile.js";

/** Session settings of pools lexground creates: sums must not be split across parallel workers; no JIT pauses. */
const SESSION_OPTIONS = "-c max_parallel_workers_per_gather=0 -c jit=off -c extra_float_digits=3";

/**
 * The fields, pools, health and schema of a {@link PostgresBackend} (not exported from the package: that class is
 * the public name).
 */
export abstract class PostgresBackendState {
  readonly name = "postgres";
  /** The schema holding the tables. */
  readonly schema: string;
  /** Where turns spend their time, step by step, while set (benchmarks). @internal */
  turnProfile: TurnProfile | null = null;
  /** Decoded postings of recent turns' terms (see `postingCacheBytes`). @internal */
  readonly postingCache: PostingCache;
  /** The admission of turns that fetch lists (see `fetchBudgetBytes`). @internal */
  readonly fetchBudget: FetchBudget;
  /**
   * The phases of this backend's latest publication (wall and app CPU time of each), and an observer called as each
   * ends. For benchmarks.
   * @internal
   */
  publicationPhases: readonly PublicationPhase[] = [];
  /** @internal */
  onPublicationPhase: PublicationPhaseObserver | undefined;
  private readonly options: PostgresBackendOptions;
  private readonly statementTimeoutMs: number;
  private readonly connectionTimeoutMs: number;
  private readonly maxConnections: number;
  protected readonly generationCheckMs: number;
  protected readonly keepGenerations: number;
  protected readonly batchBytes: number;
  /** The option `frequentListDocuments` (undefined: the default rule). */
  protected readonly frequentListDocuments: number | undefined;
  /** The compaction after incremental updates (see {@link update}). */
  protected readonly compactions: CompactionSchedule;
  private writePool: Promise<PostgresPool> | null = null;
  private readPool: Promise<PostgresPool> | null = null;
  private readonly ownedPools: Promise<PostgresPool>[] = [];
  private schemaReady: Promise<void> | null = null;
  protected serving: { index: KnowledgeBackendIndex; row: GenerationRow; checkedAt: number } | null = null;
  protected refreshing: Promise<KnowledgeBackendIndex | null> | null = null;
  private degraded = false;
  private lastError: string | null = null;
  private closed = false;

  constructor(options: PostgresBackendOptions) {
    if (options === null || typeof options !== "object")
      throw new PostgresBackendOptionsError("createPostgresBackend: options must be an object");
    const hasString = typeof options.connectionString === "string" && options.connectionString !== "";
    const hasPool = options.pool !== undefined && options.pool !== null;
    if (hasString === hasPool) {
      throw new PostgresBackendOptionsError(
        "createPostgresBackend: give exactly one of connectionString (postgres://…) and pool",
      );
    }
    if (hasPool && typeof options.pool?.query !== "function")
      throw new PostgresBackendOptionsError("createPostgresBackend: pool must be a pg.Pool");
    if (options.readPool !== undefined && typeof options.readPool?.query !== "function")
      throw new PostgresBackendOptionsError("createPostgresBackend: readPool must be a pg.Pool");
    const schema = options.schema ?? DEFAULTS.schema;
    if (typeof schema !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,47}$/.test(schema)) {
      throw new PostgresBackendOptionsError(
        `createPostgresBackend: schema must be a plain identifier (letters, digits, _), got ${JSON.stringify(schema)}`,
      );
    }
    this.options = { ...options };
    this.schema = schema;
    this.statementTimeoutMs = readOption(options, "statementTimeoutMs", 0);
    this.connectionTimeoutMs = readOption(options, "connectionTimeoutMs", 0);
    this.maxConnections = readOption(options, "maxConnections", 1);
    this.generationCheckMs = readOption(options, "generationCheckMs", 0);
    this.keepGenerations = readOption(options, "keepGenerations", 1);
    this.batchBytes = readOption(options, "batchBytes", 1024);
    this.frequentListDocuments = readGivenOption(options, "frequentListDocuments", 0);
    this.postingCache = new PostingCache(readGivenOption(options, "postingCacheBytes", 0) ?? "auto");
    this.fetchBudget = new FetchBudget(readOption(options, "fetchBudgetBytes", 0));
    this.compactions = new CompactionSchedule(readOption(options, "compactionDelayMs", 0), (request) =>
      this.compact(request),
    );
  }

  /** Health, without I/O. */
  status(): KnowledgeBackendStatus {
    return {
      name: this.name,
      degraded: this.degraded,
      lastError: this.lastError,
      generation: this.serving?.row.generation ?? null,
      entryCount: this.serving?.row.entryCount ?? 0,
    };
  }

  /**
   * Loads the driver, connects and creates or migrates the schema. Optional (everything does it on first use);
   * rejects with `MissingPeerDependencyError` without `pg`, or with the connection error.
   */
  async connect(): Promise<void> {
    await this.tracked(() => this.ensureSchema());
  }

  /** Ends the pools lexground created (a host's pools are left open). */
  async close(): Promise<void> {
    this.closed = true;
    this.compactions.close();
    const pools = this.ownedPools.splice(0);
    await Promise.all(pools.map(async (pool) => (await pool.catch(() => null))?.end().catch(() => {})));
  }

  // Pools --------------------------------------------------------------------------------------------------------

  private ownPool(connectionString: string): Promise<PostgresPool> {
    const pool = createPool(
      {
        connectionString,
        max: this.maxConnections,
        connectionTimeoutMillis: this.connectionTimeoutMs,
        idleTimeoutMillis: 30_000,
        statement_timeout: this.statementTimeoutMs,
        // The client gives up a little after the server would have: a stalled network still ends.
        query_timeout: this.statementTimeoutMs > 0 ? this.statementTimeoutMs + 1_000 : 0,
        application_name: "lexground",
        options: SESSION_OPTIONS,
      },
      (error) => this.recordFailure(error),
    );
    pool.catch(() => {});
    this.ownedPools.push(pool);
    return pool;
  }

  protected primary(): Promise<PostgresPool> {
    if (this.closed) return Promise.reject(new Error("the PostgreSQL backend is closed"));
    this.writePool ??= this.openPool(this.options.pool, this.options.connectionString, () => {
      this.writePool = null;
    });
    return this.writePool;
  }

  protected replica(): Promise<PostgresPool> {
    if (!this.hasReadPool()) return this.primary();
    if (this.closed) return Promise.reject(new Error("the PostgreSQL backend is closed"));
    this.readPool ??= this.openPool(this.options.readPool, this.options.readConnectionString, () => {
      this.readPool = null;
    });
    return this.readPool;
  }

  /** The host's pool once the driver loads, or a pool of lexground's own; `forget` runs when it fails. */
  private openPool(
    given: PostgresPool | undefined,
    connectionString: string | undefined,
    forget: () => void,
  ): Promise<PostgresPool> {
    const pool = given ? loadPostgresDriver().then(() => given) : this.ownPool(connectionString!);
    pool.catch(forget);
    return pool;
  }

  /** Runs `operation`, recording its failure (degraded) or success (healthy). */
  protected async tracked<T>(operation: () => Promise<T>): Promise<T> {
    try {
      const result = await operation();
      this.degraded = false;
      this.lastError = null;
      return result;
    } catch (error) {
      this.recordFailure(error);
      throw error;
    }
  }

  private recordFailure(error: unknown): void {
    this.degraded = true;
    this.lastError = error instanceof Error ? error.message : String(error);
  }

  /** Whether turns read through their own pool (a read replica) rather than the primary's. */
  protected hasReadPool(): boolean {
    return this.options.readPool !== undefined || Boolean(this.options.readConnectionString);
  }

  // Schema ---------------------------------------------------------------------------------------------------------

  protected ensureSchema(): Promise<void> {
    if (!this.schemaReady) {
      this.schemaReady = this.primary().then((pool) => migrateSchema(pool, this.schema));
      this.schemaReady.catch(() => {
        this.schemaReady = null;
      });
    }
    return this.schemaReady;
  }

  /** Publishes an updated registry in full, unless another update or publication replaced it meanwhile. */
  protected abstract compact(request: CompactionRequest): Promise<void>;
}
