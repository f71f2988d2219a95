/**
 * A fleet on one PostgreSQL index, and its faults, against a real server (a throwaway cluster this file starts,
 * stops and restarts): one writer publishes generations atomically, readers pick them up without a restart and
 * read through their own (replica) pool; the database down at start or mid-turn, slow statements, an exhausted
 * pool, a generation dropped during a turn and a failed build all make turns fail open within their timeout with
 * a clear failureReason, the status degraded, the previous generation serving, and recovery without a restart.
 *
 * Skipped with a notice without PostgreSQL; a failure under LEXGROUND_REQUIRE_POSTGRES=1.
 */
import { expect, it } from "vitest";
import { KnowledgeGroundingEngine } from "../../src/index.js";
import type { PostgresBackend } from "../../src/postgres/index.js";
import { eventually, instrumentedPool } from "../support/postgresCluster.js";
import { startPostgresSuite } from "../support/postgresSuite.js";
import { QUERY, sources } from "./fixtures.js";

const { cluster, describePostgres, newPool, backend } = await startPostgresSuite(
  "PostgreSQL fleet and fault tests",
);

describePostgres("a fleet on one PostgreSQL index", () => {
  it("one writer publishes generations atomically; readers pick them up without a restart", async () => {
    const writerBackend = backend({ schema: "fleet" });
    const readerBackend = backend({ schema: "fleet" });
    const reader = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [],
      backend: readerBackend,
      logger: null,
    });
    expect((await reader.ground(QUERY)).metadata.failureReason).toBe("index-not-ready");
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: writerBackend,
    });
    await writer.ready();
    const first = writer.getStatus().backend!.generation!;
    const grounded = await reader.ground(QUERY);
    expect(grounded.metadata.selectedIds[0]).toBe("payouts.instant");
    expect(grounded.ephemeralContext?.content).toContain("[KB:payouts.instant@1]");
    // A second writer with the same content reuses the published generation.
    const again = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: backend({ schema: "fleet" }),
    });
    await again.ready();
    expect(again.getStatus()).toMatchObject({
      backend: { generation: first },
      notes: [expect.stringContaining("reused")],
    });
    // A rebuild publishes the next generation; the reader sees it on its next turn.
    const rebuilt = await writer.rebuild(sources("2"));
    expect(rebuilt.live).toBe(true);
    const next = await reader.ground(QUERY);
    expect(next.ephemeralContext?.content).toContain("[KB:payouts.instant@2]");
    expect(reader.getStatus()).toMatchObject({
      ready: true,
      entryCount: 2,
      backend: { generation: first + 1, degraded: false },
    });
  });

  it("turns read through the read pool (a replica), publishing writes through the primary", async () => {
    const primary = instrumentedPool(newPool());
    const replica = instrumentedPool(newPool());
    const split = backend({ schema: "replica", pool: primary.pool, readPool: replica.pool });
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: sources("1"), backend: split });
    await engine.ready();
    const writes = primary.seen.length;
    replica.seen.length = 0;
    expect((await engine.ground(QUERY)).metadata.selectedIds[0]).toBe("payouts.instant");
    expect(replica.seen.some((text) => /_postings\b/.test(text))).toBe(true);
    expect(primary.seen.length).toBe(writes);
    expect(primary.seen.some((text) => text.startsWith("insert into"))).toBe(true);
  });
  it("a reader keeps its generation's lists, phrase keys, ids and selected entries: a repeated turn reads nothing", async () => {
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: backend({ schema: "kept" }),
      logger: null,
    });
    await writer.ready();
    const read = instrumentedPool(newPool());
    const reader = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [],
      backend: backend({ schema: "kept", pool: newPool(), readPool: read.pool }),
      timeoutMs: 5_000,
      logger: null,
    });
    await reader.ready();
    const first = await reader.ground(QUERY);
    expect(first.metadata.selectedIds).toEqual(["payouts.instant", "payouts.schedule"]);
    read.seen.length = 0;
    const again = await reader.ground(QUERY);
    expect(again.ephemeralContext).toEqual(first.ephemeralContext);
    expect({ ...again.metadata, durationMs: 0 }).toEqual({ ...first.metadata, durationMs: 0 });
    // The posting lists, the phrase keys' hits, the ids and the entries (with the relation's target) were kept:
    // no statement.
    expect(read.seen.filter((text) => !text.includes("schema_version"))).toEqual([]);
    // Another query over the same terms with one more phrase key reads only that key's hits.
    const reordered = await reader.ground({ query: "payouts instant" });
    expect(reordered.metadata.failureReason).toBeUndefined();
    const turnStatements = read.seen.filter((text) => !text.includes("schema_version"));
    expect(turnStatements).toHaveLength(1);
    expect(turnStatements[0]).toMatch(/phrase_keys/);
    // A new generation is read afresh (its own searcher), never from the previous one's kept entries.
    await writer.rebuild(sources("2", "Instant payouts renamed"));
    const renamed = await eventually(
      () => reader.ground(QUERY),
      (outcome) => outcome.ephemeralContext?.content.includes("[KB:payouts.instant@2]") === true,
    );
    expect(renamed.ephemeralContext?.content).toContain("Instant payouts renamed");
  });
  it("a reader's posting cache keeps lists coded: a list too large for the cache as fetched is kept and not fetched again", async () => {
    // 2,000 entries with the same body: the term's body list has 2,000 postings of one contribution, 24,000 bytes
    // as fetched (12 per posting), about 10,000 coded (the documents, a byte per posting and one value).
    const entries = Array.from({ length: 2_000 }, (_, index) => ({
      id: `note.${index}`,
      title: `Note ${index}`,
      summary: "A note.",
      body: "quartz lantern",
      domain: "notes",
      integrations: [],
    }));
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "notes", version: "1", entries }],
      backend: backend({ schema: "coded" }),
      logger: null,
    });
    await writer.ready();
    const read = instrumentedPool(newPool());
    const readerBackend = backend({
      schema: "coded",
      pool: newPool(),
      readPool: read.pool,
      postingCacheBytes: 16_000,
    });
    const reader = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [],
      backend: readerBackend,
      timeoutMs: 10_000,
      logger: null,
    });
    await reader.ready();
    const first = await reader.ground({ query: "quartz" });
    expect(first.metadata.selectedIds.length).toBeGreaterThan(0);
    expect(readerBackend.postingCache.size).toBe(1);
    expect(readerBackend.postingCache.bytes).toBeLessThan(12_000);
    read.seen.length = 0;
    const again = await reader.ground({ query: "quartz" });
    expect(again.ephemeralContext).toEqual(first.ephemeralContext);
    expect(read.seen.filter((text) => /_postings\b/.test(text))).toEqual([]);
  });
  it("a cycle of turns whose selections relate more than 4,096 entries reads them once (kept by size, not count)", async () => {
    // 60 topics, each related to 80 entries of its own: a cycle over the topics selects and relates 4,860
    // entries, about a megabyte of text. Kept by a count of 4,096, a least-recently-used cache forgot each entry
    // before the cycle came back to it, and every turn read its entries again.
    const topics = 60;
    const related = 80;
    const word = (index: number) =>
      `kw${String.fromCharCode(97 + Math.floor(index / 26))}${String.fromCharCode(97 + (index % 26))}`;
    const entries = [];
    for (let topic = 0; topic < topics; topic++) {
      const relatedEntryIds = Array.from({ length: related }, (_, index) => `note.${topic}.${index}`);
      const common = { domain: "topics", integrations: [] };
      entries.push({
        id: `topic.${topic}`,
        title: `Topic ${word(topic)}`,
        summary: "A topic.",
        ...common,
        relatedEntryIds,
      });
      for (const id of relatedEntryIds)
        entries.push({
          id,
          title: "A related note",
          summary: "Background for one of the topics.",
          ...common,
        });
    }
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "topics", version: "1", entries }],
      backend: backend({ schema: "kept_many" }),
      logger: null,
    });
    await writer.ready();
    const read = instrumentedPool(newPool());
    const reader = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [],
      backend: backend({ schema: "kept_many", pool: newPool(), readPool: read.pool }),
      timeoutMs: 10_000,
      logger: null,
    });
    await reader.ready();
    const cycle = async () => {
      for (let topic = 0; topic < topics; topic++) {
        const outcome = await reader.ground({ query: word(topic) });
        expect(outcome.metadata, JSON.stringify(outcome.metadata)).toMatchObject({
          selectedIds: [`topic.${topic}`],
        });
      }
    };
    await cycle();
    const entriesStatements = () => read.seen.filter((text) => text.includes("with primaries as")).length;
    expect(entriesStatements()).toBe(topics);
    read.seen.length = 0;
    await cycle();
    expect(entriesStatements()).toBe(0);
  });
});

describePostgres("a reader's memory under concurrent turns", () => {
  it("turns that fetch lists are admitted within the fetch budget, with the same answers", async () => {
    const words = [
      "amber",
      "basalt",
      "cobalt",
      "dune",
      "ember",
      "fjord",
      "garnet",
      "harbor",
      "indigo",
      "jasper",
    ];
    const entries = Array.from({ length: 40 }, (_, index) => ({
      id: `budget.entry-${index}`,
      title: `${words[index % 10]} ${words[(index * 3) % 10]} guide ${index}`,
      summary: `How ${words[(index + 1) % 10]} relates to ${words[(index * 7) % 10]} and ${words[(index + 4) % 10]}.`,
      domain: "budget",
      integrations: [],
    }));
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "budget", version: "1", entries }],
      backend: backend({ schema: "budget" }),
      logger: null,
    });
    await writer.ready();
    const queries = words.map((word, index) => ({ query: `${word} ${words[(index + 5) % 10]} guide` }));
    const reader = (options: { fetchBudgetBytes?: number }) => {
      const readerBackend = backend({ schema: "budget", postingCacheBytes: 0, ...options });
      // Fetches in flight at once, seen at the COPY that reads a turn's lists.
      const inFlight = { now: 0, most: 0 };
      const readCopy = readerBackend.readCopy.bind(readerBackend);
      readerBackend.readCopy = async (...args) => {
        inFlight.most = Math.max(inFlight.most, ++inFlight.now);
        try {
          // Held long enough for every other turn to reach its fetch.
          await new Promise((resolve) => setTimeout(resolve, 20));
          return await readCopy(...args);
        } finally {
          inFlight.now--;
        }
      };
      const engine = new KnowledgeGroundingEngine({
        enabled: true,
        sources: [],
        backend: readerBackend,
        timeoutMs: 10_000,
        logger: null,
      });
      return { engine, inFlight };
    };
    const unbounded = reader({ fetchBudgetBytes: 0 });
    const bounded = reader({ fetchBudgetBytes: 1 });
    await unbounded.engine.ready();
    await bounded.engine.ready();
    const expected = await Promise.all(queries.map((query) => unbounded.engine.ground(query)));
    const answers = await Promise.all(queries.map((query) => bounded.engine.ground(query)));
    expect(unbounded.inFlight.most).toBe(queries.length);
    // A budget smaller than any turn's lists: one turn at a time, plus the one admitted beside it before any
    // fetch was seen.
    expect(bounded.inFlight.most).toBeLessThanOrEqual(2);
    answers.forEach((answer, index) => {
      expect(answer.metadata.failureReason).toBeUndefined();
      expect(answer.metadata.selectedIds.length).toBeGreaterThan(0);
      expect(answer.ephemeralContext).toEqual(expected[index]!.ephemeralContext);
      expect(answer.metadata.selectedIds).toEqual(expected[index]!.metadata.selectedIds);
    });
  });
});

describePostgres("faults: turns fail open, the status says degraded, recovery needs no restart", () => {
  it("the database down at start, then up: the engine publishes and serves", async () => {
    await cluster!.stop();
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: backend({ schema: "down_at_start", connectionTimeoutMs: 500 }),
      timeoutMs: 1_500,
      logger: null,
    });
    const before = Date.now();
    const outcome = await engine.ground(QUERY);
    expect(Date.now() - before).toBeLessThan(5_000);
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toMatch(/build-failed|ECONNREFUSED|connect/);
    expect(engine.getStatus()).toMatchObject({ ready: false, backend: { degraded: true } });
    expect(engine.getStatus().backend!.lastError).toMatch(/ECONNREFUSED|connect/);
    await cluster!.start();
    const recovered = await eventually(
      () => engine.ground(QUERY),
      (value) => value.metadata.selectedIds[0] === "payouts.instant",
    );
    expect(recovered.metadata.selectedIds[0]).toBe("payouts.instant");
    expect(engine.getStatus()).toMatchObject({ ready: true, backend: { degraded: false } });
  }, 30_000);

  it("the database down mid-flight: turns fail open, then recover when it is back", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: backend({ schema: "down_mid_turn", connectionTimeoutMs: 500 }),
      timeoutMs: 1_500,
      logger: null,
    });
    await engine.ready();
    expect((await engine.ground(QUERY)).metadata.selectedIds[0]).toBe("payouts.instant");
    await cluster!.stop();
    const outcome = await engine.ground(QUERY);
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toBeTruthy();
    expect(engine.getStatus()).toMatchObject({ ready: true, backend: { degraded: true } });
    await cluster!.start();
    const recovered = await eventually(
      () => engine.ground(QUERY),
      (value) => value.metadata.selectedIds[0] === "payouts.instant",
    );
    expect(recovered.metadata.failureReason).toBeUndefined();
    expect(engine.getStatus().backend!.degraded).toBe(false);
  }, 30_000);

  it("a slow database: the statement timeout, or the turn's own timeout, ends the turn", async () => {
    const pgBackend = backend({ schema: "slow", statementTimeoutMs: 300 });
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: pgBackend,
      timeoutMs: 3_000,
      logger: null,
    });
    await engine.ready();
    const generation = pgBackend.status().generation!;
    const locker = newPool({ max: 1 });
    const client = await locker.connect();
    await client.query({ text: "begin" });
    // Every turn reads the entries table (the phrase hits' ids, the top K's ids, the selected entries).
    await client.query({ text: `lock table slow.g${generation}_entries in access exclusive mode` });
    try {
      const slow = await engine.ground(QUERY);
      expect(slow.metadata.failureReason).toMatch(/statement timeout/);
      expect(engine.getStatus().backend).toMatchObject({
        degraded: true,
        lastError: expect.stringMatching(/statement timeout/),
      });
      const impatient = new KnowledgeGroundingEngine({
        enabled: true,
        sources: [],
        backend: backend({ schema: "slow", statementTimeoutMs: 5_000 }),
        timeoutMs: 400,
        logger: null,
      });
      const before = Date.now();
      const timedOut = await impatient.ground(QUERY);
      expect(Date.now() - before).toBeLessThan(2_000);
      expect(timedOut.metadata.failureReason).toMatch(/timed out after 400ms/);
    } finally {
      await client.query({ text: "rollback" });
      client.release();
    }
    expect((await engine.ground(QUERY)).metadata.selectedIds[0]).toBe("payouts.instant");
    expect(engine.getStatus().backend!.degraded).toBe(false);
  }, 30_000);

  it("an exhausted pool: the turn gives up waiting for a connection", async () => {
    const pool = newPool({ max: 1, connectionTimeoutMillis: 300 });
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: backend({ schema: "exhausted", pool }),
      // Well above the pool's 300 ms wait, which is what this turn must give up on (on a loaded machine a 2 s
      // turn timeout could also fire first, or the recovered turn after it).
      timeoutMs: 20_000,
      logger: null,
    });
    await engine.ready();
    const held = await pool.connect();
    try {
      const outcome = await engine.ground(QUERY);
      expect(outcome.ephemeralContext).toBeNull();
      expect(outcome.metadata.failureReason).toMatch(/timeout exceeded when trying to connect/);
      expect(engine.getStatus().backend!.degraded).toBe(true);
    } finally {
      held.release();
    }
    expect((await engine.ground(QUERY)).metadata.selectedIds[0]).toBe("payouts.instant");
  }, 30_000);

  it("a generation dropped during a turn (two publications meanwhile): that turn fails open, the next serves the new one", async () => {
    const read = instrumentedPool(newPool());
    const readerBackend = backend({
      schema: "switch",
      pool: newPool(),
      readPool: read.pool,
      keepGenerations: 1,
    });
    const writer = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: backend({ schema: "switch", keepGenerations: 1 }),
    });
    await writer.ready();
    const reader = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [],
      backend: readerBackend,
      timeoutMs: 10_000,
      logger: null,
    });
    // Serving generation 1, nothing of it kept yet (a repeated turn would read its entries from what it kept).
    await reader.ready();
    expect(reader.getStatus()).toMatchObject({ ready: true, entryCount: 2 });
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => {
      resume = resolve;
    });
    let reached!: () => void;
    const atSecondStatement = new Promise<void>((resolve) => {
      reached = resolve;
    });
    read.state.hold = (text) => {
      if (!text.includes("primaries")) return null;
      read.state.hold = null;
      reached();
      return paused;
    };
    const turn = reader.ground(QUERY);
    await atSecondStatement;
    await writer.rebuild(sources("2"));
    resume();
    const outcome = await turn;
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toMatch(/does not exist/);
    const next = await reader.ground(QUERY);
    expect(next.ephemeralContext?.content).toContain("[KB:payouts.instant@2]");
  }, 30_000);

  it("a build that fails half-way leaves the previous generation serving and nothing half-written", async () => {
    const write = instrumentedPool(newPool());
    const pgBackend = backend({ schema: "failed_build", pool: write.pool });
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: sources("1"),
      backend: pgBackend,
      logger: null,
    });
    await engine.ready();
    const serving = pgBackend.status().generation!;
    write.state.fail = (text) => (text.includes("_phrases (key") ? new Error("disk full (injected)") : null);
    const rebuilt = await engine.rebuild(sources("2", "Instant payouts renamed"));
    write.state.fail = null;
    expect(rebuilt).toMatchObject({ live: false, reason: "build-failed" });
    expect(engine.getStatus().lastError).toMatch(/disk full/);
    const outcome = await engine.ground(QUERY);
    expect(outcome.ephemeralContext?.content).toContain("[KB:payouts.instant@1]");
    expect(pgBackend.status().generation).toBe(serving);
    const inspect = newPool();
    const tables = await inspect.query({
      text: "select table_name from information_schema.tables where table_schema = 'failed_build' and table_name ~ '^g[0-9]+_' order by 1",
    });
    expect(tables.rows.map((row) => row.table_name)).toEqual(
      ["entries", "phrases", "postings", "scopes"].map((name) => `g${serving}_${name}`),
    );
    const states = await inspect.query({
      text: "select generation, state, error from failed_build.generations order by generation",
    });
    expect(states.rows.at(-1)).toMatchObject({
      state: "failed",
      error: expect.stringContaining("disk full"),
    });
    // The next rebuild succeeds and goes live.
    expect((await engine.rebuild(sources("2"))).live).toBe(true);
    expect((await engine.ground(QUERY)).ephemeralContext?.content).toContain("[KB:payouts.instant@2]");
  }, 30_000);
});

/** Keeps the unused helper type referenced (documentation of what a test backend is). */
export type FleetBackend = PostgresBackend;
