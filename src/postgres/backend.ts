/**
 * The PostgreSQL index backend: one index shared by every process. A writer publishes a source set as a new
 * generation (its own tables, loaded unindexed, indexed, then switched to in one transaction); readers cache the
 * serving generation and check it at most every `generationCheckMs`, so a new one is picked up without a restart;
 * the previous generation is kept (by default), so a turn that started on it finishes. A turn fetches the posting
 * lists of its terms that its posting cache does not hold with its phrase hits (one binary COPY), ranks them in the
 * app with the in-memory scorer, names its top K, then reads the selected entries with their relations' targets.
 * The backend's fields, pools and schema are in `backendState.ts`; this class adds
 * reading, publishing and updates.
 */
import type { KnowledgeIndexBuildOptions } from "../knowledge/knowledgeIndex.js";
import type {
  KnowledgeBackendIndex,
  KnowledgeBackendPublishResult,
  KnowledgeBackendUpdateOptions,
  KnowledgeIndexBackend,
} from "../knowledge/searchBackend.js";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { PostgresBackendState } from "./backendState.js";
import type { CompactionRequest } from "./compaction.js";
import { type CopyTupleHandler, copyOutOfPool } from "./copyOut.js";
import type { PostgresPoolClient, PostgresQueryConfig, PostgresQueryResult } from "./driver.js";
import { GenerationFallbackSearcher, UNDEFINED_TABLE } from "./faults.js";
import { computeGenerationData, resolveIndexParameters } from "./indexData.js";
import type { PostgresBackendOptions } from "./options.js";
import { retireOldGenerations, writeGeneration } from "./publication.js";
import { PublicationPhases } from "./publicationPhases.js";
import { LOCK_NAMESPACE } from "./schema.js";
import { PostgresSearcher } from "./searcher.js";
import { readServingGeneration, servingRow } from "./serving.js";
import { generationTables } from "./sql.js";
import { writeDerivedGeneration } from "./updates.js";

/**
 * Creates the backend (no I/O yet: the driver loads and the schema is created or migrated on first use). Give it to
 * the engine as `backend`. See {@link PostgresBackendOptions}.
 */
export function createPostgresBackend(options: PostgresBackendOptions): PostgresBackend {
  return new PostgresBackend(options);
}

/** The PostgreSQL implementation of {@link KnowledgeIndexBackend}. Create it with {@link createPostgresBackend}. */
export class PostgresBackend extends PostgresBackendState implements KnowledgeIndexBackend {
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
    const parsed = await readServingGeneration(this.schema, await this.replica(), onReplica);
    if (!parsed) {
      this.serving = null;
      return null;
    }
    const generation = parsed.generation;
    const previous = this.serving;
    if (previous && previous.row.generation === generation) {
      previous.checkedAt = Date.now();
      return previous.index;
    }
    const searcher = new PostgresSearcher(this, parsed, generationTables(this.schema, generation));
    const index: KnowledgeBackendIndex = {
      generation,
      entryCount: parsed.entryCount,
      options: parsed.parameters,
      searcher: new GenerationFallbackSearcher(this, generation, searcher),
      entriesById: (ids) => searcher.entriesById(ids),
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

  /** Runs a turn's binary COPY (`copyOut.ts`) on the read pool, as {@link read} runs its statements. */
  async readCopy(query: string, onTuple: CopyTupleHandler): Promise<void> {
    return this.tracked(async () => {
      try {
        await copyOutOfPool(await this.replica(), query, onTuple);
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
      const before = await servingRow(this.schema, await this.primary());
      // An updated generation with this content is published again: that is its compaction.
      if (before && before.contentKey === options.contentKey && !before.derived)
        return { generation: before.generation, entryCount: before.entryCount, reused: true };
      const phases = new PublicationPhases(this.onPublicationPhase);
      this.publicationPhases = phases.phases;
      phases.start("compute");
      const data = computeGenerationData(entries, options.indexOptions);
      phases.end();
      return this.whilePublishing(async (client) => {
        // Another process may have published the same content while this one waited for the lock.
        const latest = await servingRow(this.schema, client);
        if (latest && latest.contentKey === options.contentKey && !latest.derived)
          return { generation: latest.generation, entryCount: latest.entryCount, reused: true };
        const generation = await writeGeneration(
          this.schema,
          client,
          data,
          options.contentKey,
          phases,
          this.frequentListDocuments,
        );
        await retireOldGenerations(this.schema, client, this.keepGenerations);
        this.serving = null;
        return { generation, entryCount: data.documentCount, reused: false };
      });
    });
    // Status reports the generation now serving (readers learn it within generationCheckMs).
    await this.current().catch(() => {});
    return published;
  }

  /**
   * Runs `write` on a connection of the primary holding the publishing lock (one writer at a time, across
   * processes), without a statement timeout. The connection is destroyed afterwards: its session holds the lock.
   */
  private async whilePublishing<T>(write: (client: PostgresPoolClient) => Promise<T>): Promise<T> {
    const pool = await this.primary();
    const client = await pool.connect();
    try {
      await client.query({ text: "set statement_timeout = 0" });
      await client.query({ text: "select pg_advisory_lock($1, 2)", values: [LOCK_NAMESPACE] });
      return await write(client);
    } finally {
      client.release(true);
    }
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
    options: KnowledgeBackendUpdateOptions,
  ): Promise<KnowledgeBackendPublishResult> {
    const published = await this.tracked(async () => {
      await this.ensureSchema();
      const parameters = resolveIndexParameters(options.indexOptions);
      return this.whilePublishing(async (client) => {
        const base = await servingRow(this.schema, client);
        if (base && base.contentKey === options.contentKey)
          return { generation: base.generation, entryCount: base.entryCount, reused: true };
        const derivable =
          base !== null &&
          base.contentKey === options.baseContentKey &&
          parameters.scoring === "sum" &&
          base.parameters === JSON.stringify(parameters);
        const generation = derivable
          ? await writeDerivedGeneration(
              this.schema,
              this.batchBytes,
              client,
              base.generation,
              entries,
              options,
              parameters,
            )
          : await writeGeneration(
              this.schema,
              client,
              computeGenerationData(entries, options.indexOptions),
              options.contentKey,
              undefined,
              this.frequentListDocuments,
            );
        await retireOldGenerations(this.schema, client, this.keepGenerations);
        this.serving = null;
        return { generation, entryCount: entries.length, reused: false };
      });
    });
    if (!published.reused) this.compactions.schedule(entries, options.indexOptions, options.contentKey);
    await this.current().catch(() => {});
    return published;
  }

  /** Resolves when no compaction is pending or running (for tests and benchmarks); never rejects. */
  async compacted(): Promise<void> {
    await this.compactions.compacted();
  }

  /** Publishes an updated registry in full, unless another update or publication replaced it meanwhile. */
  protected override async compact({ entries, indexOptions, contentKey }: CompactionRequest): Promise<void> {
    const serving = await this.primary()
      .then((pool) => servingRow(this.schema, pool))
      .catch(() => null);
    if (!serving || serving.contentKey !== contentKey || !serving.derived) return;
    await this.publish(entries, { indexOptions, contentKey }).catch(() => {});
  }
}
