/**
 * The PostgreSQL backend at a million entries (issue 15): one synthetic registry of `--size` entries (default
 * 1,000,000; seed 20260714, as `bench/million.ts`, so its in-memory figures are of the same registry and turns),
 * published into PostgreSQL (timed: wall and CPU), optionally built in memory in the same process for the ratio
 * (`--memory-build`), then turns measured by a reader in a separate process (`bench/postgresReader.ts`: a fresh
 * `node` holding no registry and no index, as a replica of the fleet), with its heap while it serves.
 *
 * `flock /tmp/lexground-big.lock node --expose-gc --max-old-space-size=14336 --import tsx bench/postgresMillion.ts
 *   [--size N] [--url postgres://…] [--keep] [--skip-publish] [--memory-build] [--turns 60] [--clients 16]
 *   [--posting-cache-bytes N] [--fetch-budget-bytes N]` (the last two: the reader's backend options)
 * Without `--url` a throwaway cluster is started (bench/postgres.ts's settings); `--keep` leaves it running (its
 * URL and folder are printed) so that `--skip-publish --url …` measures turns again on the same generation.
 * The queries go to `--queries-file` (default /tmp/lexground-pg-million-<size>.json). Progress on stderr, a
 * Markdown table on stdout.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { startIndexBuild } from "../src/knowledge/knowledgeIndex.js";
import { normalizeSources } from "../src/knowledge/resolve.js";
import { createPostgresBackend } from "../src/postgres/index.js";
import type { PublicationPhase } from "../src/postgres/publicationPhases.js";
import {
  importPostgresDriver,
  type PostgresCluster,
  startPostgresCluster,
} from "../test/support/postgresCluster.js";
import { REPO_ROOT } from "./firstTurn.js";
import { SERVER_SETTINGS } from "./postgres.js";
import type { ReaderQueries, ReaderReport } from "./postgresReader.js";
import { generateSyntheticRegistry } from "./synthetic.js";

const run = promisify(execFile);

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 && process.argv[index + 1] !== undefined ? process.argv[index + 1]! : fallback;
}
const flag = (name: string) => process.argv.includes(`--${name}`);

const size = Number(option("size", "1000000"));
const seed = Number(option("seed", "20260714"));
const queriesFile = option("queries-file", `/tmp/lexground-pg-million-${size}.json`);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

function log(message: string): void {
  process.stderr.write(`[pg-million] ${message} (load ${loadavg()[0]!.toFixed(1)})\n`);
}

/**
 * CPU milliseconds (user + system) of the server's processes so far: the postmaster's children (backends, WAL
 * writer, checkpointer, …) as /proc shows them, or null when the server is not a local throwaway cluster.
 */
function serverCpuMs(cluster: PostgresCluster | null): number | null {
  if (!cluster) return null;
  try {
    const postmaster = Number(
      readFileSync(join(cluster.folder, "data", "postmaster.pid"), "utf8").split("\n")[0],
    );
    let ticks = 0;
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${name}/stat`, "utf8");
      } catch {
        continue;
      }
      // Fields after the command name (which may hold spaces): state, ppid, …; utime and stime are 14th and 15th.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const pid = Number(name);
      if (pid !== postmaster && Number(fields[1]) !== postmaster) continue;
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    return ticks * 10; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

const seconds = (milliseconds: number) => `${(milliseconds / 1000).toFixed(1)} s`;
const megabytes = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MB`;

async function main(): Promise<void> {
  const rows: [string, string][] = [];
  const phaseRows: string[] = [];
  let cluster: PostgresCluster | null = null;
  let url = option("url", "");
  if (!url) {
    const started = await startPostgresCluster(SERVER_SETTINGS);
    if (!started.cluster) throw new Error(`cannot start PostgreSQL: ${started.reason}`);
    cluster = started.cluster;
    url = cluster.url;
    log(`throwaway cluster ${url} in ${cluster.folder}`);
  }
  try {
    if (!flag("skip-publish")) {
      log(`generating ${size} entries (seed ${seed})`);
      const workload = generateSyntheticRegistry({ size, seed, queryCount: 300 });
      const queries: ReaderQueries = {
        blockedDomains: workload.blockedDomains,
        queries: workload.queries,
        warmupQueries: workload.warmupQueries,
      };
      writeFileSync(queriesFile, JSON.stringify(queries));
      const normalized = normalizeSources([{ id: "synthetic", version: "1", entries: workload.entries }], {
        manifestVersion: "0",
      });
      if (!normalized.validation.ok) throw new Error("the synthetic registry is invalid");
      workload.entries.length = 0;
      gc!();
      const beforePublish = process.memoryUsage();
      rows.push([
        "this process before publishing (registry loaded): RSS / heap used / peak RSS so far",
        `${megabytes(beforePublish.rss)} / ${megabytes(beforePublish.heapUsed)} / ${megabytes(process.resourceUsage().maxRSS * 1024)}`,
      ]);
      log("validated; publishing");
      const backend = createPostgresBackend({
        connectionString: url,
        schema: "bench",
        statementTimeoutMs: 0,
      });
      const serverPhases: number[] = [];
      // The main thread's garbage collection pauses per phase (the app CPU includes them).
      const gcPhases: number[] = [];
      let gcTotal = 0;
      let gcBefore = 0;
      const gcObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) gcTotal += entry.duration;
      });
      gcObserver.observe({ entryTypes: ["gc"] });
      let serverBefore = serverCpuMs(cluster);
      backend.onPublicationPhase = (phase) => {
        const now = serverCpuMs(cluster);
        serverPhases.push(now !== null && serverBefore !== null ? now - serverBefore : Number.NaN);
        gcPhases.push(gcTotal - gcBefore);
        gcBefore = gcTotal;
        serverBefore = now;
        log(`phase ${phase.name}: ${seconds(phase.wallMs)} (app CPU ${seconds(phase.appCpuMs)})`);
      };
      const driver = await importPostgresDriver();
      if (!driver) throw new Error("the pg driver is not installed");
      const probe = new driver.Pool({ connectionString: url, max: 1 });
      const walBefore = String(
        (await probe.query({ text: "select pg_current_wal_lsn() as lsn" })).rows[0]!.lsn,
      );
      let started = performance.now();
      let cpu = process.cpuUsage();
      const published = await backend.publish(normalized.entries, {
        indexOptions: {},
        contentKey: `million-${size}-${seed}-${Date.now()}`,
      });
      const publishMs = performance.now() - started;
      const publishCpu = process.cpuUsage(cpu);
      await backend.close();
      rows.push([
        `publish ${size.toLocaleString("en-US")} entries into PostgreSQL (generation ${published.generation})`,
        `${seconds(publishMs)} (app CPU ${seconds((publishCpu.user + publishCpu.system) / 1000)})`,
      ]);
      log(`published in ${seconds(publishMs)}`);
      const wal = await probe.query({
        text: "select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) as bytes",
        values: [walBefore],
      });
      const sizes = await probe.query({
        text: `select c.relname as name, pg_total_relation_size(c.oid) as bytes from pg_class c
          where c.relnamespace = 'bench'::regnamespace and c.relkind = 'r' and c.relname like $1 order by c.relname`,
        values: [`g${published.generation}\\_%`],
      });
      await probe.end();
      rows.push(["WAL written during the publication", megabytes(Number(wal.rows[0]!.bytes))]);
      rows.push([
        "tables (with TOAST and indexes)",
        sizes.rows
          .map((row) => `${String(row.name).split("_").at(-1)} ${megabytes(Number(row.bytes))}`)
          .join(", "),
      ]);
      gcObserver.disconnect();
      phaseRows.push(...phaseTable(backend.publicationPhases, serverPhases, gcPhases));
      rows.push(["peak RSS of this process so far", megabytes(process.resourceUsage().maxRSS * 1024)]);
      if (flag("memory-build")) {
        gc!();
        started = performance.now();
        cpu = process.cpuUsage();
        const build = startIndexBuild(normalized.entries);
        build.step(Number.POSITIVE_INFINITY);
        build.finish();
        const buildMs = performance.now() - started;
        const buildCpu = process.cpuUsage(cpu);
        rows.push([
          "in-memory build of the same entries (same process, after the publication)",
          `${seconds(buildMs)} (CPU ${seconds((buildCpu.user + buildCpu.system) / 1000)}); publish ÷ build ×${(publishMs / buildMs).toFixed(1)}`,
        ]);
        log(`in-memory build ${seconds(buildMs)}`);
      }
      normalized.entries.length = 0;
      gc!();
    } else if (!existsSync(queriesFile)) {
      throw new Error(`--skip-publish needs the queries of a previous run: ${queriesFile}`);
    }
    if (flag("skip-reader")) {
      printTables(rows, phaseRows, null);
      return;
    }
    log("reader process: turns");
    const { stdout, stderr } = await run(
      process.execPath,
      [
        "--expose-gc",
        "--import",
        "tsx",
        join(REPO_ROOT, "bench", "postgresReader.ts"),
        "--url",
        url,
        "--schema",
        "bench",
        "--queries",
        queriesFile,
        "--turns",
        option("turns", "60"),
        "--clients",
        option("clients", "16"),
        "--budget-ms",
        option("budget-ms", "900000"),
        "--concurrent-ms",
        option("concurrent-ms", "60000"),
        ...["posting-cache-bytes", "fetch-budget-bytes"].flatMap((name) =>
          option(name, "") ? [`--${name}`, option(name, "")] : [],
        ),
      ],
      { cwd: REPO_ROOT, maxBuffer: 64 * 1024 * 1024, timeout: 3 * 3600_000 },
    );
    process.stderr.write(stderr);
    const report = JSON.parse(stdout.trim().split("\n").at(-1)!) as ReaderReport;
    const c = report.concurrent;
    rows.push([
      `turn (reader engine.ground, ${report.turns} queries) p50 / p99 / max`,
      `${report.p50.toFixed(0)} / ${report.p99.toFixed(0)} / ${report.max.toFixed(0)} ms (posting cache ${report.cache.hits} hits / ${report.cache.misses} misses${report.failed > 0 ? `, ${report.failed} failed open` : ""})`,
    ]);
    rows.push([
      `${c.clients} concurrent clients`,
      `${c.turnsPerSecond.toFixed(1)} turns/s (${c.turns} turns, p50 ${c.p50.toFixed(0)} ms, p99 ${c.p99.toFixed(0)} ms${c.failed > 0 ? `, ${c.failed} failed open` : ""})`,
    ]);
    rows.push([
      "reader heap (heapUsed + external): code loaded / serving / after the turns",
      `${megabytes(report.heap.baselineBytes)} / ${megabytes(report.heap.readyBytes)} / ${megabytes(report.heap.afterTurnsBytes)}`,
    ]);
    const parts = report.heap.afterTurnsParts;
    rows.push([
      "of which after the turns: V8 heap / outside it (buffers) / the posting cache's lists",
      `${megabytes(parts.heapUsedBytes)} / ${megabytes(parts.externalBytes)} / ${megabytes(parts.postingCacheBytes)}`,
    ]);
    rows.push([
      "reader heap peak during turns (no collection forced) / peak RSS",
      `${megabytes(report.heap.peakDuringTurnsBytes)} / ${megabytes(report.heap.peakRssBytes)}`,
    ]);
    rows.push([
      "reader fetch budget: limit / most turns fetching at once / most fetched bytes held at once",
      `${megabytes(report.fetchBudget.limitBytes)} / ${report.fetchBudget.peakTurns} / ${megabytes(report.fetchBudget.peakBytes)}`,
    ]);
    rows.push([
      "reader turn latencies (ms, in order)",
      report.latencies.map((value) => value.toFixed(0)).join(" "),
    ]);
    printTables(rows, phaseRows, report.load);
  } finally {
    if (cluster && !flag("keep")) await cluster.dispose();
    else if (cluster) log(`cluster kept: ${url} (stop: pg_ctl -D ${cluster.folder}/data -m immediate stop)`);
  }
}

/**
 * Phases by name (repeated names summed), in first-seen order: wall, app CPU, the main thread's collection pauses
 * (observed as they end, so a pause is counted in the phase it ended in), server CPU (ms).
 */
function phaseTable(
  phases: readonly PublicationPhase[],
  serverMs: readonly number[],
  gcMs: readonly number[],
): string[] {
  const byName = new Map<string, [number, number, number, number]>();
  phases.forEach((phase, index) => {
    const sums = byName.get(phase.name) ?? [0, 0, 0, 0];
    sums[0] += phase.wallMs;
    sums[1] += phase.appCpuMs;
    sums[2] += gcMs[index] ?? Number.NaN;
    sums[3] += serverMs[index] ?? Number.NaN;
    byName.set(phase.name, sums);
  });
  const cell = (milliseconds: number) => (Number.isNaN(milliseconds) ? "–" : seconds(milliseconds));
  return [...byName].map(
    ([name, [wall, app, gc, server]]) =>
      `| ${name} | ${cell(wall)} | ${cell(app)} | ${cell(gc)} | ${cell(server)} |`,
  );
}

function printTables(
  rows: [string, string][],
  phaseRows: string[],
  readerLoad: [number, number] | null,
): void {
  console.log(
    `PostgreSQL backend, ${size.toLocaleString("en-US")} synthetic entries (seed ${seed}), ${cpus().length} CPUs, ` +
      `Node ${process.version}, load ${loadavg()[0]!.toFixed(1)} at the end` +
      (readerLoad ? `, ${readerLoad[0].toFixed(1)} → ${readerLoad[1].toFixed(1)} during the reader` : ""),
  );
  console.log("");
  console.log("| step | measured |");
  console.log("|---|--:|");
  for (const [step, value] of rows) console.log(`| ${step} | ${value} |`);
  if (phaseRows.length > 0) {
    console.log("");
    console.log("| publication phase | wall | app CPU | app GC pauses | server CPU |");
    console.log("|---|--:|--:|--:|--:|");
    for (const row of phaseRows) console.log(row);
  }
}

await main();
