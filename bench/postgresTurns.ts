/**
 * Where the PostgreSQL backend's turns spend their time: the benchmark's synthetic workload (the same registry and
 * queries as `npm run bench -- --sizes N`), published once into a schema of a running server and kept there, then
 * a reader engine's turns measured one at a time (as the harness measures them: warm-up, then the queries in
 * order within a budget) with, per turn, its wall time, the app's CPU, the server's CPU (its processes' times
 * from /proc, when the server runs on this machine) and the backend's steps (`TurnProfile`: the binary COPY of
 * posting lists and its bytes, decoding, ranking, the small statements, the pruned attempt); then `--clients`
 * concurrent clients, with the app's and the server's CPU per turn. `--memory` also builds the in-memory engine
 * and measures it the same way in the same run (a ratio on the same machine load).
 *
 * `node --expose-gc --import tsx bench/postgresTurns.ts --url postgres://… [--size 100000] [--schema pgturn]
 *   [--publish] [--budget-ms 3000] [--turns N] [--clients 16] [--concurrent-ms 5000] [--memory]
 *   [--posting-cache-bytes N] [--slowest 10] [--processes N] [--json FILE] [--queries FILE] [--cpu-profile FILE]`
 * (`--schema bench --queries /tmp/lexground-pg-million-1000000.json`: the generation and turns that
 * `bench/postgresMillion.ts --keep` left.) Per turn it also reports the process's minor page faults and the main
 * thread's collection pauses.
 *
 * `--processes N` (N > 1) also runs the `--clients` over N reader processes (`concurrentTurnsInProcesses`).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { KnowledgeGroundingEngine, normalizeAndValidate } from "../src/index.js";
import { createPostgresBackend } from "../src/postgres/index.js";
import { TurnProfile } from "../src/postgres/turnProfile.js";
import { BlockProfiler } from "./blockProbe.js";
import { engineTurnRunner, type TurnRunner } from "./implementations.js";
import { concurrentTurns, concurrentTurnsInProcesses } from "./postgres.js";
import { generateSyntheticRegistry } from "./synthetic.js";
import type { BenchQuery } from "./workload.js";

function option(name: string, fallback?: string): string {
  const index = process.argv.indexOf(`--${name}`);
  if (index >= 0 && process.argv[index + 1] !== undefined) return process.argv[index + 1]!;
  if (fallback === undefined) throw new Error(`--${name} is required`);
  return fallback;
}
const flag = (name: string) => process.argv.includes(`--${name}`);

const url = option("url");
const size = Number(option("size", "100000"));
const schema = option("schema", "pgturn");
const budgetMs = Number(option("budget-ms", "3000"));
const maxTurns = Number(option("turns", "100000"));
const clients = Number(option("clients", "16"));
const concurrentMs = Number(option("concurrent-ms", "5000"));
const slowest = Number(option("slowest", "10"));
const processes = Number(option("processes", "1"));
const cacheBytes = process.argv.includes("--posting-cache-bytes")
  ? Number(option("posting-cache-bytes"))
  : undefined;
/** The harness's seed for this size (`bench/run.ts`: options.seed + size). */
const seed = 20_260_714 + size;
/** The workload's queries (written when publishing; `--queries` reads another's, e.g. `bench/postgresMillion.ts`'s). */
const queriesFile = option("queries", `/tmp/lexground-pgturn-queries-${size}.json`);
const contentKey = `pgturn-synthetic-${size}-${seed}`;

/** Main-thread garbage collection pauses so far (milliseconds). */
let gcTotal = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcTotal += entry.duration;
}).observe({ entryTypes: ["gc"] });

type Queries = { queries: BenchQuery[]; warmupQueries: BenchQuery[]; blockedDomains: string[] };

function generate() {
  const started = performance.now();
  const generated = generateSyntheticRegistry({ size, seed, queryCount: 300 });
  const { entries, validation } = normalizeAndValidate(
    [{ id: "synthetic", version: "1", entries: generated.entries }],
    { manifestVersion: "0" },
  );
  if (!validation.ok) throw new Error("the synthetic registry does not validate");
  console.error(`generated ${entries.length} entries in ${(performance.now() - started).toFixed(0)} ms`);
  const queries: Queries = {
    queries: generated.queries,
    warmupQueries: generated.warmupQueries,
    blockedDomains: generated.blockedDomains,
  };
  writeFileSync(queriesFile, JSON.stringify(queries));
  return { entries, sources: [{ id: "synthetic", version: "1", entries: generated.entries }], queries };
}

/** CPU milliseconds (user + system) of the server's processes (this database's backends and helpers). */
async function serverCpu(pids: readonly number[]): Promise<number> {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone.
    }
  }
  return ticks * 10; // USER_HZ = 100
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

type TurnRecord = {
  index: number;
  milliseconds: number;
  appCpuMs: number;
  /** Minor page faults of this process during the turn (fresh memory touched: 18–80 µs each on this VM). */
  faults: number;
  /** Garbage collection pauses of the main thread during the turn. */
  gcMs: number;
  terms: number;
  steps: Record<string, { milliseconds: number; count: number; bytes: number }>;
};

async function measure(
  name: string,
  runner: TurnRunner,
  queries: Queries,
  profile: TurnProfile | null,
  serverPids: () => Promise<number[]>,
) {
  // Warm-up as the harness does it: a fifth of the budget, at least one query.
  const warmupStarted = performance.now();
  for (const [index, query] of queries.warmupQueries.entries()) {
    if (index > 0 && performance.now() - warmupStarted > budgetMs / 5) break;
    await runner.turn(query);
  }
  const records: TurnRecord[] = [];
  let spent = 0;
  const pids = await serverPids();
  const serverBefore = await serverCpu(pids);
  // `--cpu-profile FILE`: a sampling profile of the measured turns only (not the warm-ups), as a .cpuprofile.
  const profiler = name === "postgres" && option("cpu-profile", "") ? new BlockProfiler() : null;
  await profiler?.start();
  for (const [index, query] of queries.queries.entries()) {
    if ((spent >= budgetMs && records.length >= 5) || records.length >= maxTurns) break;
    profile?.reset();
    const cpu = process.cpuUsage();
    const faultsBefore = process.resourceUsage().minorPageFault;
    const gcBefore = gcTotal;
    const started = performance.now();
    const result = await runner.turn(query);
    const elapsed = performance.now() - started;
    const used = process.cpuUsage(cpu);
    const faults = process.resourceUsage().minorPageFault - faultsBefore;
    spent += elapsed;
    if (result.failureReason) console.error(`${name} turn ${index} failed: ${result.failureReason}`);
    records.push({
      index,
      milliseconds: elapsed,
      appCpuMs: (used.user + used.system) / 1000,
      faults,
      gcMs: gcTotal - gcBefore,
      terms: new Set(
        [query.query, ...query.recentTurns.map((turn) => turn.text)].join(" ").toLowerCase().split(/\W+/),
      ).size,
      steps: Object.fromEntries(profile ? [...profile.steps] : []),
    });
  }
  if (profiler) writeFileSync(option("cpu-profile"), JSON.stringify(await profiler.stop()));
  const serverMs = (await serverCpu(pids)) - serverBefore;
  const latencies = records.map((record) => record.milliseconds);
  const appCpu = records.reduce((sum, record) => sum + record.appCpuMs, 0);
  const faults = records.reduce((sum, record) => sum + record.faults, 0);
  const gcMs = records.reduce((sum, record) => sum + record.gcMs, 0);
  console.log(
    `${name}: ${records.length} turns, p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms, ` +
      `max ${Math.max(...latencies).toFixed(1)} ms; app CPU ${(appCpu / records.length).toFixed(1)} ms/turn, ` +
      `server CPU ${(serverMs / records.length).toFixed(1)} ms/turn; ${(faults / records.length).toFixed(0)} minor page faults/turn, ` +
      `GC ${(gcMs / records.length).toFixed(1)} ms/turn`,
  );
  const totals = new Map<string, { milliseconds: number; count: number; bytes: number }>();
  for (const record of records)
    for (const [step, value] of Object.entries(record.steps)) {
      const total = totals.get(step) ?? { milliseconds: 0, count: 0, bytes: 0 };
      total.milliseconds += value.milliseconds;
      total.count += value.count;
      total.bytes += value.bytes;
      totals.set(step, total);
    }
  if (totals.size > 0)
    console.log(
      `  steps over all turns: ${[...totals]
        .map(
          ([step, value]) =>
            `${step} ${value.milliseconds.toFixed(0)} ms/${value.count}${value.bytes ? ` ${(value.bytes / 1e6).toFixed(1)} MB` : ""}`,
        )
        .join(", ")}`,
    );
  console.log(`  latencies in order (ms): ${latencies.map((value) => value.toFixed(0)).join(" ")}`);
  console.log(
    `  app CPU per turn in order (ms): ${records.map((record) => record.appCpuMs.toFixed(0)).join(" ")}`,
  );
  const sorted = [...records].sort((left, right) => right.milliseconds - left.milliseconds);
  for (const record of sorted.slice(0, slowest)) {
    console.log(
      `  turn ${record.index}: ${record.milliseconds.toFixed(1)} ms (app CPU ${record.appCpuMs.toFixed(1)}, ${record.faults} faults, GC ${record.gcMs.toFixed(1)}), ~${record.terms} words: ${Object.entries(
        record.steps,
      )
        .map(
          ([step, value]) =>
            `${step} ${value.milliseconds.toFixed(1)}${value.count > 1 ? `/${value.count}` : ""}${value.bytes ? ` ${(value.bytes / 1e6).toFixed(2)} MB` : ""}`,
        )
        .join(", ")}`,
    );
  }
  let concurrent = null;
  if (clients > 0) {
    const pidsNow = await serverPids();
    const before = await serverCpu(pidsNow);
    const cpu = process.cpuUsage();
    profile?.reset();
    concurrent = await concurrentTurns(runner, queries.queries, clients, concurrentMs);
    const used = process.cpuUsage(cpu);
    const server = (await serverCpu(await serverPids())) - before;
    console.log(
      `  ${clients} clients: ${concurrent.turnsPerSecond.toFixed(1)} turns/s (${concurrent.turns} turns, p50 ${concurrent.p50.toFixed(0)} ms, ` +
        `p99 ${concurrent.p99.toFixed(0)} ms, ${concurrent.failed} failed); app CPU ${((used.user + used.system) / 1000 / concurrent.turns).toFixed(2)} ms/turn, ` +
        `server CPU ${(server / concurrent.turns).toFixed(2)} ms/turn`,
    );
    if (profile && profile.steps.size > 0)
      console.log(
        `  steps per concurrent turn: ${[...profile.steps]
          .map(
            ([step, value]) =>
              `${step} ${(value.milliseconds / concurrent!.turns).toFixed(2)} ms (${(value.count / concurrent!.turns).toFixed(2)}×)`,
          )
          .join(", ")}`,
      );
  }
  return { latencies, records, concurrent };
}

async function main(): Promise<void> {
  const publisher = createPostgresBackend({
    connectionString: url,
    schema,
    statementTimeoutMs: 0,
    generationCheckMs: 0,
    maxConnections: 2,
  });
  const serving = await publisher.current();
  let generated: ReturnType<typeof generate> | null = null;
  let queries: Queries;
  let needsPublish = flag("publish") || !serving;
  if (!needsPublish) {
    try {
      queries = JSON.parse(readFileSync(queriesFile, "utf8")) as Queries;
    } catch {
      needsPublish = true;
    }
  }
  if (needsPublish || flag("memory")) generated = generate();
  queries ??= generated!.queries;
  if (needsPublish) {
    const started = performance.now();
    const published = await publisher.publish(generated!.entries, {
      indexOptions: {},
      contentKey: flag("publish") ? `${contentKey}-${Date.now()}` : contentKey,
    });
    console.error(
      `published generation ${published.generation} (${published.reused ? "reused" : "new"}) in ${(performance.now() - started).toFixed(0)} ms`,
    );
  }
  const pidPool = createPostgresBackend({ connectionString: url, schema, maxConnections: 1 });
  const serverPids = async () => {
    const result = await (
      pidPool as unknown as { read(config: { text: string }): Promise<{ rows: { pid: number }[] }> }
    ).read({ text: "select pid from pg_stat_activity" });
    return result.rows.map((row) => Number(row.pid));
  };
  console.log(
    `load before: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(" ")}`,
  );
  const reports: Record<string, unknown> = {};
  if (flag("memory")) {
    let engine: KnowledgeGroundingEngine | null = new KnowledgeGroundingEngine({
      enabled: true,
      sources: generated!.sources,
      blockedDomains: queries.blockedDomains,
      timeoutMs: 60_000,
    });
    await engine.ready();
    reports.memory = await measure("memory", engineTurnRunner(engine), queries, null, serverPids);
    // Only the measured implementation's index alive (as the harness does): every full collection would walk it.
    engine = null;
    generated = null;
  }
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const reader = createPostgresBackend({
    connectionString: url,
    schema,
    maxConnections: 16,
    statementTimeoutMs: 60_000,
    connectionTimeoutMs: 60_000,
    ...(cacheBytes !== undefined ? { postingCacheBytes: cacheBytes } : {}),
  });
  const profile = new TurnProfile();
  reader.turnProfile = profile;
  const engine = new KnowledgeGroundingEngine({
    enabled: true,
    sources: [],
    backend: reader,
    blockedDomains: queries.blockedDomains,
    timeoutMs: 60_000,
  });
  await engine.ready();
  reports.postgres = await measure("postgres", engineTurnRunner(engine), queries, profile, serverPids);
  if (processes > 1 && clients > 0) {
    const fleet = await concurrentTurnsInProcesses({
      url,
      schema,
      queries: queries.queries,
      blockedDomains: queries.blockedDomains,
      clients,
      processes,
      budgetMs: concurrentMs,
      ...(cacheBytes !== undefined ? { postingCacheBytes: cacheBytes } : {}),
    });
    reports.fleet = fleet;
    console.log(
      `  ${clients} clients over ${processes} reader processes (each warmed by one pass over the queries): ` +
        `${fleet.turnsPerSecond.toFixed(1)} turns/s (${fleet.turns} turns, p50 ${fleet.p50.toFixed(0)} ms, p99 ${fleet.p99.toFixed(0)} ms, ` +
        `${fleet.failed} failed); reader CPU ${fleet.readerCpuMsPerTurn.toFixed(2)} ms/turn`,
    );
  }
  console.log(
    `postgres posting cache: ${(reader.postingCache.bytes / 1e6).toFixed(1)} MB, ` +
      `${reader.postingCache.counts.hits} hits / ${reader.postingCache.counts.misses} misses`,
  );
  console.log(
    `load after: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(" ")}`,
  );
  if (process.argv.includes("--json")) writeFileSync(option("json"), JSON.stringify(reports));
  await Promise.all([publisher.close(), reader.close(), pidPool.close()]);
}

await main();
