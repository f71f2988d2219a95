/**
 * lexground soak and load harness (RELIABILITY 10, 12, 32, 34, 35, 41): `npm run soak` (not part of `npm test`).
 *
 * (a) 1,000 concurrent turns on one snapshot, issued while it is still being built by ten engines, equal the
 *     same turns run one by one; exactly one build; latency p50/p99 and turns per second.
 * (b) 100,000 turns with the heap sampled every 10,000 (after forced collection): the slope; active resources
 *     after the drain.
 * (c) Cache churn through 10 × KNOWLEDGE_INDEX_CACHE_LIMIT distinct source sets: the cache never exceeds its
 *     limit; heap with the cache full, and back after clearing.
 * (d) Event-loop delay (perf_hooks.monitorEventLoopDelay) while the engine builds the largest registry of the run,
 *     against the 800 ms grounding budget; the synchronous part (validation) measured on its own. Runs first, in
 *     a cold process, as a host's start-up build would.
 * (e) ReDoS timing: every regular expression in src/ on its adversarial corpus (50,000 repeats + mismatching
 *     tails), the slowest input per expression (fastest of three runs each) against 50 ms.
 * (f) Oversized input: 1 MB base64 bodies and 1 M-character tokens (heap retained by the index), a 1 MB query.
 * (g) Phrase lookup on adversarial registries (issue 11, item 3): keys of up to MAX_FIELD_CHARS characters sharing
 *     long prefixes and 1,024-token queries of one repeated word; ground() latency against 50 ms.
 *
 * Every number is measured in this run on this machine; nothing is scaled. Prints a figures table and writes the
 * raw numbers to bench/results/soak-<timestamp>.json. Flags: --entries N (registry of (d), default 100000),
 * --turns N (turns of (b), default 100000), --quick (10k entries, 20k turns), --only <letters> (run only those
 * sections, e.g. `--only g` or `--only e,g`).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import {
  buildIndexSnapshot,
  clearKnowledgeIndexCache,
  DEFAULT_TIMEOUT_MS,
  getKnowledgeIndexCacheSize,
  getOrBuildKnowledgeIndexSnapshot,
  KNOWLEDGE_INDEX_CACHE_LIMIT,
  KnowledgeGroundingEngine,
  type KnowledgeGroundingOutcome,
  type KnowledgeSource,
  MAX_ENTRIES,
  normalizeAndValidate,
} from "../src/index.js";
import { phraseStressCases } from "../test/reliability/phrases.js";
import { findSourceRegexes, MISMATCH_TAILS, redosCorpus, runRegex } from "../test/reliability/redos.js";
import { latencyStats, measureBuild, percentile, requireGc, settle, usedMemory } from "./measure.js";
import { generateSyntheticRegistry } from "./synthetic.js";
import type { BenchQuery } from "./workload.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, "..");

const SECTIONS = ["a", "b", "c", "d", "e", "f", "g"];

type Options = { entries: number; turns: number; output: string | null; only: Set<string> | null };

function parseOptions(argv: readonly string[]): Options {
  const options: Options = { entries: 100_000, turns: 100_000, output: join(HERE, "results"), only: null };
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    const value = () => {
      const next = argv[++index];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      return next;
    };
    if (flag === "--entries") options.entries = Number(value());
    else if (flag === "--turns") options.turns = Number(value());
    else if (flag === "--quick") Object.assign(options, { entries: 10_000, turns: 20_000 });
    else if (flag === "--out") options.output = value() === "none" ? null : argv[index]!;
    else if (flag === "--only")
      options.only = new Set(
        value()
          .split(",")
          .map((letter) => letter.trim()),
      );
    else
      throw new Error(
        `unknown flag ${flag}; usage: npm run soak -- [--entries N] [--turns N] [--quick] [--out dir|none] [--only a,b,…]`,
      );
  }
  if (!(options.entries > 0 && options.entries <= MAX_ENTRIES))
    throw new Error(`--entries must be in 1..${MAX_ENTRIES}`);
  if (!(options.turns >= 10_000)) throw new Error("--turns must be at least 10000");
  for (const letter of options.only ?? [])
    if (!SECTIONS.includes(letter))
      throw new Error(`--only takes section letters among ${SECTIONS.join(", ")}`);
  return options;
}

/** One reported figure: checklist item, what, value, and whether it met its bound (null when it has none). */
type Figure = { item: string; figure: string; value: string; bound: string; ok: boolean | null };
const figures: Figure[] = [];
const raw: Record<string, unknown> = {};

function figure(item: string, name: string, value: string, bound = "", ok: boolean | null = null): void {
  figures.push({ item, figure: name, value, bound, ok });
  console.error(
    `  ${item.padEnd(4)} ${name}: ${value}${bound ? ` (${bound}${ok === null ? "" : ok ? ", met" : ", NOT met"})` : ""}`,
  );
}

const ms = (value: number) => `${value < 10 ? value.toFixed(2) : value.toFixed(0)} ms`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** What two runs of a turn must agree on. */
function turnView(outcome: KnowledgeGroundingOutcome) {
  return JSON.stringify({
    block: outcome.ephemeralContext?.content ?? null,
    selected: outcome.metadata.selectedIds,
    expanded: outcome.metadata.expandedIds,
    candidates: outcome.metadata.candidateCount,
    confidence: outcome.metadata.confidence,
    failure: outcome.metadata.failureReason,
  });
}

function syntheticSources(size: number, seed: number, queryCount: number) {
  const workload = generateSyntheticRegistry({ size, seed, queryCount });
  const sources: KnowledgeSource[] = [{ id: `synthetic-${size}`, version: "1", entries: workload.entries }];
  return { sources, workload };
}

const input = (query: BenchQuery) => ({
  query: query.query,
  recentTurns: query.recentTurns,
  scope: { enabledIntegrations: query.enabledIntegrations },
});

/** (a) RELIABILITY 32. */
async function concurrentTurns(gc: () => void): Promise<void> {
  console.error("(a) 1,000 concurrent turns on one snapshot");
  clearKnowledgeIndexCache();
  const { sources, workload } = syntheticSources(10_000, 32, 1_000);
  const config = { enabled: true, sources, blockedDomains: workload.blockedDomains, timeoutMs: 120_000 };
  settle(gc);
  // Ten engines on the same sources, every turn issued before the snapshot exists.
  const engines = Array.from({ length: 10 }, () => new KnowledgeGroundingEngine(config));
  const started = performance.now();
  const duringBuild = await Promise.all(
    workload.queries.map((query, index) => engines[index % engines.length]!.ground(input(query))),
  );
  const duringBuildMs = performance.now() - started;
  const snapshot = engines[0]!.getSnapshot();
  const oneBuild =
    getKnowledgeIndexCacheSize() === 1 &&
    engines.every((engine) => engine.getSnapshot() === snapshot) &&
    engines.filter((engine) => engine.getStatus().snapshotOrigin === "built").length === 1;

  // The same turns one at a time, then all at once again on the ready snapshot.
  const engine = engines[0]!;
  const sequentialLatencies: number[] = [];
  const sequential: KnowledgeGroundingOutcome[] = [];
  const sequentialStarted = performance.now();
  for (const query of workload.queries) {
    const turnStarted = performance.now();
    sequential.push(await engine.ground(input(query)));
    sequentialLatencies.push(performance.now() - turnStarted);
  }
  const sequentialMs = performance.now() - sequentialStarted;
  const concurrentLatencies: number[] = [];
  const concurrentStarted = performance.now();
  const concurrent = await Promise.all(
    workload.queries.map(async (query) => {
      const turnStarted = performance.now();
      const outcome = await engine.ground(input(query));
      concurrentLatencies.push(performance.now() - turnStarted);
      return outcome;
    }),
  );
  const concurrentMs = performance.now() - concurrentStarted;
  let mismatches = 0;
  let failures = 0;
  sequential.forEach((outcome, index) => {
    const expected = turnView(outcome);
    if (turnView(duringBuild[index]!) !== expected) mismatches++;
    if (turnView(concurrent[index]!) !== expected) mismatches++;
    if (outcome.metadata.failureReason) failures++;
  });
  const sequentialStats = latencyStats(sequentialLatencies);
  const concurrentStats = latencyStats(concurrentLatencies);
  raw.concurrent = {
    turns: workload.queries.length,
    duringBuildMs,
    oneBuild,
    mismatches,
    failures,
    sequentialMs,
    sequentialStats,
    concurrentMs,
    concurrentStats,
  };
  figure(
    "32",
    "concurrent turns equal sequential (1,000 during the build on 10 engines + 1,000 on the ready snapshot)",
    `${mismatches} mismatches of ${2 * workload.queries.length}`,
    "0",
    mismatches === 0 && failures === 0,
  );
  figure(
    "32",
    "index builds for 10 engines × 1,000 concurrent turns",
    oneBuild ? "1 (one cache entry, one 'built' engine, 9 'cache')" : "more than 1",
    "exactly 1",
    oneBuild,
  );
  figure(
    "32",
    "1,000 turns issued during the build: all answered after",
    ms(duringBuildMs),
    "build of 10k entries included",
  );
  figure(
    "32",
    "sequential turn latency p50 / p99 (10k entries)",
    `${ms(sequentialStats.p50)} / ${ms(sequentialStats.p99)}`,
  );
  figure(
    "32",
    "sequential throughput",
    `${(workload.queries.length / (sequentialMs / 1000)).toFixed(0)} turns/s`,
  );
  figure(
    "32",
    "1,000 concurrent turns: completion p50 / p99 (queued on one thread)",
    `${ms(concurrentStats.p50)} / ${ms(concurrentStats.p99)}`,
  );
  figure(
    "32",
    "concurrent throughput",
    `${(workload.queries.length / (concurrentMs / 1000)).toFixed(0)} turns/s`,
  );
}

/** Least-squares slope of y over x. */
function slope(points: readonly [number, number][]): number {
  const n = points.length;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (const [x, y] of points) {
    numerator += (x - meanX) * (y - meanY);
    denominator += (x - meanX) ** 2;
  }
  return denominator === 0 ? 0 : numerator / denominator;
}

/** (b) RELIABILITY 35. */
async function longSoak(gc: () => void, turns: number): Promise<void> {
  console.error(`(b) ${turns.toLocaleString("en-US")} turns, heap sampled every 10,000`);
  clearKnowledgeIndexCache();
  const { sources, workload } = syntheticSources(10_000, 35, 2_000);
  const engine = new KnowledgeGroundingEngine({
    enabled: true,
    sources,
    blockedDomains: workload.blockedDomains,
  });
  await engine.ready();
  // Warm up: JIT, the eligibility masks of the scopes, the render memo.
  for (const query of workload.warmupQueries) await engine.ground(input(query));
  for (const query of workload.queries) await engine.ground(input(query));
  const samples: [number, number][] = [[0, settle(gc)]];
  let failures = 0;
  const started = performance.now();
  for (let turn = 1; turn <= turns; turn++) {
    const outcome = await engine.ground(input(workload.queries[turn % workload.queries.length]!));
    if (outcome.metadata.failureReason) failures++;
    if (turn % 10_000 === 0) samples.push([turn, settle(gc)]);
  }
  const elapsed = performance.now() - started;
  await new Promise<void>((resolve) => setImmediate(resolve));
  const resources = process.getActiveResourcesInfo();
  const perTenThousand = slope(samples) * 10_000;
  const growth = samples[samples.length - 1]![1] - samples[0]![1];
  raw.soak = {
    turns,
    elapsedMs: elapsed,
    failures,
    samples,
    slopeBytesPer10k: perTenThousand,
    growthBytes: growth,
    activeResources: resources,
  };
  figure(
    "35",
    `heap across ${turns.toLocaleString("en-US")} turns (after gc)`,
    `${mb(samples[0]![1])} → ${mb(samples[samples.length - 1]![1])}`,
  );
  figure(
    "35",
    "heap slope (least squares over 10k-turn samples)",
    `${(perTenThousand / 1024).toFixed(1)} KB per 10,000 turns`,
    "< 1 MB per 10,000 turns",
    Math.abs(perTenThousand) < 1024 * 1024,
  );
  figure("35", "turns failed open during the soak", String(failures), "0", failures === 0);
  figure("35", "soak throughput", `${(turns / (elapsed / 1000)).toFixed(0)} turns/s`);
  const timers = resources.filter((name) => name === "Timeout" || name === "Immediate").length;
  figure(
    "35",
    "process.getActiveResourcesInfo() after the drain",
    JSON.stringify(resources),
    "no Timeout/Immediate",
    timers === 0,
  );
}

/** (c) RELIABILITY 34. */
async function cacheChurn(gc: () => void): Promise<void> {
  const sets = 10 * KNOWLEDGE_INDEX_CACHE_LIMIT;
  console.error(`(c) cache churn through ${sets} distinct source sets`);
  clearKnowledgeIndexCache();
  const { workload } = syntheticSources(500, 34, 10);
  const baseline = settle(gc);
  let maxSize = 0;
  let full = 0;
  for (let index = 0; index < sets; index++) {
    // A distinct source id gives a distinct key, so every set is built and the oldest evicted.
    await getOrBuildKnowledgeIndexSnapshot([
      { id: `churn-${index}`, version: "1", entries: workload.entries },
    ]);
    maxSize = Math.max(maxSize, getKnowledgeIndexCacheSize());
    if (index === sets - 1) full = settle(gc);
  }
  clearKnowledgeIndexCache();
  const after = settle(gc);
  raw.churn = {
    sets,
    limit: KNOWLEDGE_INDEX_CACHE_LIMIT,
    maxSize,
    baseline,
    full,
    after,
    entriesPerSet: workload.entries.length,
  };
  figure(
    "34",
    `cache size during churn of ${sets} sets (limit ${KNOWLEDGE_INDEX_CACHE_LIMIT})`,
    `max ${maxSize}`,
    `≤ ${KNOWLEDGE_INDEX_CACHE_LIMIT}`,
    maxSize <= KNOWLEDGE_INDEX_CACHE_LIMIT,
  );
  figure(
    "34",
    "heap: baseline → cache full (32 × 500-entry snapshots) → after clear",
    `${mb(baseline)} → ${mb(full)} → ${mb(after)}`,
  );
  figure(
    "34",
    "heap left after clearing the churned cache",
    mb(after - baseline),
    "< 5 MB over baseline",
    after - baseline < 5 * 1024 * 1024,
  );
}

/** (d) RELIABILITY 41. */
async function eventLoopDuringBuild(gc: () => void, size: number): Promise<void> {
  console.error(`(d) event-loop delay while building ${size.toLocaleString("en-US")} entries`);
  clearKnowledgeIndexCache();
  const generationStarted = performance.now();
  const { sources, workload } = syntheticSources(size, 41, 20);
  const generationMs = performance.now() - generationStarted;
  settle(gc);
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const started = performance.now();
  const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
  const constructorMs = performance.now() - started;
  // A turn arriving with the default budget while the index is built.
  const turnStarted = performance.now();
  const turn = engine
    .ground(input(workload.queries[0]!))
    .then((outcome) => ({ outcome, ms: performance.now() - turnStarted }));
  await engine.ready();
  const buildMs = performance.now() - started;
  histogram.disable();
  const { outcome, ms: turnMs } = await turn;
  const toMs = (nanoseconds: number) => nanoseconds / 1e6;
  const delay = {
    p50: toMs(histogram.percentile(50)),
    p99: toMs(histogram.percentile(99)),
    max: toMs(histogram.max),
    samples: histogram.count,
  };
  const status = engine.getStatus();
  raw.eventLoop = {
    entries: size,
    generationMs,
    constructorMs,
    buildMs,
    delay,
    turnMs,
    turnFailure: outcome.metadata.failureReason ?? null,
    ready: status.ready,
    heapAfterBuild: usedMemory(),
  };
  figure(
    "41",
    `build of ${size.toLocaleString("en-US")} synthetic entries (~250 tokens each)`,
    `${(buildMs / 1000).toFixed(1)} s`,
    `documented limit ${MAX_ENTRIES.toLocaleString("en-US")} entries`,
    status.ready && status.entryCount === size,
  );
  figure(
    "41",
    "synchronous part before the first yield (constructor: validation and copying)",
    ms(constructorMs),
    `budget ${DEFAULT_TIMEOUT_MS} ms`,
    constructorMs < DEFAULT_TIMEOUT_MS,
  );
  figure(
    "41",
    "event-loop delay from the constructor's return to the end of the build p50 / p99 / max",
    `${ms(delay.p50)} / ${ms(delay.p99)} / ${ms(delay.max)}`,
    `p99 under ${DEFAULT_TIMEOUT_MS} ms`,
    delay.p99 < DEFAULT_TIMEOUT_MS,
  );
  figure(
    "18",
    "a turn issued during that build (800 ms budget): answered after",
    `${ms(turnMs)} (${outcome.metadata.failureReason ?? "grounded"})`,
    `≤ ${DEFAULT_TIMEOUT_MS} ms + one slice`,
    turnMs < DEFAULT_TIMEOUT_MS + 100,
  );
}

/** (e) RELIABILITY 12. */
function redosTiming(): void {
  console.error("(e) ReDoS corpus timing");
  const found = findSourceRegexes(REPO_ROOT);
  const rows: { location: string; text: string; inputs: number; maxMs: number; worst: string }[] = [];
  let inputs = 0;
  for (const item of found) {
    if (!item.regex) continue;
    let maxMs = 0;
    let worst = "";
    runRegex(item.regex, "warm up the compiled expression");
    for (const candidate of redosCorpus(item, 50_000, MISMATCH_TAILS)) {
      // The fastest of three runs: the cost of the expression itself, not a pause of this shared machine.
      let elapsed = Number.POSITIVE_INFINITY;
      for (let run = 0; run < 3; run++) {
        const started = performance.now();
        runRegex(item.regex, candidate.text);
        elapsed = Math.min(elapsed, performance.now() - started);
      }
      inputs++;
      if (elapsed > maxMs) {
        maxMs = elapsed;
        worst = `${JSON.stringify(candidate.pump)}×50k+${JSON.stringify(candidate.tail)}`;
      }
    }
    rows.push({
      location: item.location,
      text: item.text,
      inputs: redosCorpus(item, 1).length,
      maxMs,
      worst,
    });
  }
  rows.sort((left, right) => right.maxMs - left.maxMs);
  raw.redos = { regexes: rows.length, inputs, rows };
  const over = rows.filter((row) => row.maxMs >= 50);
  figure(
    "12",
    `ReDoS corpus: ${rows.length} regexes × ${inputs.toLocaleString("en-US")} inputs of 50k repeats + tail`,
    `slowest call ${ms(rows[0]?.maxMs ?? 0)} (${rows[0]?.location} ${rows[0]?.worst})`,
    "< 50 ms per call",
    over.length === 0,
  );
  for (const row of rows.slice(0, 5))
    console.error(`       ${ms(row.maxMs).padStart(9)}  ${row.location}  ${row.text}`);
}

/** (f) RELIABILITY 9 and 10. */
async function oversizedInput(gc: () => void): Promise<void> {
  console.error("(f) oversized bodies, tokens and queries");
  const base64 = () => randomBytes(750_000).toString("base64"); // exactly 1,000,000 characters
  const entryWith = (id: string, body: string) => ({
    id,
    title: `Entry ${id}`,
    summary: "Large body",
    domain: "d",
    integrations: [],
    body,
  });
  for (const [label, makeBody] of [
    ["1 MB base64 blob", base64],
    ["1 M-character single token", () => "q".repeat(1_000_000)],
  ] as const) {
    const { entries } = normalizeAndValidate(
      [{ id: "big", entries: Array.from({ length: 10 }, (_, index) => entryWith(`e${index}`, makeBody())) }],
      { manifestVersion: "1" },
    );
    const built = await measureBuild(gc, () => buildIndexSnapshot(entries));
    raw[`oversized ${label}`] = {
      entries: 10,
      milliseconds: built.milliseconds,
      retainedBytes: built.retainedBytes,
    };
    figure(
      "10",
      `10 entries with a ${label} body: index build, heap retained by the index`,
      `${ms(built.milliseconds)}, ${mb(built.retainedBytes)}`,
      "tokens capped at 128 code units",
    );
  }
  clearKnowledgeIndexCache();
  const { sources, workload } = syntheticSources(10_000, 9, 10);
  const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
  await engine.ready();
  for (const [label, query] of [
    ["1 MB base64 query", base64()],
    [
      "1 MB prose query",
      `${workload.queries[0]!.query} `
        .repeat(Math.ceil(1_000_000 / (workload.queries[0]!.query.length + 1)))
        .slice(0, 1_000_000),
    ],
  ] as const) {
    const latencies: number[] = [];
    let failure: string | undefined;
    for (let run = 0; run < 20; run++) {
      const started = performance.now();
      const outcome = await engine.ground({ query });
      latencies.push(performance.now() - started);
      failure ??= outcome.metadata.failureReason;
    }
    const sorted = latencies.sort((left, right) => left - right);
    raw[`query ${label}`] = { latencies: sorted, failure: failure ?? null };
    figure(
      "9",
      `${label} on 10k entries: turn latency p50 / max of 20`,
      `${ms(percentile(sorted, 0.5))} / ${ms(sorted[sorted.length - 1]!)}${failure ? ` (${failure})` : ""}`,
      `< ${DEFAULT_TIMEOUT_MS} ms`,
      !failure && sorted[sorted.length - 1]! < DEFAULT_TIMEOUT_MS,
    );
  }
}

/** (g) Issue 11, item 3: phrase lookup bounded by what matches. */
async function phraseLookup(gc: () => void): Promise<void> {
  console.error("(g) phrase lookup on adversarial registries");
  for (const stress of phraseStressCases("full")) {
    clearKnowledgeIndexCache();
    settle(gc);
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: stress.sources });
    await engine.ready();
    // Warm-up, then 20 measured turns. CPU time is reported beside wall time: on a shared machine the wall time
    // includes waiting for a core, the CPU time is what the turn itself costs.
    await engine.ground({ query: stress.query });
    const latencies: number[] = [];
    const cpuTimes: number[] = [];
    let failure: string | undefined;
    for (let run = 0; run < 20; run++) {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const outcome = await engine.ground({ query: stress.query });
      latencies.push(performance.now() - started);
      const cpu = process.cpuUsage(cpuBefore);
      cpuTimes.push((cpu.user + cpu.system) / 1000);
      failure ??= outcome.metadata.failureReason;
    }
    const sorted = latencies.sort((left, right) => left - right);
    const sortedCpu = cpuTimes.sort((left, right) => left - right);
    raw[`phrase lookup ${stress.name}`] = {
      latencies: sorted,
      cpuTimes: sortedCpu,
      failure: failure ?? null,
    };
    const cpuP50 = percentile(sortedCpu, 0.5);
    figure(
      "11.3",
      `${stress.name}: ground() of 20 turns, wall p50 / max (CPU p50)`,
      `${ms(percentile(sorted, 0.5))} / ${ms(sorted[sorted.length - 1]!)} (${ms(cpuP50)})${failure ? ` (${failure})` : ""}`,
      "CPU p50 < 50 ms",
      !failure && cpuP50 < 50,
    );
  }
  clearKnowledgeIndexCache();
}

function machine() {
  return {
    node: process.version,
    cpus: cpus()[0]?.model ?? "unknown",
    parallelism: availableParallelism(),
    memory: mb(totalmem()),
    loadAverage: loadavg()
      .map((value) => value.toFixed(2))
      .join(" "),
  };
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const gc = requireGc();
  const started = performance.now();
  const before = machine();
  console.error(
    `lexground soak — node ${before.node}, ${before.parallelism} cores (${before.cpus}), load ${before.loadAverage}`,
  );
  // First, while the process is cold: a host builds its registry at start-up, before any JIT warm-up.
  const runs = (section: string) => options.only === null || options.only.has(section);
  if (runs("d")) await eventLoopDuringBuild(gc, options.entries);
  if (runs("a")) await concurrentTurns(gc);
  if (runs("b")) await longSoak(gc, options.turns);
  if (runs("c")) await cacheChurn(gc);
  if (runs("f")) await oversizedInput(gc);
  if (runs("e")) redosTiming();
  if (runs("g")) await phraseLookup(gc);
  clearKnowledgeIndexCache();
  const totalMs = performance.now() - started;
  const after = machine();

  const lines = [
    `# lexground soak — ${new Date().toISOString()}`,
    "",
    `node ${before.node}; ${before.parallelism} cores (${before.cpus}); ${before.memory}; load average ${before.loadAverage} before, ${after.loadAverage} after (a shared machine: figures are noisy); total ${(totalMs / 1000).toFixed(0)} s; command: npm run soak${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    "",
    "| item | figure | value | bound | met |",
    "| --- | --- | --- | --- | --- |",
    ...figures.map(
      (row) =>
        `| ${row.item} | ${row.figure} | ${row.value.replaceAll("|", "\\|")} | ${row.bound} | ${row.ok === null ? "" : row.ok ? "yes" : "**no**"} |`,
    ),
  ];
  console.log(lines.join("\n"));
  if (options.output) {
    mkdirSync(options.output, { recursive: true });
    const file = join(options.output, `soak-${new Date().toISOString().replaceAll(":", "-")}.json`);
    writeFileSync(
      file,
      `${JSON.stringify({ options, machine: { before, after }, totalMs, figures, raw }, null, 2)}\n`,
    );
    console.error(`raw numbers: ${file}`);
  }
  const unmet = figures.filter((row) => row.ok === false);
  if (unmet.length > 0) {
    console.error(`${unmet.length} figure(s) did not meet their bound`);
    process.exitCode = 1;
  }
}

await main();
