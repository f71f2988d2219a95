/**
 * A fleet reading from a real streaming replica: a throwaway primary and a hot standby made from it by
 * `pg_basebackup -R` (test/support/postgresCluster.ts). Publications go to the primary, turns read the replica;
 * a reader serves a generation once the replica has replayed it, and while the replica lags (its replay paused)
 * it serves the previous generation: never a half-published one, never an error. With the primary down, readers
 * keep serving from the replica, and a new reader starts there alone.
 *
 * Skipped with a notice without PostgreSQL; a failure under LEXGROUND_REQUIRE_POSTGRES=1.
 */
import { expect, it } from "vitest";
import { KnowledgeGroundingEngine } from "../../src/index.js";
import type { PostgresBackendOptions, PostgresPool } from "../../src/postgres/index.js";
import { eventually, instrumentedPool } from "../support/postgresCluster.js";
import { startPostgresSuite } from "../support/postgresSuite.js";
import { QUERY, sources } from "./fixtures.js";

const suite = await startPostgresSuite("PostgreSQL read replica tests", { replica: true });
const { cluster: primary, replica, describePostgres } = suite;

/** A pool on `url` (the primary's or the replica's), ended after the tests. */
function newPool(url: string): PostgresPool {
  return suite.newPool({ connectionString: url });
}

/** A backend writing to the primary and reading from the replica. */
function splitBackend(schema: string, options: Partial<PostgresBackendOptions> = {}) {
  return suite.backend({
    readConnectionString: replica!.url,
    schema,
    connectionTimeoutMs: 1_000,
    ...options,
  });
}

/** The version cited in a turn's block (`[KB:payouts.instant@<version>]`), or the failure. */
async function servedVersion(engine: KnowledgeGroundingEngine, query = QUERY): Promise<string> {
  const outcome = await engine.ground(query);
  if (outcome.metadata.failureReason !== undefined) return `failed: ${outcome.metadata.failureReason}`;
  return /\[KB:payouts\.instant@([^\]]+)\]/.exec(outcome.ephemeralContext?.content ?? "")?.[1] ?? "none";
}

function reader(schema: string, options: Partial<PostgresBackendOptions> = {}) {
  return new KnowledgeGroundingEngine({
    enabled: true,
    sources: [],
    backend: splitBackend(schema, options),
    timeoutMs: 10_000,
    logger: null,
  });
}

describePostgres("a fleet reading from a streaming replica", () => {
  it("the replica is a hot standby of the primary (read-only, in recovery)", async () => {
    const result = await newPool(replica!.url).query({ text: "select pg_is_in_recovery() as standby" });
    expect(result.rows[0]!.standby).toBe(true);
  });

  it("publications go to the primary, turns read the replica, and a reader serves a generation once the replica has replayed it", async () => {
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: splitBackend("streamed"),
    });
    expect((await writer.rebuild()).live).toBe(true);
    await replica!.caughtUp();
    const engine = reader("streamed");
    expect(await servedVersion(engine)).toBe("1");
    // Replay paused: the primary serves generation 2, the replica still generation 1, and so does the reader.
    await replica!.pauseReplay();
    try {
      expect((await writer.rebuild(sources("2"))).live).toBe(true);
      const onPrimary = await newPool(primary!.url).query({
        text: "select g.content_key from streamed.serving v join streamed.generations g using (generation)",
      });
      expect(onPrimary.rows).toHaveLength(1);
      for (let turn = 0; turn < 3; turn++) expect(await servedVersion(engine)).toBe("1");
    } finally {
      await replica!.resumeReplay();
    }
    await replica!.caughtUp();
    expect(await servedVersion(engine)).toBe("2");
    expect(engine.getStatus().backend).toMatchObject({ degraded: false, entryCount: 2 });
  }, 60_000);

  it("a lagging replica never shows a half-published generation: the reader serves the previous one, without errors", async () => {
    const write = instrumentedPool(newPool(primary!.url));
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: splitBackend("lagging", { pool: write.pool }),
    });
    await writer.ready();
    await replica!.caughtUp();
    const engine = reader("lagging");
    expect(await servedVersion(engine)).toBe("1");
    // Hold the publication of generation 2 just before it commits: its tables are created, loaded and indexed, and
    // the switch is written, all in the publication's one transaction.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reached!: () => void;
    const atSwitch = new Promise<void>((resolve) => {
      reached = resolve;
    });
    write.state.hold = (text) => {
      if (text !== "commit") return null;
      write.state.hold = null;
      reached();
      return held;
    };
    const publishing = writer.rebuild(sources("2", "Instant payouts, second edition"));
    await atSwitch;
    // The replica replays everything written so far: nothing of the new generation is visible before its commit.
    await replica!.caughtUp();
    const tables = await newPool(replica!.url).query({
      text: "select count(*)::int as count from information_schema.tables where table_schema = 'lagging' and table_name ~ '^g[0-9]+_'",
    });
    const generationOne = await newPool(replica!.url).query({
      text: "select count(*)::int as count from information_schema.tables where table_schema = 'lagging' and table_name ~ '^g1_'",
    });
    expect(tables.rows[0]!.count).toBe(generationOne.rows[0]!.count);
    const states = await newPool(replica!.url).query({
      text: "select state from lagging.generations order by generation",
    });
    expect(states.rows.map((row) => row.state)).toEqual(["ready"]);
    for (let turn = 0; turn < 3; turn++) expect(await servedVersion(engine)).toBe("1");
    // Now the replica lags behind the switch itself.
    await replica!.pauseReplay();
    try {
      release();
      expect((await publishing).live).toBe(true);
      for (let turn = 0; turn < 3; turn++) expect(await servedVersion(engine)).toBe("1");
    } finally {
      await replica!.resumeReplay();
    }
    const served = await eventually(
      () => servedVersion(engine),
      (version) => version === "2",
    );
    expect(served).toBe("2");
  }, 60_000);

  it("a reader whose cached generation was dropped meanwhile serves the current one on its next turn, without an error", async () => {
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: splitBackend("stale", { keepGenerations: 1 }),
    });
    await writer.ready();
    await replica!.caughtUp();
    // A reader that checks the serving generation rarely: its cache outlives generation 1.
    const engine = reader("stale", { generationCheckMs: 60_000 });
    expect(await servedVersion(engine)).toBe("1");
    expect((await writer.rebuild(sources("2"))).live).toBe(true);
    await replica!.caughtUp();
    // A turn that reads the dropped generation's tables (a term its reader has not fetched) runs again on the
    // serving one. (A turn answered wholly from what the reader keeps of generation 1 reads nothing, and serves
    // generation 1's exact answer until the reader's next generation check, as any turn within generationCheckMs.)
    expect(await servedVersion(engine, { query: "instant payouts schedule" })).toBe("2");
    expect(engine.getStatus().backend).toMatchObject({ degraded: false });
  }, 60_000);

  it("with the primary down, readers keep serving from the replica, and a new reader starts there alone", async () => {
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: splitBackend("primary_down"),
      logger: null,
    });
    await writer.ready();
    await replica!.caughtUp();
    const running = reader("primary_down");
    expect(await servedVersion(running)).toBe("1");
    await primary!.stop();
    try {
      expect(await servedVersion(running)).toBe("1");
      const fresh = reader("primary_down");
      expect(await servedVersion(fresh)).toBe("1");
      expect(fresh.getStatus()).toMatchObject({ ready: true, backend: { degraded: false } });
      // The writer cannot publish meanwhile: its rebuild fails, and turns still serve generation 1.
      const failed = await writer.rebuild(sources("2"));
      expect(failed).toMatchObject({ live: false, reason: "build-failed" });
      expect(await servedVersion(running)).toBe("1");
    } finally {
      await primary!.start();
    }
    expect((await writer.rebuild(sources("2"))).live).toBe(true);
    await replica!.caughtUp();
    expect(await servedVersion(running)).toBe("2");
  }, 60_000);

  it("an incremental update written on the primary reaches readers on the replica once replayed, atomically", async () => {
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: splitBackend("updated", { compactionDelayMs: 3_600_000 }),
    });
    await writer.ready();
    await replica!.caughtUp();
    const engine = reader("updated");
    expect(await servedVersion(engine)).toBe("1");
    await replica!.pauseReplay();
    try {
      const updated = await writer.update({
        remove: ["payouts.schedule"],
        upsert: [
          {
            id: "payouts.instant",
            title: "Instant payouts",
            summary: "Send a payout to a debit card within minutes, now on weekends too.",
            domain: "payouts",
            integrations: [],
          },
        ],
      });
      expect(updated.live).toBe(true);
      for (let turn = 0; turn < 3; turn++) {
        const outcome = await engine.ground(QUERY);
        expect(outcome.ephemeralContext?.content).not.toContain("weekends");
        expect(engine.getStatus().entryCount).toBe(2);
      }
    } finally {
      await replica!.resumeReplay();
    }
    await replica!.caughtUp();
    const outcome = await engine.ground(QUERY);
    expect(outcome.ephemeralContext?.content).toContain("weekends");
    expect(engine.getStatus()).toMatchObject({ entryCount: 1, backend: { degraded: false } });
  }, 60_000);
});
