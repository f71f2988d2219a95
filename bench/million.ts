/**
 * A million entries (issue 14): one synthetic registry of `--size` entries (default 1,000,000) from
 * `bench/synthetic.ts`, measured step by step in one lean process (no peers, no plain baseline, one snapshot alive):
 * validation, index build (time and heap retained), whole turns through `engine.ground()` (p50/p99 wall, the main
 * thread's CPU per turn, and the collections that paused turns), the
 * self-contained artifact (write time and size), then a fresh `node` started from the artifact alone to its first
 * grounded turn (wall and CPU time). Run with
 * `node --expose-gc --max-old-space-size=14336 --import tsx bench/million.ts [--size N] [--queries N] [--runs N]
 * [--skip-artifact] [--skip-turns]`; it builds `dist/` first (not with `--skip-artifact`, which stops after the turns,
 * nor with `--skip-turns`, which stops after the build). Progress on
 * stderr, a Markdown table on stdout.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { constants, PerformanceObserver, performance } from "node:perf_hooks";
import {
  buildKnowledgeIndexCacheKey,
  KnowledgeGroundingEngine,
  serializeIndexSnapshotChunks,
} from "../src/index.js";
import { getCompiledSnapshot } from "../src/knowledge/compiledSnapshot.js";
import { startIndexBuild } from "../src/knowledge/knowledgeIndex.js";
import { lastParallelBuildStats } from "../src/knowledge/parallelBuild.js";
import { normalizeSources } from "../src/knowledge/resolve.js";
import { splitSearchCount } from "../src/knowledge/splitScoring.js";
import {
  median,
  REPO_ROOT,
  timeBareNode,
  timeFirstTurn,
  writeArtifactPieces,
  writeFirstTurnChild,
} from "./firstTurn.js";
import { generateSyntheticRegistry } from "./synthetic.js";

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1]! : fallback;
}

const size = Number(option("size", "1000000"));
const queryCount = Number(option("queries", "300"));
const runs = Number(option("runs", "3"));
const skipArtifact = process.argv.includes("--skip-artifact");
/** `--skip-turns`: stop after the build (its figures only; implies `--skip-artifact`). */
const skipTurns = process.argv.includes("--skip-turns");
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

function log(message: string): void {
  process.stderr.write(`[million] ${message} (load ${loadavg()[0]!.toFixed(1)})\n`);
}

function retained(): number {
  gc!();
  gc!();
  // Shared array buffers (a build's postings) are in `arrayBuffers`, not in `external` (see bench/measure.ts).
  const usage = process.memoryUsage();
  return usage.heapUsed + Math.max(usage.external, usage.arrayBuffers);
}

/** The calling thread's CPU time in seconds (Linux `/proc/thread-self/stat`), or NaN elsewhere. */
function mainThreadCpuSeconds(): number {
  try {
    const stat = readFileSync("/proc/thread-self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** Counts garbage collections (minor: scavenges; major: mark-compact) and their pauses until `stop`. */
function countCollections(): {
  stop(): Promise<{ minor: number; minorMs: number; major: number; majorMs: number }>;
} {
  const totals = { minor: 0, minorMs: 0, major: 0, majorMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        totals.minor++;
        totals.minorMs += entry.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        totals.major++;
        totals.majorMs += entry.duration;
      }
    }
  });
  observer.observe({ entryTypes: ["gc"] });
  return {
    // The entries of collections during a synchronous build are delivered once the event loop turns.
    async stop() {
      await new Promise((resolve) => setTimeout(resolve, 100));
      observer.disconnect();
      return totals;
    },
  };
}

/**
 * What the calling thread and the process's other threads did, read from Linux's `/proc` (zeros elsewhere): the
 * thread's CPU and run-queue wait (`schedstat`, ns), its page faults (`stat`), its voluntary and involuntary context
 * switches (`status`), and every other thread's CPU by name (`task/<tid>/comm`), to explain a turn whose wall time
 * exceeds its CPU time: waiting for a core (run-queue), blocking (voluntary switches), faulting, or another thread
 * of this process (a collector, a worker) busy at the same time.
 */
type ThreadSample = {
  runNs: number;
  waitNs: number;
  minorFaults: number;
  majorFaults: number;
  voluntary: number;
  involuntary: number;
  others: Map<string, number>;
  steal: number;
  running: number;
};

function readOr(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** The calling thread's own counters (cheap: read tightly around a turn). */
function sampleOwnThread(): Omit<ThreadSample, "others" | "steal" | "running"> {
  const [run = "0", wait = "0"] = readOr("/proc/thread-self/schedstat").split(" ");
  const stat = readOr("/proc/thread-self/stat");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const status = readOr("/proc/thread-self/status");
  return {
    runNs: Number(run),
    waitNs: Number(wait),
    minorFaults: Number(fields[7] ?? 0),
    majorFaults: Number(fields[9] ?? 0),
    voluntary: Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0),
    involuntary: Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0),
  };
}

/**
 * The machine: its CPUs' stolen time (jiffies: the hypervisor running other guests on this VM's cores) and the
 * processes runnable right now, from `/proc/stat` (zeros elsewhere).
 */
function sampleMachine(): { steal: number; running: number } {
  const stat = readOr("/proc/stat");
  const cpu = /^cpu\s+(.*)$/m.exec(stat)?.[1]?.split(/\s+/) ?? [];
  return { steal: Number(cpu[7] ?? 0), running: Number(/procs_running\s+(\d+)/.exec(stat)?.[1] ?? 0) };
}

/** Every other thread's CPU time (ns), keyed by thread id. */
function sampleOtherThreads(): Map<string, number> {
  const self = readOr("/proc/thread-self/stat").split(" ")[0];
  const others = new Map<string, number>();
  let tasks: string[] = [];
  try {
    tasks = readdirSync("/proc/self/task");
  } catch {
    // Not Linux.
  }
  for (const task of tasks) {
    if (task === self) continue;
    others.set(`t${task}`, Number(readOr(`/proc/self/task/${task}/schedstat`).split(" ")[0] ?? 0));
  }
  return others;
}

/**
 * Waits until the process's other threads (V8's helpers, the workers) used less than 2 ms of CPU over 500 ms,
 * or `limitMs` passed; Linux only (elsewhere at once).
 */
async function backgroundIdle(limitMs: number): Promise<{ waitedMs: number; cpuMs: number; idle: boolean }> {
  const started = performance.now();
  const total = (sample: Map<string, number>) => [...sample.values()].reduce((sum, ns) => sum + ns, 0) / 1e6;
  const first = total(sampleOtherThreads());
  let previous = first;
  while (performance.now() - started < limitMs) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = total(sampleOtherThreads());
    if (now - previous < 2) return { waitedMs: performance.now() - started, cpuMs: now - first, idle: true };
    previous = now;
  }
  return { waitedMs: performance.now() - started, cpuMs: previous - first, idle: false };
}

/** The difference of two samples, in ms (other threads: those that ran more than 0.05 ms). */
function threadDelta(before: ThreadSample, after: ThreadSample) {
  const others = new Map<string, number>();
  for (const [key, ns] of after.others) {
    const delta = (ns - (before.others.get(key) ?? 0)) / 1e6;
    if (delta <= 0.05) continue;
    others.set(key, delta);
  }
  return {
    runMs: (after.runNs - before.runNs) / 1e6,
    waitMs: (after.waitNs - before.waitNs) / 1e6,
    minorFaults: after.minorFaults - before.minorFaults,
    majorFaults: after.majorFaults - before.majorFaults,
    voluntary: after.voluntary - before.voluntary,
    involuntary: after.involuntary - before.involuntary,
    others,
    stealJiffies: after.steal - before.steal,
    running: after.running,
  };
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  if (!skipArtifact && !skipTurns) execFileSync("npm", ["run", "build"], { cwd: REPO_ROOT, stdio: "ignore" });
  const rows: [string, string][] = [];
  log(`generating ${size} entries`);
  let started = performance.now();
  const workload = generateSyntheticRegistry({ size, seed: 20260714, queryCount });
  log(`generated in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  started = performance.now();
  const normalized = normalizeSources([{ id: "synthetic", version: "1", entries: workload.entries }], {
    manifestVersion: "0",
  });
  const validateSeconds = (performance.now() - started) / 1000;
  if (!normalized.validation.ok) throw new Error("the synthetic registry is invalid");
  workload.entries.length = 0;
  rows.push(["validate (normalizeSources)", `${validateSeconds.toFixed(1)} s`]);
  log(`validated in ${validateSeconds.toFixed(1)} s`);

  const before = retained();
  const collections = countCollections();
  started = performance.now();
  const cpuBefore = process.cpuUsage();
  const mainBefore = mainThreadCpuSeconds();
  const build = startIndexBuild(normalized.entries);
  const startedAt = performance.now();
  build.step(Number.POSITIVE_INFINITY);
  const steppedAt = performance.now();
  const snapshot = build.finish();
  const finishedAt = performance.now();
  const buildSeconds = (finishedAt - started) / 1000;
  const buildCpu = process.cpuUsage(cpuBefore);
  const mainCpu = mainThreadCpuSeconds() - mainBefore;
  const gcDuring = await collections.stop();
  const parallel = lastParallelBuildStats();
  const heapGb = (retained() - before) / 1024 ** 3;
  rows.push([
    "build (index from validated entries)",
    `${buildSeconds.toFixed(1)} s (CPU ${((buildCpu.user + buildCpu.system) / 1e6).toFixed(1)} s)`,
  ]);
  // Where the build's time went: phases (wall), the main thread's CPU (Linux), collections, the workers' share.
  rows.push([
    "build phases: sort and start workers / index and finalize / snapshot maps",
    `${((startedAt - started) / 1000).toFixed(1)} / ${((steppedAt - startedAt) / 1000).toFixed(1)} / ${((finishedAt - steppedAt) / 1000).toFixed(1)} s`,
  ]);
  rows.push([
    "build: main thread CPU; collections (scavenges, major) and their pauses",
    `${Number.isNaN(mainCpu) ? "n/a" : `${mainCpu.toFixed(1)} s`}; ${gcDuring.minor} scavenges ${(gcDuring.minorMs / 1000).toFixed(1)} s, ${gcDuring.major} major ${(gcDuring.majorMs / 1000).toFixed(1)} s`,
  ]);
  if (parallel)
    rows.push([
      "build: workers, entries they counted, main thread waiting for them",
      `${parallel.workers}, ${parallel.countedEntries.toLocaleString("en-US")}, ${(parallel.waitedMilliseconds / 1000).toFixed(1)} s`,
    ]);
  rows.push(["heap retained by the snapshot after build", `${heapGb.toFixed(2)} GB`]);
  // The pruning's bounds a build computes (lists of >= 4,096 postings; listBounds.ts), read from the index.
  const boundMaps = (
    getCompiledSnapshot(snapshot)?.lexical as unknown as
      | { upperBounds?: Map<number, number>[] | null }
      | undefined
  )?.upperBounds;
  if (boundMaps)
    rows.push([
      "upper bounds computed by the build (long lists)",
      boundMaps.reduce((count, bounds) => count + bounds.size, 0).toLocaleString("en-US"),
    ]);
  log(`built in ${buildSeconds.toFixed(1)} s, ${heapGb.toFixed(2)} GB retained`);
  if (skipTurns) {
    printTable(rows);
    return;
  }

  // The benchmark's turns: its blocked domains, each query's integrations and recent turns (as bench/run.ts does).
  const engine = new KnowledgeGroundingEngine({
    enabled: true,
    timeoutMs: 600_000,
    blockedDomains: workload.blockedDomains,
  });
  engine.installSnapshot(snapshot, "built");
  const queries = workload.queries;
  const turn = (query: (typeof queries)[number]) =>
    engine.ground({
      query: query.query,
      recentTurns: query.recentTurns,
      scope: { enabledIntegrations: query.enabledIntegrations },
    });
  for (const query of workload.warmupQueries.slice(0, 20)) await turn(query);
  // The collections forced after the build (to measure the heap) leave V8's helper threads sweeping a ~4 GB heap
  // for seconds; turns measured meanwhile wait for a core (session 12's and 13's slowest turns included the first
  // ones, with 20-50 ms of those threads' CPU in each). The turns measure a settled process: they start once the
  // other threads are idle (at most 60 s of waiting, reported).
  const settled = await backgroundIdle(60_000);
  rows.push([
    "turns start after the other threads went idle (the build's collections swept)",
    `${(settled.waitedMs / 1000).toFixed(1)} s waited, ${settled.cpuMs.toFixed(0)} ms of their CPU meanwhile${settled.idle ? "" : " (not idle: gave up)"}`,
  ]);
  log(`waited ${(settled.waitedMs / 1000).toFixed(1)} s for the other threads to go idle`);
  // Per turn: wall time, the main thread's CPU time, and whether a collection paused it (a slow turn is either
  // scoring or waiting: a collection, or a core taken by other work when wall exceeds CPU).
  const pauses: { start: number; end: number; major: boolean }[] = [];
  const pauseObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind;
      pauses.push({
        start: entry.startTime,
        end: entry.startTime + entry.duration,
        major: kind === constants.NODE_PERFORMANCE_GC_MAJOR,
      });
    }
  });
  pauseObserver.observe({ entryTypes: ["gc"] });
  const latencies: number[] = [];
  const turnCpu: number[] = [];
  const spans: { start: number; end: number }[] = [];
  const splitBefore = splitSearchCount();
  const details: ReturnType<typeof threadDelta>[] = [];
  const processCpu: number[] = [];
  for (const query of queries.slice(0, queryCount)) {
    const othersStart = sampleOtherThreads();
    const machineStart = sampleMachine();
    const processStart = process.cpuUsage();
    const ownStart = sampleOwnThread();
    const turnStart = performance.now();
    await turn(query);
    const turnEnd = performance.now();
    const ownEnd = sampleOwnThread();
    const processUsed = process.cpuUsage(processStart);
    const othersEnd = sampleOtherThreads();
    const detail = threadDelta(
      { ...ownStart, ...machineStart, others: othersStart },
      { ...ownEnd, ...sampleMachine(), others: othersEnd },
    );
    turnCpu.push(detail.runMs);
    details.push(detail);
    processCpu.push((processUsed.user + processUsed.system) / 1000);
    latencies.push(turnEnd - turnStart);
    spans.push({ start: turnStart, end: turnEnd });
  }
  const splitSearches = splitSearchCount() - splitBefore;
  await new Promise((resolve) => setTimeout(resolve, 100));
  pauseObserver.disconnect();
  rows.push(["turn: searches split with the scoring worker (splitScoring.ts)", `${splitSearches}`]);
  // The slowest turns (wall), each with what its thread and the process's other threads did, then each replayed
  // once: a turn whose replay costs the same CPU but less wall was waiting, not working.
  const slowest = latencies
    .map((wall, index) => ({ wall, index }))
    .sort((left, right) => right.wall - left.wall)
    .slice(0, 10);
  const describe = (detail: ReturnType<typeof threadDelta>) =>
    `run ${detail.runMs.toFixed(1)} wait ${detail.waitMs.toFixed(1)} ms, faults ${detail.minorFaults}/${detail.majorFaults}, switches ${detail.voluntary}v/${detail.involuntary}i, steal ${detail.stealJiffies} jiffies, runnable ${detail.running}, others ${[
      ...detail.others,
    ]
      .map(([name, ms]) => `${name} ${ms.toFixed(1)}`)
      .join(", ")}`;
  for (const { wall, index } of slowest)
    log(
      `slow turn ${index}: wall ${wall.toFixed(1)} ms, CPU ${turnCpu[index]!.toFixed(1)} (process ${processCpu[index]!.toFixed(1)}); ${describe(details[index]!)}`,
    );
  for (const { index } of slowest) {
    const othersStart = sampleOtherThreads();
    const machineStart = sampleMachine();
    const ownStart = sampleOwnThread();
    const turnStart = performance.now();
    await turn(queries[index]!);
    const wall = performance.now() - turnStart;
    const ownEnd = sampleOwnThread();
    const detail = threadDelta(
      { ...ownStart, ...machineStart, others: othersStart },
      { ...ownEnd, ...sampleMachine(), others: sampleOtherThreads() },
    );
    log(`replayed turn ${index}: wall ${wall.toFixed(1)} ms; ${describe(detail)}`);
  }
  const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
  rows.push([
    "turns: wall / main-thread run / run-queue wait / process CPU, summed; minor faults",
    `${sum(latencies).toFixed(0)} / ${sum(details.map((detail) => detail.runMs)).toFixed(0)} / ${sum(details.map((detail) => detail.waitMs)).toFixed(0)} / ${sum(processCpu).toFixed(0)} ms; ${sum(details.map((detail) => detail.minorFaults))}`,
  ]);
  rows.push([
    `turn (engine.ground, ${latencies.length} queries) p50 / p99`,
    `${percentile(latencies, 0.5).toFixed(1)} / ${percentile(latencies, 0.99).toFixed(1)} ms`,
  ]);
  if (!Number.isNaN(turnCpu[0]!))
    rows.push([
      "turn: main thread CPU p50 / p99; process CPU (every thread: the scoring worker's part too) p50 / p99",
      `${percentile(turnCpu, 0.5).toFixed(1)} / ${percentile(turnCpu, 0.99).toFixed(1)} ms; ${percentile(processCpu, 0.5).toFixed(1)} / ${percentile(processCpu, 0.99).toFixed(1)} ms`,
    ]);
  const paused = spans.map(({ start, end }) =>
    pauses.filter((pause) => pause.start < end && pause.end > start),
  );
  const pausedMs = (found: typeof pauses) => found.reduce((sum, pause) => sum + (pause.end - pause.start), 0);
  const quietLatencies = latencies.filter((_, index) => paused[index]!.length === 0);
  rows.push([
    "turn: collections during the turns (scavenges, major); turns with a pause inside; p99 of the others",
    `${pauses.filter((pause) => !pause.major).length} (${pausedMs(pauses.filter((pause) => !pause.major)).toFixed(0)} ms), ${pauses.filter((pause) => pause.major).length} (${pausedMs(pauses.filter((pause) => pause.major)).toFixed(0)} ms); ${latencies.length - quietLatencies.length}; ${quietLatencies.length > 0 ? percentile(quietLatencies, 0.99).toFixed(1) : "n/a"} ms`,
  ]);
  log(
    `turns p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms`,
  );

  if (!skipArtifact) {
    const directory = mkdtempSync(join(tmpdir(), "lexground-million-"));
    try {
      started = performance.now();
      const key = buildKnowledgeIndexCacheKey(normalized.groups);
      const keySeconds = (performance.now() - started) / 1000;
      started = performance.now();
      const pieces = serializeIndexSnapshotChunks(snapshot, key);
      const artifactPath = join(directory, "kb.lxg");
      const artifactBytes = writeArtifactPieces(artifactPath, pieces);
      pieces.length = 0;
      const writeSeconds = (performance.now() - started) / 1000;
      rows.push(["content key (hash of every entry)", `${keySeconds.toFixed(1)} s`]);
      rows.push([
        "artifact: serialize and write / size",
        `${writeSeconds.toFixed(1)} s / ${(artifactBytes / 1024 ** 3).toFixed(2)} GB`,
      ]);
      log(`artifact ${(artifactBytes / 1024 ** 3).toFixed(2)} GB written in ${writeSeconds.toFixed(1)} s`);

      const query = queries[0]!.query;
      const childPath = writeFirstTurnChild(directory);
      const walls: number[] = [];
      const exitWalls: number[] = [];
      const cpuTimes: number[] = [];
      const bareTimes: number[] = [];
      let rssMb = 0;
      for (let run = 0; run < runs; run++) {
        bareTimes.push(await timeBareNode());
        const result = await timeFirstTurn(childPath, { artifactPath, query });
        if (result.report.origin !== "artifact" || !result.report.grounded)
          throw new Error(`unexpected: ${JSON.stringify(result.report)}`);
        walls.push(result.milliseconds);
        exitWalls.push(result.exitMilliseconds);
        cpuTimes.push(result.report.cpuMs);
        rssMb = Math.max(rssMb, result.report.rssMb);
        log(
          `first turn from the artifact: ${result.milliseconds.toFixed(0)} ms (CPU ${cpuTimes.at(-1)!.toFixed(0)} ms), exit ${result.exitMilliseconds.toFixed(0)} ms`,
        );
      }
      rows.push([
        `first turn from the artifact alone (spawn node → grounded turn), median of ${runs}`,
        `${median(walls).toFixed(0)} ms (CPU ${median(cpuTimes).toFixed(0)} ms), exit ${median(exitWalls).toFixed(0)} ms, RSS ${rssMb} MB`,
      ]);
      rows.push([
        `bare \`node -e ""\` in the same runs, median of ${runs}`,
        `${median(bareTimes).toFixed(0)} ms`,
      ]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  }

  printTable(rows);
}

function printTable(rows: readonly [string, string][]): void {
  console.log(
    `A million entries: ${size.toLocaleString("en-US")} synthetic entries, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), Node ${process.version}, load ${loadavg()[0]!.toFixed(2)} at the end`,
  );
  console.log("");
  console.log("| step | measured |");
  console.log("|---|--:|");
  for (const [step, value] of rows) console.log(`| ${step} | ${value} |`);
}

await main();
