/**
 * Incremental updates on the PostgreSQL backend (`engine.upsert/remove/update` with a PostgreSQL-backed engine):
 * after random sequences of upserts and removals, the generation the updates wrote holds exactly the tables a full
 * publication of the final registry writes (entries, postings with every contribution bit for bit, phrases,
 * scopes, statistics), and turns give exactly the in-memory engine's outcomes on a full build of that registry.
 * Updates are atomic for readers (on the primary and on a streaming replica), refused updates change nothing,
 * and a failed write leaves the previous generation serving.
 *
 * Runs against throwaway clusters (see test/support/postgresCluster.ts). Skipped with a notice without
 * PostgreSQL; a failure under LEXGROUND_REQUIRE_POSTGRES=1.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import {
  type KnowledgeEntryInput,
  type KnowledgeGroundingConfig,
  KnowledgeGroundingEngine,
  type KnowledgeGroundingOutcome,
  type KnowledgeSource,
} from "../../src/index.js";
import type { PostgresBackend, PostgresBackendOptions, PostgresPool } from "../../src/postgres/index.js";
import { decodeWireList } from "../../src/postgres/wireLists.js";
import { registryArbitrary, requestArbitrary, updateOperationsArbitrary } from "../property/arbitraries.js";
import { propertyRuns, propertySeed } from "../property/seed.js";
import { instrumentedPool } from "../support/postgresCluster.js";
import { startPostgresSuite } from "../support/postgresSuite.js";

const suite = await startPostgresSuite("PostgreSQL incremental update tests");
const { describePostgres } = suite;

let inspector: PostgresPool | null = null;
function inspect(): PostgresPool {
  if (!inspector) {
    inspector = suite.newPool({ max: 2 });
  }
  return inspector;
}

function backend(schema: string, options: Partial<PostgresBackendOptions> = {}): PostgresBackend {
  return suite.backend({ schema, compactionDelayMs: 3_600_000, ...options });
}

/** A serving generation's tables and statistics, as comparable rows (floats in their exact shortest text). */
async function generationContent(schema: string) {
  const pool = inspect();
  const serving = await pool.query({
    text: `select g.generation, g.entry_count, g.parameters, g.statistics
      from ${schema}.serving v join ${schema}.generations g using (generation)`,
  });
  const row = serving.rows[0]!;
  const generation = Number(row.generation);
  const statistics = JSON.parse(String(row.statistics)) as Record<string, unknown>;
  const table = (name: string) => `${schema}.g${generation}_${name}`;
  const rows = async (text: string) => (await pool.query({ text })).rows;
  return {
    generation,
    summary: {
      entryCount: Number(row.entry_count),
      parameters: String(row.parameters),
      maxPhraseWords: statistics.maxPhraseWords,
      documentCount: statistics.documentCount,
      averageLengths: statistics.averageLengths,
    },
    derived: statistics.derivedFrom !== undefined,
    entries: await rows(
      `select doc, id, entry, relations::text, field_lengths::text from ${table("entries")} order by doc`,
    ),
    postings: (
      await rows(
        `select term, field, document_frequency, docs::text, frequencies::text,
          (select string_agg(encode(float8send(c), 'hex'), ',' order by o)
            from unnest(contributions) with ordinality as u(c, o)) as array_bits,
          coded_list
        from ${table("postings")} order by term collate "C", field`,
      )
    ).map(({ array_bits, coded_list, ...row }) => ({
      ...row,
      bits: contributionBits(array_bits, coded_list, String(row.docs)),
    })),
    /** How the postings hold their contributions: `array` (float8[]), `coded` (`wireLists.ts`), or both. */
    contributionForms: [
      ...new Set(
        (
          await rows(
            `select distinct (contributions is not null)::int + 2 * (coded_list is not null)::int as form
            from ${table("postings")}`,
          )
        ).map((row) => ["none", "array", "coded", "both"][Number(row.form)]),
      ),
    ].sort(),
    phrases: await rows(
      `select key, exact::text, alias::text from ${table("phrases")} order by key collate "C"`,
    ),
    scopes: await rows(`select kind, key, docs::text from ${table("scopes")} order by kind, key collate "C"`),
  };
}

/**
 * A posting row's contributions as comparable text (each float64's big-endian bits in hex, comma-separated), from
 * whichever form it holds: the coded list (publications; its documents checked against the row's `docs`, as text)
 * or the `float8[]` array (updates).
 */
function contributionBits(arrayBits: unknown, coded: unknown, docs: string): string | null {
  if (!(coded instanceof Uint8Array)) return typeof arrayBits === "string" ? arrayBits : null;
  const list = decodeWireList(coded, 0x7fff_ffff);
  expect(`{${list.docs.join(",")}}`).toBe(docs);
  const view = new DataView(new ArrayBuffer(8));
  return Array.from(list.docs, (_, position) => {
    view.setFloat64(0, list.contributions[list.codes === undefined ? position : list.codes[position]!]!);
    return view.getBigUint64(0).toString(16).padStart(16, "0");
  }).join(",");
}

const operationsArbitrary = updateOperationsArbitrary(6);
const configArbitrary: fc.Arbitrary<Partial<KnowledgeGroundingConfig>> = fc.constantFrom(
  {},
  { retrieval: { k1: 0.9, b: 0.3 } },
  // An analyzer, and a field that is not scored.
  { retrieval: { analyzer: "english" as const, fieldWeights: { aliases: 0, body: 2 } } },
  // BM25F: updates publish the final registry in full.
  { preset: "recommended" as const },
);

/** What a turn's outcome says, without its timing. */
function comparable(outcome: KnowledgeGroundingOutcome) {
  const { durationMs: _, ...metadata } = outcome.metadata;
  const retrieval = outcome.retrieval ? { ...outcome.retrieval, durationMs: 0 } : null;
  return { context: outcome.ephemeralContext, metadata, retrieval };
}

let schemas = 0;
/** Turns are compared, not timed: a loaded machine can pause one past the default 800 ms, and it would fail open. */
const TURN_TIMEOUT_MS = 60_000;

describePostgres("incremental updates on the PostgreSQL backend", () => {
  it("after random upserts and removals, the updated generation equals a full publication of the final registry, and turns equal the in-memory engine's on a full build", async () => {
    const seed = propertySeed("postgres-updates");
    await fc.assert(
      fc.asyncProperty(
        registryArbitrary,
        operationsArbitrary,
        configArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 4 }),
        async (registry, operations, config, requests) => {
          const run = ++schemas;
          const sources: KnowledgeSource[] = [{ id: "source", version: "v1", entries: registry }];
          const engine = new KnowledgeGroundingEngine({
            enabled: true,
            sources,
            backend: backend(`updated_${run}`),
            logger: null,
            timeoutMs: TURN_TIMEOUT_MS,
            ...config,
          });
          await engine.ready();
          if (!engine.getStatus().ready) return; // an invalid start registry (relations): nothing to update
          // The expected registry: entries by id, a replaced entry keeps its place, new ones go last.
          const expected = new Map<string, KnowledgeEntryInput>(registry.map((entry) => [entry.id, entry]));
          let changed = false;
          for (const operation of operations) {
            const result =
              operation.kind === "upsert"
                ? await engine.upsert(operation.entries)
                : await engine.remove(operation.ids);
            if (!result.live) {
              expect(result.reason).toBe("validation-failed");
              continue;
            }
            if (operation.kind === "upsert") {
              for (const entry of operation.entries) expected.set(entry.id, entry);
              changed = true;
            } else {
              for (const id of operation.ids) changed = expected.delete(id) || changed;
            }
          }
          const finalSources: KnowledgeSource[] = [
            { id: "source", version: "v1", entries: [...expected.values()] },
          ];
          const full = new KnowledgeGroundingEngine({
            enabled: true,
            sources: finalSources,
            backend: backend(`full_${run}`),
            logger: null,
            timeoutMs: TURN_TIMEOUT_MS,
            ...config,
          });
          await full.ready();
          const [updated, published] = await Promise.all([
            generationContent(`updated_${run}`),
            generationContent(`full_${run}`),
          ]);
          // Field-by-field scoring: the last update wrote its generation from the previous one.
          if (changed && config.preset !== "recommended") expect(updated.derived).toBe(true);
          expect(published.derived).toBe(false);
          // A publication writes each list's contributions once, coded (what turns read); an update computes
          // them in SQL as an array. Either holds the same bits (compared below).
          if (published.postings.length > 0) expect(published.contributionForms).toEqual(["coded"]);
          if (updated.derived && updated.postings.length > 0)
            expect(updated.contributionForms).toEqual(["array"]);
          expect(updated.summary).toEqual(published.summary);
          expect(updated.entries).toEqual(published.entries);
          expect(updated.postings).toEqual(published.postings);
          expect(updated.phrases).toEqual(published.phrases);
          expect(updated.scopes).toEqual(published.scopes);
          const memory = new KnowledgeGroundingEngine({
            enabled: true,
            sources: finalSources,
            logger: null,
            timeoutMs: TURN_TIMEOUT_MS,
            ...config,
          });
          await memory.ready();
          for (const request of requests) {
            const input = {
              query: request.query,
              recentTurns: request.recentTurns,
              scope: { enabledIntegrations: request.enabledIntegrations },
            };
            expect(comparable(await engine.ground(input))).toEqual(comparable(await memory.ground(input)));
          }
        },
      ),
      { seed, numRuns: propertyRuns(8), endOnFailure: true },
    );
  }, 240_000);

  it("a refused update changes nothing; a write that fails half-way leaves the previous generation serving and the registry as it was", async () => {
    const write = instrumentedPool(suite.newPool());
    const pgBackend = backend("update_faults", { pool: write.pool });
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [
        {
          id: "help",
          version: "1",
          entries: [
            {
              id: "payouts.instant",
              title: "Instant payouts",
              summary: "Send a payout within minutes.",
              domain: "payouts",
              integrations: [],
            },
            {
              id: "payouts.schedule",
              title: "Payout schedule",
              summary: "Payouts run daily.",
              domain: "payouts",
              integrations: [],
            },
          ],
        },
      ],
      backend: pgBackend,
      logger: null,
    });
    await engine.ready();
    const first = pgBackend.status().generation;
    const refused = await engine.upsert([
      { id: "", title: "no id", summary: "", domain: "payouts", integrations: [] },
    ]);
    expect(refused).toMatchObject({ live: false, reason: "validation-failed" });
    expect(pgBackend.status().generation).toBe(first);
    write.state.fail = (text) =>
      text.includes("lexground_added a on") ? new Error("disk full (injected)") : null;
    const failed = await engine.upsert([
      {
        id: "payouts.refunds",
        title: "Refunds",
        summary: "Refund a payout.",
        domain: "payouts",
        integrations: [],
      },
    ]);
    write.state.fail = null;
    expect(failed).toMatchObject({ live: false, reason: "build-failed" });
    expect(engine.getStatus().lastError).toMatch(/disk full/);
    expect(pgBackend.status().generation).toBe(first);
    expect((await engine.ground({ query: "refund a payout" })).metadata.selectedIds).not.toContain(
      "payouts.refunds",
    );
    const tables = await inspect().query({
      text: "select table_name from information_schema.tables where table_schema = 'update_faults' and table_name ~ '^g[0-9]+_' order by 1",
    });
    expect(new Set(tables.rows.map((row) => String(row.table_name).split("_")[0]))).toEqual(
      new Set([`g${first}`]),
    );
    // The next update applies to the registry as it was (the failed change is not half-applied), then removes.
    expect((await engine.remove(["payouts.schedule"])).live).toBe(true);
    const after = await generationContent("update_faults");
    expect(after.derived).toBe(true);
    expect(after.entries.map((row) => row.id)).toEqual([JSON.stringify("payouts.instant")]);
  }, 60_000);

  it("a reader (an engine that published nothing) refuses updates: index-not-ready, nothing written", async () => {
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [
        {
          id: "help",
          version: "1",
          entries: [{ id: "a.b", title: "Alpha", summary: "First.", domain: "d", integrations: [] }],
        },
      ],
      backend: backend("reader_refuses"),
      logger: null,
    });
    await writer.ready();
    const readerBackend = backend("reader_refuses");
    const reader = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [],
      backend: readerBackend,
      logger: null,
    });
    await reader.ready();
    const generation = (await readerBackend.current())?.generation;
    const refused = await reader.remove(["a.b"]);
    expect(refused).toMatchObject({ live: false, reason: "index-not-ready" });
    expect((await readerBackend.current())?.generation).toBe(generation);
  }, 60_000);

  it("a compaction publishes the updated registry again as a fresh generation, with the same content and turns", async () => {
    const pgBackend = backend("compaction");
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [
        {
          id: "help",
          version: "1",
          entries: [
            {
              id: "payouts.instant",
              title: "Instant payouts",
              summary: "Send a payout within minutes.",
              domain: "payouts",
              integrations: [],
            },
          ],
        },
      ],
      backend: pgBackend,
      logger: null,
    });
    await engine.ready();
    expect(
      (
        await engine.upsert([
          {
            id: "payouts.refunds",
            title: "Refunds",
            summary: "Refund a payout.",
            domain: "payouts",
            integrations: [],
          },
        ])
      ).live,
    ).toBe(true);
    const updated = await generationContent("compaction");
    const before = comparable(await engine.ground({ query: "refund a payout" }));
    expect(before.metadata.selectedIds).toContain("payouts.refunds");
    await pgBackend.compacted();
    const compacted = await generationContent("compaction");
    expect(updated.derived).toBe(true);
    expect(compacted.derived).toBe(false);
    expect(compacted.generation).toBeGreaterThan(updated.generation);
    // The same content; only the form of the contributions differs (coded, against the update's array).
    expect({ ...compacted, generation: 0, derived: false, contributionForms: [] }).toEqual({
      ...updated,
      generation: 0,
      derived: false,
      contributionForms: [],
    });
    expect(compacted.contributionForms).toEqual(["coded"]);
    expect(comparable(await engine.ground({ query: "refund a payout" }))).toEqual(before);
  }, 60_000);

  it("updates a registry large enough that field × entry count exceeds a smallint (9,000 entries)", async () => {
    const entries = Array.from({ length: 9_000 }, (_, index) => ({
      id: `entry.${index.toString().padStart(5, "0")}`,
      title: `Entry ${index % 97}`,
      summary: `word${index % 13} common`,
      keywords: [`k${index % 7}`],
      // Body is field 4: 4 × 8,999 entries > 32,767.
      body: `body${index % 5} text`,
      domain: "bulk",
      integrations: [],
    }));
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "bulk", version: "1", entries }],
      backend: backend("bulk_updated"),
      logger: null,
    });
    await engine.ready();
    const change = {
      upsert: [{ ...entries[4_500]!, summary: "word3 common rare" }],
      remove: [entries[10]!.id],
    };
    const updated = await engine.update(change);
    expect(updated.live, engine.getStatus().lastError ?? "").toBe(true);
    const final = entries
      .filter((_, index) => index !== 10)
      .map((entry, index) => (index === 4_499 ? change.upsert[0]! : entry));
    const full = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "bulk", version: "1", entries: final }],
      backend: backend("bulk_full"),
      logger: null,
    });
    await full.ready();
    const [changed, published] = await Promise.all([
      generationContent("bulk_updated"),
      generationContent("bulk_full"),
    ]);
    expect(changed.derived).toBe(true);
    expect(changed.summary).toEqual(published.summary);
    expect(changed.postings).toEqual(published.postings);
    expect(changed.entries).toEqual(published.entries);
  }, 180_000);
});
