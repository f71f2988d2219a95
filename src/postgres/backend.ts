/**
 * The PostgreSQL index backend: one index shared by every process. A writer publishes a source set as a new
 * generation (its own tables, loaded unindexed, indexed, then switched to in one transaction); readers cache the
 * serving generation and check it at most every `generationCheckMs`, so a new one is picked up without a restart;
 * the previous generation is kept (by default), so a turn that started on it finishes. A turn is two statements:
 * the candidates (phrase hits, eligibility and the lexical top-K, all in the database), then the selected entries
 * with their relations' targets.
 */
import { getAnalyzer } from "../knowledge/analyzer.js";
import { MAX_QUERY_TOKENS } from "../knowledge/defaults.js";
import { hasErrorMarker } from "../knowledge/errors.js";
import type { KnowledgeIndexBuildOptions } from "../knowledge/knowledgeIndex.js";
import type {
  KnowledgeBackendIndex,
  KnowledgeBackendPublishResult,
  KnowledgeBackendStatus,
  KnowledgeCandidateEvidence,
  KnowledgeCandidateQuery,
  KnowledgeIndexBackend,
  KnowledgeSearchBackend,
  KnowledgeSelectionEntries,
} from "../knowledge/searchBackend.js";
import type {
  KnowledgeFieldName,
  KnowledgeLexicalMatch,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { computeDerivedGeneration, type DerivedGenerationData } from "./changes.js";
import { type CopyEncoder, copyIn, NO_READ_TIMEOUT } from "./copy.js";
import {
  createPool,
  loadPostgresDriver,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryConfig,
  type PostgresQueryResult,
} from "./driver.js";
import {
  COMBINED_FIELD,
  computeGenerationData,
  type GenerationData,
  ImpactCollector,
  type PostgresIndexParameters,
  resolveIndexParameters,
} from "./indexData.js";
import {
  candidatesStatement,
  createGenerationStatements,
  decodeFloat64s,
  decodeInt32s,
  dropGenerationStatement,
  encodeKey,
  FORWARD_KEY_STRIDE,
  float8Array,
  forwardStatement,
  GENERATION_LAYOUT,
  type GenerationTables,
  generationTables,
  IMPACT_BLOCK_ENDS,
  impactBlocksStatement,
  indexGenerationStatements,
  int4Array,
  migrationStatements,
  prunedHeadsStatement,
  quoteIdentifier,
  SCHEMA_VERSION,
  SCOPE_DOMAIN,
  SCOPE_INTEGRATION,
  SCOPE_RESTRICTED,
  scopesStatement,
  selectionEntriesStatement,
} from "./sql.js";

/** Options of {@link createPostgresBackend}. */
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
};

const DEFAULTS = {
  schema: "lexground",
  statementTimeoutMs: 2_000,
  connectionTimeoutMs: 2_000,
  maxConnections: 10,
  generationCheckMs: 1_000,
  keepGenerations: 2,
  batchBytes: 8 * 1024 * 1024,
  compactionDelayMs: 60_000,
} as const;

/** Session settings of pools lexground creates: sums must not be split across parallel workers; no JIT pauses. */
const SESSION_OPTIONS = "-c max_parallel_workers_per_gather=0 -c jit=off -c extra_float_digits=3";
/** Advisory lock key space ("lxg" in ASCII), second key: 1 migrations, 2 publishing. */
const LOCK_NAMESPACE = 0x6c7867;

/** PostgreSQL's "undefined table" (a generation dropped while a turn read it). */
const UNDEFINED_TABLE = "42P01";
/** "invalid schema name": a replica that has not replayed the schema's creation yet. */
const INVALID_SCHEMA_NAME = "3F000";
/** A replica cancelled the statement: replaying a dropped generation conflicted with it. */
const RECOVERY_CONFLICT = "40001";

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

function readOption<K extends keyof typeof DEFAULTS>(
  options: PostgresBackendOptions,
  key: K,
  minimum: number,
): number {
  const value = options[key];
  if (value === undefined) return DEFAULTS[key] as number;
  if (typeof value !== "number" || !Number.isFinite(value) || value < minimum) {
    throw new PostgresBackendOptionsError(
      `createPostgresBackend: ${key} must be a number >= ${minimum}, got ${String(value)}`,
    );
  }
  return value;
}

/** A serving generation as read from the database. */
type GenerationRow = {
  generation: number;
  entryCount: number;
  contentKey: string;
  parameters: ReturnType<typeof resolveIndexParameters>;
  maxPhraseWords: number;
  /** The generation's table layout (`GENERATION_LAYOUT`; 1 without the pruning tables). */
  layout: number;
};

/**
 * Creates the backend (no I/O yet: the driver loads and the schema is created or migrated on first use). Give it to
 * the engine as `backend`. See {@link PostgresBackendOptions}.
 */
export function createPostgresBackend(options: PostgresBackendOptions): PostgresBackend {
  return new PostgresBackend(options);
}

/** The PostgreSQL implementation of {@link KnowledgeIndexBackend}. Create it with {@link createPostgresBackend}. */
export class PostgresBackend implements KnowledgeIndexBackend {
  readonly name = "postgres";
  /** The schema holding the tables. */
  readonly schema: string;
  /**
   * How this backend's turns found their lexical top K: `pruned` (proven from the impact blocks), `full` (every
   * posting of the query's terms summed). For benchmarks and tests.
   * @internal
   */
  readonly turnPaths = { pruned: 0, full: 0 };
  private readonly options: PostgresBackendOptions;
  private readonly statementTimeoutMs: number;
  private readonly connectionTimeoutMs: number;
  private readonly maxConnections: number;
  private readonly generationCheckMs: number;
  private readonly keepGenerations: number;
  private readonly batchBytes: number;
  private readonly compactionDelayMs: number;
  /** The registry of the latest incremental update, until a compaction republishes it (see {@link update}). */
  private pendingCompaction: {
    entries: readonly NormalizedKnowledgeEntry[];
    indexOptions: KnowledgeIndexBuildOptions;
    contentKey: string;
    timer: ReturnType<typeof setTimeout> | null;
  } | null = null;
  private compaction: Promise<void> | null = null;
  private writePool: Promise<PostgresPool> | null = null;
  private readPool: Promise<PostgresPool> | null = null;
  private readonly ownedPools: Promise<PostgresPool>[] = [];
  private schemaReady: Promise<void> | null = null;
  private serving: { index: KnowledgeBackendIndex; row: GenerationRow; checkedAt: number } | null = null;
  private refreshing: Promise<KnowledgeBackendIndex | null> | null = null;
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
    this.compactionDelayMs = readOption(options, "compactionDelayMs", 0);
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
    if (this.pendingCompaction?.timer) clearTimeout(this.pendingCompaction.timer);
    this.pendingCompaction = null;
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

  private primary(): Promise<PostgresPool> {
    if (this.closed) return Promise.reject(new Error("the PostgreSQL backend is closed"));
    if (!this.writePool) {
      this.writePool = this.options.pool
        ? loadPostgresDriver().then(() => this.options.pool!)
        : this.ownPool(this.options.connectionString!);
      this.writePool.catch(() => {
        this.writePool = null;
      });
    }
    return this.writePool;
  }

  private replica(): Promise<PostgresPool> {
    if (this.options.readPool === undefined && !this.options.readConnectionString) return this.primary();
    if (this.closed) return Promise.reject(new Error("the PostgreSQL backend is closed"));
    if (!this.readPool) {
      this.readPool = this.options.readPool
        ? loadPostgresDriver().then(() => this.options.readPool!)
        : this.ownPool(this.options.readConnectionString!);
      this.readPool.catch(() => {
        this.readPool = null;
      });
    }
    return this.readPool;
  }

  /** Runs `operation`, recording its failure (degraded) or success (healthy). */
  private async tracked<T>(operation: () => Promise<T>): Promise<T> {
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

  // Schema ---------------------------------------------------------------------------------------------------------

  private ensureSchema(): Promise<void> {
    if (!this.schemaReady) {
      this.schemaReady = this.migrate();
      this.schemaReady.catch(() => {
        this.schemaReady = null;
      });
    }
    return this.schemaReady;
  }

  /** Creates the schema and applies the migrations it lacks, one writer at a time (an advisory lock). */
  private async migrate(): Promise<void> {
    const pool = await this.primary();
    const client = await pool.connect();
    const s = quoteIdentifier(this.schema);
    try {
      await client.query({ text: "set statement_timeout = 0" });
      await client.query({ text: "select pg_advisory_lock($1, 1)", values: [LOCK_NAMESPACE] });
      await client.query({ text: `create schema if not exists ${s}` });
      await client.query({
        text: `create table if not exists ${s}.schema_version (
          singleton boolean primary key default true check (singleton), version integer not null)`,
      });
      const found = await client.query({ text: `select version from ${s}.schema_version` });
      const current = found.rows.length > 0 ? Number(found.rows[0]!.version) : 0;
      if (current > SCHEMA_VERSION) {
        throw new Error(
          `the ${this.schema} schema is at version ${current}, newer than this lexground's ${SCHEMA_VERSION}: upgrade lexground`,
        );
      }
      const migrations = migrationStatements(this.schema);
      for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
        await client.query({ text: "begin" });
        try {
          for (const text of migrations[version - 1]!) await client.query({ text });
          await client.query({
            text: `insert into ${s}.schema_version (version) values ($1)
              on conflict (singleton) do update set version = excluded.version`,
            values: [version],
          });
          await client.query({ text: "commit" });
        } catch (error) {
          await client.query({ text: "rollback" }).catch(() => {});
          throw error;
        }
      }
    } finally {
      // Destroyed rather than returned: its session holds the lock and the changed timeout.
      client.release(true);
    }
  }

  // Reading --------------------------------------------------------------------------------------------------------

  /** The serving generation (cached for `generationCheckMs`), or null when nothing is published. */
  async current(): Promise<KnowledgeBackendIndex | null> {
    const serving = this.serving;
    if (serving && Date.now() - serving.checkedAt < this.generationCheckMs) return serving.index;
    this.refreshing ??= this.tracked(() => this.readServing()).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** Forgets the cached generation (the next turn reads the serving one). */
  invalidate(): void {
    this.serving = null;
  }

  /** Whether turns read through their own pool (a read replica) rather than the primary's. */
  private hasReadPool(): boolean {
    return this.options.readPool !== undefined || Boolean(this.options.readConnectionString);
  }

  /**
   * Reads the serving generation where turns read (the replica, when there is one). A replica serves what it has
   * replayed: the serving row and a generation's tables arrive in WAL order, so the generation it names is
   * complete there; one the primary switched to but the replica has not replayed yet is not seen (the previous
   * one serves meanwhile). With a replica the primary is not needed to serve: the schema is migrated by the
   * writer, and a replica that has not replayed it yet has nothing published.
   */
  private async readServing(): Promise<KnowledgeBackendIndex | null> {
    const onReplica = this.hasReadPool();
    if (!onReplica) await this.ensureSchema();
    const pool = await this.replica();
    const s = quoteIdentifier(this.schema);
    let result: PostgresQueryResult;
    try {
      result = await pool.query({
        name: `lexground:${this.schema}:serving`,
        // The layout through to_jsonb: a replica may not have replayed the version-2 migration yet.
        text: `select sv.version, g.generation, g.entry_count, g.content_key, g.parameters, g.statistics,
            to_jsonb(g) ->> 'layout' as layout
          from ${s}.schema_version sv
          left join (${s}.serving v join ${s}.generations g on g.generation = v.generation) on true`,
      });
    } catch (error) {
      const code = (error as { code?: unknown })?.code;
      if (onReplica && (code === UNDEFINED_TABLE || code === INVALID_SCHEMA_NAME)) {
        this.serving = null;
        return null;
      }
      throw error;
    }
    const row = result.rows[0];
    if (row && Number(row.version) > SCHEMA_VERSION) {
      throw new Error(
        `the ${this.schema} schema is at version ${Number(row.version)}, newer than this lexground's ${SCHEMA_VERSION}: upgrade lexground`,
      );
    }
    if (!row || row.generation === null || row.generation === undefined) {
      this.serving = null;
      return null;
    }
    const generation = Number(row.generation);
    const previous = this.serving;
    if (previous && previous.row.generation === generation) {
      previous.checkedAt = Date.now();
      return previous.index;
    }
    const statistics = JSON.parse(String(row.statistics)) as { maxPhraseWords: number };
    const parsed: GenerationRow = {
      generation,
      entryCount: Number(row.entry_count),
      contentKey: String(row.content_key),
      parameters: JSON.parse(String(row.parameters)),
      maxPhraseWords: statistics.maxPhraseWords,
      layout: Number(row.layout ?? 1),
    };
    const index: KnowledgeBackendIndex = {
      generation,
      entryCount: parsed.entryCount,
      options: parsed.parameters,
      searcher: new GenerationFallbackSearcher(
        this,
        generation,
        new PostgresSearcher(this, parsed, generationTables(this.schema, generation)),
      ),
    };
    this.serving = { index, row: parsed, checkedAt: Date.now() };
    return index;
  }

  /**
   * Runs a turn's statement on the read pool. A generation dropped meanwhile (two publications during one turn)
   * fails with "undefined table": the cached generation is forgotten, so the next turn reads the serving one.
   */
  async read(config: PostgresQueryConfig): Promise<PostgresQueryResult> {
    return this.tracked(async () => {
      const pool = await this.replica();
      try {
        return await pool.query(config);
      } catch (error) {
        if ((error as { code?: unknown })?.code === UNDEFINED_TABLE) this.invalidate();
        throw error;
      }
    });
  }

  // Publishing -----------------------------------------------------------------------------------------------------

  /**
   * Publishes `entries` as a new generation, or reuses the serving one when it holds the same `contentKey`. One
   * publisher at a time (an advisory lock); the switch is one transaction; on failure the new generation's tables
   * are dropped and the previous generation keeps serving.
   */
  async publish(
    entries: readonly NormalizedKnowledgeEntry[],
    options: { indexOptions: KnowledgeIndexBuildOptions; contentKey: string },
  ): Promise<KnowledgeBackendPublishResult> {
    const published = await this.tracked(async () => {
      await this.ensureSchema();
      const before = await this.servingRow();
      // An updated generation with this content is published again: that is its compaction.
      if (before && before.contentKey === options.contentKey && !before.derived)
        return { generation: before.generation, entryCount: before.entryCount, reused: true };
      const data = computeGenerationData(entries, options.indexOptions);
      const pool = await this.primary();
      const client = await pool.connect();
      try {
        await client.query({ text: "set statement_timeout = 0" });
        await client.query({ text: "select pg_advisory_lock($1, 2)", values: [LOCK_NAMESPACE] });
        // Another process may have published the same content while this one waited for the lock.
        const latest = await this.servingRow(client);
        if (latest && latest.contentKey === options.contentKey && !latest.derived)
          return { generation: latest.generation, entryCount: latest.entryCount, reused: true };
        const generation = await this.writeGeneration(client, data, options.contentKey);
        await this.retireOldGenerations(client);
        this.serving = null;
        return { generation, entryCount: data.documentCount, reused: false };
      } finally {
        client.release(true);
      }
    });
    // Status reports the generation now serving (readers learn it within generationCheckMs).
    await this.current().catch(() => {});
    return published;
  }

  // Incremental updates ----------------------------------------------------------------------------------------

  /**
   * Publishes the registry after an incremental update: `entries` is the complete final registry, `changedIds`
   * the ids upserted since `baseContentKey`'s generation. When that generation serves (and was built with the same
   * parameters, field-by-field scoring), the next generation is written from it in the database: the unchanged
   * entries and their postings are copied and renumbered, the changed entries' postings (computed here) merged
   * in, every contribution recomputed for the new statistics with the full build's operations (see
   * `changes.ts`), so the new generation's tables equal those a full publication of `entries` would write. It
   * is switched to in one transaction, like a publication, by one writer at a time. Otherwise (another writer
   * published meanwhile, BM25F scoring, other parameters) `entries` are published in full. A compaction (a full
   * publication of the same entries, for the pruned layout) follows after `compactionDelayMs` without updates.
   */
  async update(
    entries: readonly NormalizedKnowledgeEntry[],
    options: {
      indexOptions: KnowledgeIndexBuildOptions;
      contentKey: string;
      baseContentKey: string;
      changedIds: readonly string[];
      previousEntries: readonly NormalizedKnowledgeEntry[];
    },
  ): Promise<KnowledgeBackendPublishResult> {
    const published = await this.tracked(async () => {
      await this.ensureSchema();
      const parameters = resolveIndexParameters(options.indexOptions);
      const pool = await this.primary();
      const client = await pool.connect();
      try {
        await client.query({ text: "set statement_timeout = 0" });
        await client.query({ text: "select pg_advisory_lock($1, 2)", values: [LOCK_NAMESPACE] });
        const base = await this.servingRow(client);
        if (base && base.contentKey === options.contentKey)
          return { generation: base.generation, entryCount: base.entryCount, reused: true };
        const derivable =
          base !== null &&
          base.contentKey === options.baseContentKey &&
          parameters.scoring === "sum" &&
          base.parameters === JSON.stringify(parameters);
        const generation = derivable
          ? await this.writeDerivedGeneration(client, base.generation, entries, options, parameters)
          : await this.writeGeneration(
              client,
              computeGenerationData(entries, options.indexOptions),
              options.contentKey,
            );
        await this.retireOldGenerations(client);
        this.serving = null;
        return { generation, entryCount: entries.length, reused: false };
      } finally {
        client.release(true);
      }
    });
    if (!published.reused) this.scheduleCompaction(entries, options.indexOptions, options.contentKey);
    await this.current().catch(() => {});
    return published;
  }

  /** Resolves when no compaction is pending or running (for tests and benchmarks); never rejects. */
  async compacted(): Promise<void> {
    const pending = this.pendingCompaction;
    if (pending?.timer) {
      clearTimeout(pending.timer);
      pending.timer = null;
      this.compaction ??= this.compact();
    }
    while (this.compaction) await this.compaction;
  }

  private scheduleCompaction(
    entries: readonly NormalizedKnowledgeEntry[],
    indexOptions: KnowledgeIndexBuildOptions,
    contentKey: string,
  ): void {
    if (this.pendingCompaction?.timer) clearTimeout(this.pendingCompaction.timer);
    const timer = setTimeout(() => {
      if (this.pendingCompaction?.timer === timer) this.pendingCompaction.timer = null;
      this.compaction ??= this.compact();
    }, this.compactionDelayMs);
    timer.unref?.();
    this.pendingCompaction = { entries, indexOptions, contentKey, timer };
  }

  /**
   * Publishes the latest updated registry in full, unless another update or publication replaced it meanwhile
   * (a failure is recorded in the status; the updated generation keeps serving, exactly).
   */
  private async compact(): Promise<void> {
    try {
      while (this.pendingCompaction && this.pendingCompaction.timer === null && !this.closed) {
        const { entries, indexOptions, contentKey } = this.pendingCompaction;
        this.pendingCompaction = null;
        const serving = await this.servingRow().catch(() => null);
        if (!serving || serving.contentKey !== contentKey || !serving.derived) continue;
        await this.publish(entries, { indexOptions, contentKey }).catch(() => {});
      }
    } finally {
      this.compaction = null;
    }
  }

  /** Writes the next generation from the serving one `baseGeneration` (see {@link update}); returns its number. */
  private async writeDerivedGeneration(
    pooled: PostgresPoolClient,
    baseGeneration: number,
    entries: readonly NormalizedKnowledgeEntry[],
    options: {
      contentKey: string;
      changedIds: readonly string[];
      previousEntries: readonly NormalizedKnowledgeEntry[];
    },
    parameters: PostgresIndexParameters,
  ): Promise<number> {
    // Statements that rewrite a whole generation may take longer than the pool's client-side read timeout.
    const client: PostgresPoolClient = {
      query: (config) => pooled.query({ ...config, query_timeout: NO_READ_TIMEOUT }),
      release: (destroy) => pooled.release(destroy),
    };
    const base = generationTables(this.schema, baseGeneration);
    const baseRows = await client.query({
      text: `select doc, id, field_lengths from ${base.entries} order by doc`,
    });
    const ids: string[] = [];
    const fieldLengths = Array.from({ length: 5 }, () => new Int32Array(baseRows.rows.length));
    baseRows.rows.forEach((row, doc) => {
      if (Number(row.doc) !== doc) throw new Error(`generation ${baseGeneration} has a gap at entry ${doc}`);
      ids.push(JSON.parse(String(row.id)) as string);
      const lengths = row.field_lengths as number[];
      for (let field = 0; field < 5; field++) fieldLengths[field]![doc] = Number(lengths[field]);
    });
    const maxFound = await client.query({
      text: `select coalesce(max(document_frequency), 0) as max from ${base.postings}`,
    });
    const data = computeDerivedGeneration(
      { ids, fieldLengths, maxDocumentFrequency: Number(maxFound.rows[0]!.max) },
      entries,
      new Set(options.changedIds),
      options.previousEntries,
      parameters,
    );
    // Layout 1 (unpruned): the pruning tables stay empty, turns take the full path until the compaction.
    return this.publishGeneration(
      client,
      {
        contentKey: options.contentKey,
        entryCount: data.documentCount,
        parameters: JSON.stringify(parameters),
        statistics: JSON.stringify({
          maxPhraseWords: data.maxPhraseWords,
          documentCount: data.documentCount,
          averageLengths: data.averageLengths,
          derivedFrom: baseGeneration,
        }),
        layout: 1,
      },
      async (tables) => {
        await this.loadDerivedGeneration(client, base, tables, data);
        return 1;
      },
    );
  }

  /**
   * Fills an updated generation's tables: the base's unchanged entries and postings copied and renumbered in the
   * database, the changed entries' rows and postings from JavaScript, contributions recomputed per posting as
   * `weightedIdf[df] · ((tf · (k1 + 1)) / (tf + lengthNormalization[doc]))` (`bm25TermScore`'s expression and
   * order; the database's float8 arithmetic is IEEE like JavaScript's), phrases and scopes written in full.
   */
  private async loadDerivedGeneration(
    client: PostgresPoolClient,
    base: GenerationTables,
    tables: GenerationTables,
    data: DerivedGenerationData,
  ): Promise<void> {
    const relationStarts = new Int32Array(data.documentCount + 1);
    relationStarts.set(data.relationEnds, 1);
    await client.query({
      text: `insert into ${tables.entries} (doc, id, entry, relations, field_lengths)
        select n.doc, e.id, e.entry,
          ($2::int4[])[($3::int4[])[n.doc + 1] + 1 : ($3::int4[])[n.doc + 2]], e.field_lengths
        from ${base.entries} e cross join lateral (select ($1::int4[])[e.doc + 1] as doc) n
        where n.doc >= 0`,
      values: [int4Array(data.map), int4Array(data.relations), int4Array(relationStarts)],
    });
    const batch = new BatchInsert(client, this.batchBytes);
    batch.start(
      tables.entries,
      ["doc", "id", "entry", "relations", "field_lengths"],
      ["", "", "", "::int4[]", "::int4[]"],
    );
    for (const row of data.added) {
      const id = JSON.stringify(row.entry.id);
      const entry = JSON.stringify(row.entry);
      await batch.add(
        [row.doc, id, entry, int4Array(row.relations), int4Array(row.fieldLengths)],
        id.length + entry.length + 4 * (row.relations.length + 16),
      );
    }
    await batch.flush();
    // The changed entries' postings and the lists they touch (theirs and their previous versions').
    await client.query({
      text: `create temporary table lexground_added (
        term text not null, field smallint not null, docs integer[] not null, frequencies integer[] not null)`,
    });
    await client.query({
      text: "create temporary table lexground_touched (term text not null, field smallint not null)",
    });
    batch.start(
      "pg_temp.lexground_added",
      ["term", "field", "docs", "frequencies"],
      ["", "", "::int4[]", "::int4[]"],
    );
    for (const posting of data.addedPostings) {
      await batch.add(
        [encodeKey(posting.term), posting.field, int4Array(posting.docs), int4Array(posting.frequencies)],
        posting.term.length + 32 + posting.docs.length * 16,
      );
    }
    await batch.flush();
    batch.start("pg_temp.lexground_touched", ["term", "field"], ["", ""]);
    for (const { term, field } of data.touched) await batch.add([encodeKey(term), field], term.length + 16);
    await batch.flush();
    await client.query({ text: "create index on pg_temp.lexground_touched (term, field)" });
    await client.query({ text: "analyze pg_temp.lexground_added" });
    await client.query({ text: "analyze pg_temp.lexground_touched" });
    // Per posting: weightedIdf[field, df] · ((tf · (k1 + 1)) / (tf + lengthNormalization[field, doc])). The field
    // is a smallint: the subscripts are computed as integers (field × entry count exceeds 32,767 from 8,192 entries).
    const contribution = (list: string, documentFrequency: string, frequency: string, doc: string) =>
      `($2::float8[])[${list}.field::int4 * $3::int4 + ${documentFrequency} + 1]
        * ((${frequency} * $4::float8) / (${frequency} + ($5::float8[])[${list}.field::int4 * $6::int4 + ${doc} + 1]))`;
    const values = [
      int4Array(data.map),
      float8Array(data.weightedIdf),
      data.idfStride,
      data.saturation,
      float8Array(data.lengthNormalizations),
      data.documentCount,
    ];
    // Untouched lists: the same documents (renumbered, order kept: the renumbering is increasing) and frequencies,
    // so the same document frequency; only the contributions change. The aggregates read the array's elements in
    // storage order (a plain aggregate over the function scan of unnest, nothing between them that could reorder;
    // the property test compares every list with a full publication's). A removed document in such a list would
    // be a bug: the division by zero fails the update rather than write a wrong list.
    await client.query({
      text: `insert into ${tables.postings} (term, field, document_frequency, docs, frequencies, contributions)
        select p.term, p.field, p.document_frequency, x.docs, p.frequencies, x.contributions
        from ${base.postings} p
        cross join lateral (
          select array_agg(($1::int4[])[u.d + 1]) as docs,
            array_agg(${contribution("p", "p.document_frequency", "u.f", "($1::int4[])[u.d + 1]")}) as contributions,
            min(($1::int4[])[u.d + 1]) as lowest
          from unnest(p.docs, p.frequencies) as u(d, f)
        ) x
        where not exists (select 1 from pg_temp.lexground_touched t where t.term = p.term and t.field = p.field)
          and 1 / (x.lowest >= 0)::int = 1`,
      values,
    });
    // Touched lists: the base's surviving documents merged with the added ones, in document order.
    await client.query({
      text: `insert into ${tables.postings} (term, field, document_frequency, docs, frequencies, contributions)
        select l.term, l.field, cardinality(l.docs), l.docs, l.frequencies,
          array(select ${contribution("l", "cardinality(l.docs)", "x.f", "x.d")}
                from unnest(l.docs, l.frequencies) with ordinality as x(d, f, o) order by x.o)
        from (
          select t.term, t.field, m.docs, m.frequencies
          from pg_temp.lexground_touched t
          left join ${base.postings} p on p.term = t.term and p.field = t.field
          left join pg_temp.lexground_added a on a.term = t.term and a.field = t.field
          cross join lateral (
            select array_agg(x.d order by x.d) as docs, array_agg(x.f order by x.d) as frequencies
            from (
              select ($1::int4[])[u.d + 1] as d, u.f from unnest(p.docs, p.frequencies) as u(d, f)
              union all
              select u.d, u.f from unnest(a.docs, a.frequencies) as u(d, f)
            ) x
            where x.d >= 0
          ) m
        ) l
        where l.docs is not null`,
      values,
    });
    await client.query({ text: "drop table pg_temp.lexground_added, pg_temp.lexground_touched" });
    batch.start(tables.phrases, ["key", "exact", "alias"], ["", "::int4[]", "::int4[]"]);
    for (const [key, ids] of data.phrases) {
      await batch.add([encodeKey(key), int4Array(ids.exact), int4Array(ids.alias)], key.length + 64);
    }
    await batch.flush();
    batch.start(tables.scopes, ["kind", "key", "docs"], ["", "", "::int4[]"]);
    await batch.add([SCOPE_RESTRICTED, "", int4Array(data.restricted)], data.restricted.length * 8);
    for (const [key, docs] of data.byIntegration)
      await batch.add([SCOPE_INTEGRATION, encodeKey(key), int4Array(docs)], key.length + docs.length * 8);
    for (const [key, docs] of data.byDomain)
      await batch.add([SCOPE_DOMAIN, encodeKey(key), int4Array(docs)], key.length + docs.length * 8);
    await batch.flush();
  }

  /** The serving generation's row (on `client`, or the primary pool). */
  private async servingRow(client?: PostgresPoolClient): Promise<{
    generation: number;
    entryCount: number;
    contentKey: string;
    parameters: string;
    /** Written by an incremental update (not compacted yet). */
    derived: boolean;
  } | null> {
    const s = quoteIdentifier(this.schema);
    const runner = client ?? (await this.primary());
    const result = await runner.query({
      text: `select g.generation, g.entry_count, g.content_key, g.parameters, g.statistics
        from ${s}.serving v join ${s}.generations g on g.generation = v.generation`,
    });
    const row = result.rows[0];
    if (!row) return null;
    const statistics = JSON.parse(String(row.statistics ?? "{}")) as { derivedFrom?: unknown };
    return {
      generation: Number(row.generation),
      entryCount: Number(row.entry_count),
      contentKey: String(row.content_key),
      parameters: String(row.parameters),
      derived: statistics.derivedFrom !== undefined,
    };
  }

  private async writeGeneration(
    client: PostgresPoolClient,
    data: GenerationData,
    contentKey: string,
  ): Promise<number> {
    // Layout 1 when the impacts cannot bound scores (a negative or non-finite one): turns take the full path.
    return this.publishGeneration(
      client,
      {
        contentKey,
        entryCount: data.documentCount,
        parameters: JSON.stringify(data.parameters),
        statistics: JSON.stringify({
          maxPhraseWords: data.maxPhraseWords,
          documentCount: data.documentCount,
          averageLengths: data.averageLengths,
        }),
        layout: GENERATION_LAYOUT,
      },
      async (tables) => ((await loadGeneration(client, tables, data)) ? GENERATION_LAYOUT : 1),
    );
  }

  /**
   * Publishes a new generation in one transaction: its row (state `building`), its tables created, filled by
   * `fill` (which returns the layout turns may use), indexed, marked ready and switched to together, so a replica
   * replays all of it or none, and a failure at any step leaves nothing behind, the previous generation serving
   * and the generation recorded as failed with its error.
   */
  private async publishGeneration(
    client: PostgresPoolClient,
    generationRow: {
      contentKey: string;
      entryCount: number;
      parameters: string;
      statistics: string;
      layout: number;
    },
    fill: (tables: GenerationTables) => Promise<number>,
  ): Promise<number> {
    const s = quoteIdentifier(this.schema);
    const numbered = await client.query({ text: `select nextval('${s}.generation_numbers') as generation` });
    const generation = Number(numbered.rows[0]!.generation);
    const tables = generationTables(this.schema, generation);
    const row = [
      generation,
      generationRow.contentKey,
      generationRow.entryCount,
      generationRow.parameters,
      generationRow.statistics,
      generationRow.layout,
    ];
    try {
      await client.query({ text: "begin" });
      await client.query({
        text: `insert into ${s}.generations
          (generation, state, content_key, entry_count, parameters, statistics, layout)
          values ($1, 'building', $2, $3, $4, $5, $6)`,
        values: row,
      });
      for (const text of createGenerationStatements(tables)) await client.query({ text });
      const layout = await fill(tables);
      for (const text of indexGenerationStatements(tables, generation))
        await client.query({ text, query_timeout: NO_READ_TIMEOUT });
      await client.query({
        text: `update ${s}.generations set state = 'ready', published_at = now(), layout = $2
          where generation = $1`,
        values: [generation, layout],
      });
      await client.query({
        text: `insert into ${s}.serving (generation) values ($1)
          on conflict (singleton) do update set generation = excluded.generation, switched_at = now()`,
        values: [generation],
      });
      await client.query({ text: "commit" });
      return generation;
    } catch (error) {
      await client.query({ text: "rollback" }).catch(() => {});
      await client
        .query({
          text: `insert into ${s}.generations
            (generation, state, content_key, entry_count, parameters, statistics, layout, error)
            values ($1, 'failed', $2, $3, $4, $5, $6, $7)
            on conflict (generation) do update set state = 'failed', error = excluded.error`,
          values: [...row, error instanceof Error ? error.message : String(error)],
        })
        .catch(() => {});
      throw error;
    }
  }

  /** Drops all but the newest `keepGenerations` published generations (and leftovers of failed builds). */
  private async retireOldGenerations(client: PostgresPoolClient): Promise<void> {
    const s = quoteIdentifier(this.schema);
    const result = await client.query({
      text: `select generation from ${s}.generations where state in ('ready', 'failed', 'building')
        and generation not in (select generation from ${s}.generations where state = 'ready'
          order by generation desc limit $1)
        and generation not in (select generation from ${s}.serving)`,
      values: [this.keepGenerations],
    });
    for (const row of result.rows) {
      const generation = Number(row.generation);
      await client.query({ text: dropGenerationStatement(generationTables(this.schema, generation)) });
      await client.query({
        text: `update ${s}.generations set state = case when state = 'ready' then 'retired' else state end
          where generation = $1`,
        values: [generation],
      });
    }
  }
}

/**
 * Loads a generation's tables with binary COPY, in the transaction that created them (`freeze`: the rows are
 * written as already visible, so no later pass rewrites them). The forward rows feed the impact blocks, which
 * are loaded last. Resolves with whether every impact is finite and non-negative (what pruning relies on).
 */
async function loadGeneration(
  client: PostgresPoolClient,
  tables: GenerationTables,
  data: GenerationData,
): Promise<boolean> {
  const copy = (table: string, columns: string[], produce: (encoder: CopyEncoder) => Promise<void>) =>
    copyIn(client, table, columns, produce, { freeze: true });
  await copy(tables.entries, ["doc", "id", "entry", "relations", "field_lengths"], async (encoder) => {
    for (const row of data.entries) {
      await encoder.row(5);
      encoder.int4(row.doc);
      encoder.text(JSON.stringify(row.entry.id));
      encoder.text(JSON.stringify(row.entry));
      encoder.int4Array(row.relations);
      encoder.int4Array(row.fieldLengths);
    }
  });
  await copy(
    tables.postings,
    ["term", "field", "document_frequency", "docs", "frequencies", "contributions"],
    async (encoder) => {
      for (const posting of data.postings()) {
        await encoder.row(6);
        encoder.text(encodeKey(posting.term));
        encoder.int2(posting.field);
        encoder.int4(posting.documentFrequency);
        encoder.int4Array(posting.docs);
        encoder.int4Array(posting.frequencies);
        encoder.float8Array(posting.contributions);
      }
    },
  );
  await copy(tables.phrases, ["key", "exact", "alias"], async (encoder) => {
    for (const [key, ids] of data.phrases) {
      await encoder.row(3);
      encoder.text(encodeKey(key));
      encoder.int4Array(ids.exact);
      encoder.int4Array(ids.alias);
    }
  });
  await copy(tables.scopes, ["kind", "key", "docs"], async (encoder) => {
    const scope = async (kind: number, key: string, docs: readonly number[]) => {
      await encoder.row(3);
      encoder.int2(kind);
      encoder.text(encodeKey(key));
      encoder.int4Array(docs);
    };
    await scope(SCOPE_RESTRICTED, "", data.restricted);
    for (const [key, docs] of data.byIntegration) await scope(SCOPE_INTEGRATION, key, docs);
    for (const [key, docs] of data.byDomain) await scope(SCOPE_DOMAIN, key, docs);
  });
  const impacts = new ImpactCollector(data.terms);
  await copy(tables.forward, ["doc", "id", "keys", "contributions"], async (encoder) => {
    for (const row of data.documents()) {
      impacts.add(row);
      await encoder.row(4);
      encoder.int4(row.doc);
      encoder.text(JSON.stringify(data.entries[row.doc]!.entry.id));
      encoder.int4Bytes(row.keys);
      encoder.float8Bytes(row.contributions);
    }
  });
  await copy(
    tables.impacts,
    ["term", "block", "term_id", "document_frequency", "docs", "impacts", "next_impact"],
    async (encoder) => {
      for (const row of impacts.rows()) {
        await encoder.row(7);
        encoder.text(encodeKey(row.term));
        encoder.int2(row.block);
        encoder.int4(row.termId);
        encoder.int4(row.documentFrequency);
        encoder.int4Bytes(row.docs);
        encoder.float8Bytes(row.impacts);
        encoder.float8(row.nextImpact);
      }
    },
  );
  return impacts.bounded;
}

/** Accumulates rows into multi-row `insert` statements of a bounded size. */
class BatchInsert {
  private table = "";
  private columns: string[] = [];
  private casts: string[] = [];
  private values: unknown[] = [];
  private rows = 0;
  private bytes = 0;

  constructor(
    private readonly client: PostgresPoolClient,
    private readonly batchBytes: number,
  ) {}

  start(table: string, columns: string[], casts: string[]): void {
    this.table = table;
    this.columns = columns;
    this.casts = casts;
    this.values = [];
    this.rows = 0;
    this.bytes = 0;
  }

  async add(row: unknown[], bytes: number): Promise<void> {
    this.values.push(...row);
    this.rows++;
    this.bytes += bytes;
    // PostgreSQL takes at most 65,535 parameters per statement.
    if (this.bytes >= this.batchBytes || this.values.length + row.length > 60_000) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.rows === 0) return;
    const width = this.columns.length;
    const tuples: string[] = [];
    for (let row = 0; row < this.rows; row++) {
      const placeholders = this.casts.map((cast, column) => `$${row * width + column + 1}${cast}`);
      tuples.push(`(${placeholders.join(", ")})`);
    }
    const text = `insert into ${this.table} (${this.columns.join(", ")}) values ${tuples.join(", ")}`;
    const values = this.values;
    this.values = [];
    this.rows = 0;
    this.bytes = 0;
    await this.client.query({ text, values });
  }
}

/**
 * A generation's searcher that survives a stale cache: when a turn's first statement finds its generation gone
 * (dropped on the primary after two newer publications, or cancelled by a replica replaying that drop), nothing
 * of the turn is computed yet, so it runs again on the generation serving now; the turn's second statement goes
 * to the same one. A generation that disappears between a turn's two statements still fails that turn (open).
 */
class GenerationFallbackSearcher implements KnowledgeSearchBackend {
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

const FIELD_NAMES: readonly KnowledgeFieldName[] = ["title", "aliases", "keywords", "summary", "body"];
const FIELD_COUNT = FIELD_NAMES.length;

/** The dense ids of a query's candidates, kept for its `selectionEntries` call. */
const candidateDocs = new WeakMap<KnowledgeCandidateQuery, Map<string, number>>();

/** Queries with more distinct terms than this take the full path (their bounds rarely prove anything). */
const PRUNE_MAX_TERMS = 24;
/** Most documents scored exactly (from their forward rows) by a pruned turn; more take the full path. */
const PRUNE_MAX_EXACT = 1_024;
/**
 * Relative slack of the pruning bounds. A document's score is a sum of non-negative contributions, added in
 * another order than its bounds are (at most 1,024 terms × 6 parts: a relative rounding error below 1e-12), so a
 * document is only ruled out when its bound, raised by this slack, stays below the k-th score lowered by it.
 */
const BOUND_SLACK = 1e-9;
/** Eligibility masks kept per generation (one per scope). */
const MASK_CACHE_SIZE = 16;

/** One query term's impact-ordered postings read so far. */
type TermHead = {
  /** Position of the term among the query's terms. */
  position: number;
  term: string;
  termId: number;
  documentFrequency: number;
  /** Blocks read (0, 1, …). */
  blocks: number;
  /** Postings read. */
  read: number;
  /** Largest impact of the postings not read yet (0 when all were read). */
  cut: number;
};

/** The scope lists of a generation (read once), as the in-memory engine's precomputed lists. */
type ScopeLists = {
  restricted: readonly number[];
  byIntegration: Map<string, readonly number[]>;
  byDomain: Map<string, readonly number[]>;
};

/** A turn's searches against one generation. */
class PostgresSearcher implements KnowledgeSearchBackend {
  private readonly candidatesText: string;
  private readonly entriesText: string;
  private readonly headsText: string;
  private readonly blocksText: string;
  private readonly forwardText: string;
  private readonly scopesText: string;
  private readonly analyzer: ReturnType<typeof getAnalyzer>;
  private readonly bm25f: boolean;
  private scopes: Promise<ScopeLists> | null = null;
  private readonly masks = new Map<string, Uint8Array>();

  constructor(
    private readonly backend: PostgresBackend,
    private readonly generation: GenerationRow,
    tables: GenerationTables,
  ) {
    this.bm25f = generation.parameters.scoring === "bm25f";
    this.candidatesText = candidatesStatement(tables, this.bm25f);
    this.entriesText = selectionEntriesStatement(tables);
    this.headsText = prunedHeadsStatement(tables);
    this.blocksText = impactBlocksStatement(tables);
    this.forwardText = forwardStatement(tables);
    this.scopesText = scopesStatement(tables);
    this.analyzer = getAnalyzer(generation.parameters.analyzer);
  }

  private statementName(kind: string): string {
    return `lexground:${this.backend.schema}:g${this.generation.generation}:${kind}`;
  }

  /** The query's analyzed terms, distinct, in first-occurrence order, at most `MAX_QUERY_TOKENS` (as in memory). */
  private terms(tokens: readonly string[]): string[] {
    const analyzed = this.analyzer ? this.analyzer(tokens) : tokens;
    const seen = new Set<string>();
    for (const token of analyzed) {
      if (seen.has(token)) continue;
      if (seen.size >= MAX_QUERY_TOKENS) break;
      seen.add(token);
    }
    return [...seen];
  }

  /**
   * The phrase of n-gram number `ord` (`size × (tokens + 1) + start`, as the candidates statement numbers them),
   * or null when the same phrase occurred earlier in generation order (each distinct phrase counts once).
   */
  private static phraseOf(tokens: readonly string[], ord: number, first: Map<string, number>): string | null {
    const size = Math.floor(ord / (tokens.length + 1));
    const start = ord % (tokens.length + 1);
    const phrase = tokens.slice(start, start + size).join(" ");
    const seen = first.get(phrase);
    if (seen === undefined) first.set(phrase, ord);
    return seen === undefined || seen === ord ? phrase : null;
  }

  /** Phrase hits in phrase generation order, ids of one phrase in dense-id order (the in-memory sets' order). */
  private static phraseHits(
    tokens: readonly string[],
    hits: { kind: number; ord: number; doc: number; id: string }[],
  ): { exact: Map<string, string[]>; alias: Map<string, string[]> } {
    const exact = new Map<string, string[]>();
    const alias = new Map<string, string[]>();
    hits.sort((left, right) => left.ord - right.ord || left.doc - right.doc);
    const first = new Map<string, number>();
    for (const hit of hits) {
      const target = hit.kind === 1 ? exact : alias;
      const phrase = PostgresSearcher.phraseOf(tokens, hit.ord, first);
      if (phrase === null) continue;
      const list = target.get(hit.id);
      if (list) list.push(phrase);
      else target.set(hit.id, [phrase]);
    }
    return { exact, alias };
  }

  async candidates(query: KnowledgeCandidateQuery): Promise<KnowledgeCandidateEvidence> {
    const topK = query.topK > 0 ? Math.min(Math.ceil(query.topK), 2_147_483_647) : 0;
    const terms = topK > 0 ? this.terms(query.lexicalTokens) : [];
    const docs = new Map<string, number>();
    candidateDocs.set(query, docs);
    if (terms.length === 0 && (query.phraseTokens.length === 0 || this.generation.maxPhraseWords === 0))
      return { exact: new Map(), alias: new Map(), matches: [] };
    if (this.generation.layout >= 2 && terms.length > 0 && terms.length <= PRUNE_MAX_TERMS) {
      const pruned = await this.prunedCandidates(query, terms, topK, docs);
      if (pruned) {
        this.backend.turnPaths.pruned++;
        return pruned;
      }
    }
    this.backend.turnPaths.full++;
    return this.fullCandidates(query, terms, topK, docs);
  }

  /** Every posting of the query's terms summed in the database (one statement, with the phrase hits). */
  private async fullCandidates(
    query: KnowledgeCandidateQuery,
    terms: readonly string[],
    topK: number,
    docs: Map<string, number>,
  ): Promise<KnowledgeCandidateEvidence> {
    const tokens = query.phraseTokens;
    const result = await this.backend.read({
      name: this.statementName("candidates"),
      text: this.candidatesText,
      values: [
        terms.map(encodeKey),
        topK,
        [...query.enabledIntegrations].map(encodeKey),
        [...query.blockedDomains].map(encodeKey),
        tokens,
        Math.min(this.generation.maxPhraseWords, tokens.length),
      ],
    });
    const lexical: { doc: number; match: KnowledgeLexicalMatch }[] = [];
    const hits: { kind: number; ord: number; doc: number; id: string }[] = [];
    for (const row of result.rows) {
      const doc = Number(row.doc);
      const id = JSON.parse(String(row.id)) as string;
      docs.set(id, doc);
      const kind = Number(row.kind);
      if (kind === 0) {
        const fieldScores: KnowledgeLexicalMatch["fieldScores"] = {};
        FIELD_NAMES.forEach((field, index) => {
          const value = row[`f${index}`];
          if (value !== null && value !== undefined) fieldScores[field] = Number(value);
        });
        lexical.push({ doc, match: { id, score: Number(row.score), fieldScores } });
      } else {
        hits.push({ kind, ord: Number(row.ord), doc, id });
      }
    }
    // Rank order as in memory: score descending, then dense id (code-unit order of ids).
    lexical.sort((left, right) => right.match.score - left.match.score || left.doc - right.doc);
    return { ...PostgresSearcher.phraseHits(tokens, hits), matches: lexical.map((item) => item.match) };
  }

  // Pruned path ----------------------------------------------------------------------------------------------------

  /** The scope lists of this generation, read on first use. */
  private scopeLists(): Promise<ScopeLists> {
    if (!this.scopes) {
      this.scopes = this.backend
        .read({ name: this.statementName("scopes"), text: this.scopesText })
        .then((result) => {
          const lists: ScopeLists = { restricted: [], byIntegration: new Map(), byDomain: new Map() };
          for (const row of result.rows) {
            const docs = (row.docs as unknown[]).map(Number);
            const kind = Number(row.kind);
            if (kind === SCOPE_RESTRICTED) lists.restricted = docs;
            else if (kind === SCOPE_INTEGRATION) lists.byIntegration.set(String(row.key), docs);
            else if (kind === SCOPE_DOMAIN) lists.byDomain.set(String(row.key), docs);
          }
          return lists;
        });
      this.scopes.catch(() => {
        this.scopes = null;
      });
    }
    return this.scopes;
  }

  /**
   * Eligibility by dense id (1 = eligible), as the full path's SQL condition: restricted entries are out unless
   * active and bound to an enabled integration; entries of blocked domains are out. Cached per scope.
   */
  private async eligibility(query: KnowledgeCandidateQuery): Promise<Uint8Array> {
    const enabled = [...query.enabledIntegrations].map(encodeKey).sort();
    const blocked = [...query.blockedDomains].map(encodeKey).sort();
    const key = JSON.stringify([enabled, blocked]);
    const cached = this.masks.get(key);
    if (cached) {
      this.masks.delete(key);
      this.masks.set(key, cached);
      return cached;
    }
    const lists = await this.scopeLists();
    const mask = new Uint8Array(this.generation.entryCount).fill(1);
    for (const doc of lists.restricted) mask[doc] = 0;
    for (const integration of enabled)
      for (const doc of lists.byIntegration.get(integration) ?? []) mask[doc] = 1;
    for (const domain of blocked) for (const doc of lists.byDomain.get(domain) ?? []) mask[doc] = 0;
    this.masks.set(key, mask);
    if (this.masks.size > MASK_CACHE_SIZE) this.masks.delete(this.masks.keys().next().value!);
    return mask;
  }

  /**
   * The exact top K from each term's best postings (threshold algorithm without random access, then exact
   * scores): after reading the first impact blocks of every term, a document never read can score at most the sum
   * of the terms' cuts (the largest impact not read), and a document read at most its impacts read plus the cuts
   * of the terms it was not read in. When that sum is below the K-th best lower bound among eligible documents
   * read, the top K is among the read documents whose upper bound reaches that K-th lower bound: those are scored
   * exactly from their forward rows, adding contributions in the in-memory order. Otherwise deeper blocks are
   * read; when they run out (or too many documents remain), null: the caller takes the full path.
   */
  private async prunedCandidates(
    query: KnowledgeCandidateQuery,
    terms: readonly string[],
    topK: number,
    docs: Map<string, number>,
  ): Promise<KnowledgeCandidateEvidence | null> {
    const tokens = query.phraseTokens;
    const [mask, result] = await Promise.all([
      this.eligibility(query),
      this.backend.read({
        name: this.statementName("heads"),
        text: this.headsText,
        values: [terms.map(encodeKey), tokens, Math.min(this.generation.maxPhraseWords, tokens.length)],
      }),
    ]);
    const hits: { kind: number; ord: number; doc: number; id: string }[] = [];
    const heads: TermHead[] = [];
    // Per document read: the impacts read, by term position.
    const read = new Map<number, Map<number, number>>();
    const addBlock = (head: TermHead, docBytes: unknown, impactBytes: unknown, next: unknown) => {
      const blockDocs = decodeInt32s(docBytes as Uint8Array);
      const impacts = decodeFloat64s(impactBytes as Uint8Array);
      for (let index = 0; index < blockDocs.length; index++) {
        const doc = blockDocs[index]!;
        let impactsRead = read.get(doc);
        if (!impactsRead) {
          impactsRead = new Map();
          read.set(doc, impactsRead);
        }
        impactsRead.set(head.position, impacts[index]!);
      }
      head.blocks++;
      head.read += blockDocs.length;
      head.cut = head.read >= head.documentFrequency ? 0 : Number(next);
    };
    for (const row of result.rows) {
      const kind = Number(row.kind);
      if (kind === 3) {
        const position = Number(row.ord) - 1;
        const head: TermHead = {
          position,
          term: terms[position]!,
          termId: Number(row.term_id),
          documentFrequency: Number(row.document_frequency),
          blocks: 0,
          read: 0,
          cut: 0,
        };
        heads.push(head);
        addBlock(head, row.docs, row.impacts, row.next_impact);
      } else {
        const doc = Number(row.doc);
        if (mask[doc] !== 1) continue;
        const id = JSON.parse(String(row.id)) as string;
        docs.set(id, doc);
        hits.push({ kind, ord: Number(row.ord), doc, id });
      }
    }
    heads.sort((left, right) => left.position - right.position);
    const phrases = PostgresSearcher.phraseHits(tokens, hits);
    if (heads.length === 0) return { ...phrases, matches: [] };
    const deepest = IMPACT_BLOCK_ENDS.length;
    for (;;) {
      const chosen = PostgresSearcher.boundedCandidates(heads, read, mask, topK);
      if (chosen !== null && chosen.length <= PRUNE_MAX_EXACT) {
        const matches = await this.exactMatches(heads, chosen, topK, docs);
        return { ...phrases, matches };
      }
      const deeper = heads.filter(
        (head) => head.cut > 0 && head.blocks < deepest && head.read < head.documentFrequency,
      );
      if (deeper.length === 0) return null;
      const blocks = await this.backend.read({
        name: this.statementName("blocks"),
        text: this.blocksText,
        values: [deeper.map((head) => encodeKey(head.term)), deeper.map((head) => head.blocks)],
      });
      const byTerm = new Map(deeper.map((head) => [encodeKey(head.term), head]));
      let progressed = false;
      for (const row of blocks.rows) {
        const head = byTerm.get(String(row.term));
        if (head && Number(row.block) === head.blocks) {
          addBlock(head, row.docs, row.impacts, row.next_impact);
          progressed = true;
        }
      }
      // Blocks that should exist but did not come back: no progress is possible.
      if (!progressed) return null;
    }
  }

  /**
   * The eligible documents read that may be in the top K, or null when the bounds prove nothing yet. See
   * {@link prunedCandidates}; every comparison keeps {@link BOUND_SLACK} on the safe side.
   */
  private static boundedCandidates(
    heads: readonly TermHead[],
    read: Map<number, Map<number, number>>,
    mask: Uint8Array,
    topK: number,
  ): number[] | null {
    let unseen = 0;
    for (const head of heads) unseen += head.cut;
    const lowers: number[] = [];
    const bounds: { doc: number; upper: number }[] = [];
    for (const [doc, impacts] of read) {
      if (mask[doc] !== 1) continue;
      let lower = 0;
      let cutsRead = 0;
      for (const head of heads) {
        const impact = impacts.get(head.position);
        if (impact === undefined) continue;
        lower += impact;
        cutsRead += head.cut;
      }
      lowers.push(lower);
      bounds.push({ doc, upper: lower + Math.max(0, unseen - cutsRead) });
    }
    if (unseen === 0) return bounds.map((bound) => bound.doc);
    if (lowers.length < topK) return null;
    lowers.sort((left, right) => right - left);
    const threshold = lowers[topK - 1]! * (1 - BOUND_SLACK);
    if (!(threshold > 0) || unseen * (1 + BOUND_SLACK) >= threshold) return null;
    const chosen: number[] = [];
    for (const bound of bounds) if (bound.upper * (1 + BOUND_SLACK) >= threshold) chosen.push(bound.doc);
    return chosen;
  }

  /**
   * Exact scores of `chosen` from their forward rows, added as the in-memory index adds them (sum: field by
   * field, terms in query order; BM25F: terms in query order, field shares likewise), then the best `topK` by
   * score descending and dense id.
   */
  private async exactMatches(
    heads: readonly TermHead[],
    chosen: readonly number[],
    topK: number,
    docs: Map<string, number>,
  ): Promise<KnowledgeLexicalMatch[]> {
    if (chosen.length === 0) return [];
    const result = await this.backend.read({
      name: this.statementName("forward"),
      text: this.forwardText,
      values: [int4Array(chosen)],
    });
    const queryTerms = new Set(heads.map((head) => head.termId));
    const postings = new Map<number, { id: string; values: Map<number, number> }>();
    for (const row of result.rows) {
      const keys = decodeInt32s(row.keys as Uint8Array);
      const contributions = decodeFloat64s(row.contributions as Uint8Array);
      const values = new Map<number, number>();
      for (let index = 0; index < keys.length; index++) {
        const key = keys[index]!;
        if (queryTerms.has(Math.floor(key / FORWARD_KEY_STRIDE))) values.set(key, contributions[index]!);
      }
      postings.set(Number(row.doc), { id: String(row.id), values });
    }
    const scored: {
      doc: number;
      id: string;
      score: number;
      fieldScores: KnowledgeLexicalMatch["fieldScores"];
    }[] = [];
    for (const [doc, posting] of postings) {
      const values = posting.values;
      const parts = new Float64Array(FIELD_COUNT);
      let total = 0;
      let fieldBits = 0;
      if (this.bm25f) {
        for (const head of heads) {
          const key = head.termId * FORWARD_KEY_STRIDE;
          const score = values.get(key + COMBINED_FIELD);
          if (score === undefined) continue;
          total += score;
          for (let field = 0; field < FIELD_COUNT; field++) {
            const share = values.get(key + field);
            if (share !== undefined && share > 0) {
              parts[field]! += share;
              fieldBits |= 1 << field;
            }
          }
        }
      } else {
        for (let field = 0; field < FIELD_COUNT; field++) {
          for (const head of heads) {
            const contribution = values.get(head.termId * FORWARD_KEY_STRIDE + field);
            if (contribution === undefined) continue;
            total += contribution;
            parts[field]! += contribution;
            fieldBits |= 1 << field;
          }
        }
      }
      const fieldScores: KnowledgeLexicalMatch["fieldScores"] = {};
      for (let field = 0; field < FIELD_COUNT; field++)
        if (fieldBits & (1 << field)) fieldScores[FIELD_NAMES[field]!] = parts[field]!;
      scored.push({ doc, id: JSON.parse(posting.id) as string, score: total, fieldScores });
    }
    scored.sort((left, right) => right.score - left.score || left.doc - right.doc);
    const matches: KnowledgeLexicalMatch[] = [];
    for (const item of scored.slice(0, topK)) {
      docs.set(item.id, item.doc);
      matches.push({ id: item.id, score: item.score, fieldScores: item.fieldScores });
    }
    return matches;
  }

  async selectionEntries(
    ids: readonly string[],
    query: KnowledgeCandidateQuery,
  ): Promise<KnowledgeSelectionEntries> {
    const known = candidateDocs.get(query);
    const docs: number[] = [];
    for (const id of ids) {
      const doc = known?.get(id);
      if (doc === undefined) throw new Error(`${JSON.stringify(id)} is not a candidate of this query`);
      docs.push(doc);
    }
    const result = await this.backend.read({
      name: `lexground:${this.backend.schema}:g${this.generation.generation}:entries`,
      text: this.entriesText,
      values: [int4Array(docs)],
    });
    const byDoc = new Map<number, NormalizedKnowledgeEntry>();
    const relationDocs = new Map<string, number[]>();
    for (const row of result.rows) {
      const entry = JSON.parse(String(row.entry)) as NormalizedKnowledgeEntry;
      byDoc.set(Number(row.doc), entry);
      if (Array.isArray(row.relations)) relationDocs.set(entry.id, row.relations.map(Number));
    }
    const byId = new Map<string, NormalizedKnowledgeEntry>();
    for (const entry of byDoc.values()) byId.set(entry.id, entry);
    return {
      entry: (id) => byId.get(id),
      relations: (id) => {
        const related = relationDocs.get(id);
        if (!related) return undefined;
        const relatedIds: string[] = [];
        for (const doc of related) {
          const entry = byDoc.get(doc);
          if (entry) relatedIds.push(entry.id);
        }
        return relatedIds;
      },
    };
  }
}
