/** Which generation serves: as writers read it (on the primary) and as turns read it (where they read). */
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from "./driver.js";
import { INVALID_SCHEMA_NAME, UNDEFINED_TABLE } from "./faults.js";
import type { FrequentStatistics } from "./frequentLists.js";
import type { resolveIndexParameters } from "./indexData.js";
import { quoteIdentifier, SCHEMA_VERSION } from "./sql.js";

/** A serving generation as turns read it. */
export type GenerationRow = {
  generation: number;
  entryCount: number;
  contentKey: string;
  parameters: ReturnType<typeof resolveIndexParameters>;
  maxPhraseWords: number;
  /** The generation's table layout (`GENERATION_LAYOUT`; 1 without the pruning tables). */
  layout: number;
  /** Its frequent lists (`frequentLists.ts`), null when its publication wrote none. */
  frequent: FrequentStatistics | null;
};

/**
 * The serving generation where turns read (`pool`: the replica, when there is one), or null when none serves.
 * A replica that has not replayed the schema's creation yet has nothing published.
 */
export async function readServingGeneration(
  schema: string,
  pool: PostgresPool,
  onReplica: boolean,
): Promise<GenerationRow | null> {
  const s = quoteIdentifier(schema);
  let result: PostgresQueryResult;
  try {
    result = await pool.query({
      name: `lexground:${schema}:serving`,
      // The layout through to_jsonb: a replica may not have replayed the version-2 migration yet.
      text: `select sv.version, g.generation, g.entry_count, g.content_key, g.parameters, g.statistics,
          to_jsonb(g) ->> 'layout' as layout
        from ${s}.schema_version sv
        left join (${s}.serving v join ${s}.generations g on g.generation = v.generation) on true`,
    });
  } catch (error) {
    const code = (error as { code?: unknown })?.code;
    if (onReplica && (code === UNDEFINED_TABLE || code === INVALID_SCHEMA_NAME)) {
      return null;
    }
    throw error;
  }
  const row = result.rows[0];
  if (row && Number(row.version) > SCHEMA_VERSION) {
    throw new Error(
      `the ${schema} schema is at version ${Number(row.version)}, newer than this lexground's ${SCHEMA_VERSION}: upgrade lexground`,
    );
  }
  if (!row || row.generation === null || row.generation === undefined) return null;
  const generation = Number(row.generation);
  const statistics = JSON.parse(String(row.statistics)) as {
    maxPhraseWords: number;
    frequent?: FrequentStatistics;
  };
  const parsed: GenerationRow = {
    generation,
    entryCount: Number(row.entry_count),
    contentKey: String(row.content_key),
    parameters: JSON.parse(String(row.parameters)),
    maxPhraseWords: statistics.maxPhraseWords,
    layout: Number(row.layout ?? 1),
    frequent: validFrequent(statistics.frequent),
  };
  return parsed;
}

/** A generation's frequent-list statistics when they are what a publication writes, else null (none used). */
function validFrequent(value: unknown): FrequentStatistics | null {
  if (typeof value !== "object" || value === null) return null;
  const { minimumDocuments, lists, postings, bytes } = value as Record<string, unknown>;
  const counts = [minimumDocuments, lists, postings, bytes];
  if (!counts.every((count) => typeof count === "number" && Number.isSafeInteger(count) && count >= 0))
    return null;
  return { minimumDocuments, lists, postings, bytes } as FrequentStatistics;
}

/** The serving generation's row (read on `runner`: a client of the primary, or its pool). */
export async function servingRow(
  schema: string,
  runner: PostgresPool | PostgresPoolClient,
): Promise<{
  generation: number;
  entryCount: number;
  contentKey: string;
  parameters: string;
  /** Written by an incremental update (not compacted yet). */
  derived: boolean;
} | null> {
  const s = quoteIdentifier(schema);
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
