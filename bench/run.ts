/**
 * lexground benchmark: builds and queries lexground, the plain baseline, MiniSearch and Orama on the same
 * registries and queries in one process and one run, prints Markdown tables and writes the raw numbers as JSON
 * to bench/results/<timestamp>.json. Run with `npm run bench -- [flags]`; see bench/README.md.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { isKnowledgePresetName, normalizeAndValidate, resolveRetrieval } from "../src/index.js";
import type { PostgresBackend } from "../src/postgres/index.js";
import type { KnowledgePresetName, KnowledgeSelection, KnowledgeSource } from "../src/types/knowledge.js";
import { loadDataset } from "./datasets.js";
import {
  type BenchSettings,
  type BuiltIndex,
  IMPLEMENTATIONS,
  type Implementation,
  lexgroundWithPreset,
  type TurnRunner,
  type TurnSummary,
} from "./implementations.js";
import {
  type LatencyStats,
  latencyStats,
  measureBuild,
  measureSeries,
  requireGc,
  settle,
} from "./measure.js";
import {
  concurrentTurns,
  hasFleetTurns,
  lexgroundPostgres,
  postgresServer,
  replicaLagMilliseconds,
} from "./postgres.js";
import { generateSyntheticRegistry } from "./synthetic.js";
import { measureUpdates, printUpdates, type UpdateReport } from "./updates.js";
import type { BenchQuery, Workload } from "./workload.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, "..");
/** The shared BEIR collections, read in place next to the repository. */
const DATASET_ROOT = resolve(REPO_ROOT, "..", "shared", "datasets");

type Options = {
  sizes: number[];
  datasets: string[];
  queries: number;
  skipPlain: boolean;
  skipPeers: boolean;
  /** `--backend postgres` (a throwaway cluster) or `--backend postgres://…`: also measure the PostgreSQL backend. */
  backend: string | null;
  /** Concurrent clients of the throughput measurement (with `--backend`). */
  clients: number;
  /**
   * With `--backend`: the same clients also spread over this many reader processes (replicas of a fleet on this
   * machine; `--reader-processes`, default 2; 1 or less: not measured).
   */
  readerProcesses: number;
  /** `--replica` (a streaming replica of the throwaway cluster) or `--replica postgres://…`: turns read there too. */
  replica: string | boolean;
  /** Presets measured as extra lexground rows (`--preset recommended`). */
  presets: KnowledgePresetName[];
  seed: number;
  /** Measured milliseconds after which one series (one implementation, one query kind) stops early. */
  seriesBudgetMs: number;
  /** Build repetitions when one build takes under 5 s (slower builds are measured once). */
  buildRepeats: number;
  /** Set by `--build-repeats`: repeat every build that many times, however long it takes. */
  forceBuildRepeats: boolean;
  output: string | null;
  /** Run the update scenario after each synthetic workload (`--updates`). */
  updates: boolean;
};

const USAGE = `usage: npm run bench -- [--sizes 1000,10000,100000] [--datasets scifact,nfcorpus|none]
  [--queries N] [--skip-plain] [--skip-peers] [--preset name,…] [--quick] [--seed N] [--budget-ms N] [--build-repeats N]
  [--out file.json|none] [--backend postgres|postgres://…] [--replica [postgres://…]] [--clients N]
  [--reader-processes N] [--updates]`;

function parseOptions(argv: readonly string[]): Options {
  const options: Options = {
    sizes: [1_000, 10_000, 100_000],
    datasets: ["scifact", "nfcorpus"],
    queries: 300,
    skipPlain: false,
    skipPeers: false,
    updates: false,
    presets: [],
    backend: null,
    replica: false,
    clients: 16,
    readerProcesses: 2,
    seed: 20_260_714,
    seriesBudgetMs: 3_000,
    buildRepeats: 3,
    forceBuildRepeats: false,
    output: "",
  };
  const explicit = new Set<string>();
  const quick = argv.includes("--quick");
  if (quick) {
    options.sizes = [1_000, 10_000];
    options.datasets = ["scifact"];
    options.queries = 100;
    options.seriesBudgetMs = 3_000;
    options.buildRepeats = 1;
  }
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!;
    const value = () => {
      const next = argv[++index];
      if (next === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
      explicit.add(flag);
      return next;
    };
    const integer = (text: string) => {
      const parsed = Number(text);
      if (!Number.isInteger(parsed) || parsed < 0)
        throw new Error(`${flag}: not a non-negative integer: ${text}`);
      return parsed;
    };
    switch (flag) {
      case "--sizes":
        options.sizes = value()
          .split(",")
          .filter((part) => part !== "" && part !== "none")
          .map(integer)
          .filter((size) => size > 0);
        break;
      case "--datasets":
        options.datasets = value()
          .split(",")
          .filter((part) => part !== "" && part !== "none");
        break;
      case "--queries":
        options.queries = Math.max(1, integer(value()));
        break;
      case "--skip-plain":
        options.skipPlain = true;
        break;
      case "--preset": {
        const names = value()
          .split(",")
          .map((name) => name.trim())
          .filter((name) => name !== "");
        for (const name of names)
          if (!isKnowledgePresetName(name)) throw new Error(`--preset: unknown preset "${name}"\n${USAGE}`);
        options.presets = names as KnowledgePresetName[];
        break;
      }
      case "--skip-peers":
        options.skipPeers = true;
        break;
      case "--backend": {
        const backend = value();
        if (backend !== "postgres" && !/^postgres(ql)?:\/\//.test(backend))
          throw new Error(`--backend: postgres or a postgres:// URL, got ${backend}`);
        options.backend = backend;
        break;
      }
      case "--replica": {
        const next = argv[index + 1];
        if (next !== undefined && /^postgres(ql)?:\/\//.test(next)) {
          options.replica = next;
          index++;
        } else options.replica = true;
        break;
      }
      case "--clients":
        options.clients = Math.max(1, integer(value()));
        break;
      case "--reader-processes":
        options.readerProcesses = integer(value());
        break;
      case "--updates":
        options.updates = true;
        break;
      case "--quick":
        break;
      case "--seed":
        options.seed = integer(value());
        break;
      case "--budget-ms":
        options.seriesBudgetMs = integer(value());
        break;
      case "--build-repeats":
        options.buildRepeats = Math.max(1, integer(value()));
        options.forceBuildRepeats = true;
        break;
      case "--out": {
        const path = value();
        options.output = path === "none" ? null : path;
        break;
      }
      case "--help":
      case "-h":
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown flag ${flag}\n${USAGE}`);
    }
  }
  return options;
}

// Workloads ---------------------------------------------------------------------------------------------------

function normalizeWorkload(
  name: string,
  description: string,
  sources: KnowledgeSource[],
  queries: BenchQuery[],
  warmupQueries: BenchQuery[],
  blockedDomains: string[],
): Workload {
  const { entries, validation } = normalizeAndValidate(sources, { manifestVersion: "0" });
  if (!validation.ok) {
    const first = validation.issues.find((issue) => issue.level === "error");
    throw new Error(`${name}: the registry does not validate: ${first?.code} ${first?.message}`);
  }
  return { name, description, sources, entries, queries, warmupQueries, blockedDomains };
}

function syntheticWorkload(size: number, options: Options): Workload {
  const generated = generateSyntheticRegistry({
    size,
    seed: options.seed + size,
    queryCount: options.queries,
  });
  return normalizeWorkload(
    `synthetic-${size >= 1000 && size % 1000 === 0 ? `${size / 1000}k` : size}`,
    `${size} generated entries (Zipf 1.0 over 50k words; title~4/aliases~3/keywords~5/summary~20/body~200 tokens), ` +
      `${generated.queries.length} generated turns, blocked domains ${generated.blockedDomains.join(", ")}`,
    [{ id: "synthetic", version: "1", entries: generated.entries }],
    generated.queries,
    generated.warmupQueries,
    generated.blockedDomains,
  );
}

function datasetWorkload(name: string, options: Options): Workload {
  const dataset = loadDataset(DATASET_ROOT, name);
  const queries = dataset.queries.slice(0, options.queries);
  return normalizeWorkload(
    name,
    `BEIR ${name}: ${dataset.entries.length} documents (title→title, first sentence→summary, text→body), ` +
      `${queries.length} test queries`,
    [{ id: name, version: "1", entries: dataset.entries }],
    queries,
    dataset.warmupQueries,
    [],
  );
}

// Measurement -------------------------------------------------------------------------------------------------

/** Measured queries per series even when the time budget is spent (slow implementations on big registries). */
const MINIMUM_MEASURED = 5;
/** Builds faster than this are repeated `buildRepeats` times. */
const REPEAT_BUILDS_UNDER_MS = 5_000;

type SeriesResult<R> = { stats: LatencyStats; latencies: number[]; results: R[] };

type ImplementationResult = {
  name: string;
  build: {
    milliseconds: number[];
    medianMilliseconds: number;
    retainedBytes: number[];
    medianRetainedBytes: number;
  };
  /** Preparing whole turns (lexground: engine construction until ready, from raw sources). */
  turnPreparation: { milliseconds: number; retainedBytes: number };
  lexical: SeriesResult<string[]>;
  select: SeriesResult<KnowledgeSelection>;
  turn: SeriesResult<TurnSummary>;
  failedTurns: number;
  /** Turns of `clients` concurrent clients (measured with `--backend`, for lexground and its PostgreSQL backend). */
  concurrent?: Awaited<ReturnType<typeof concurrentTurns>>;
  /** The same clients over `--reader-processes` reader processes (the PostgreSQL backend's rows). */
  fleet?: Awaited<ReturnType<import("./postgres.js").FleetImplementation["fleetTurns"]>>;
};

function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** An implementation after its build and turn preparation, before its query series. */
type Prepared = {
  implementation: Implementation;
  index: BuiltIndex;
  runner: TurnRunner;
  build: ImplementationResult["build"];
  turnPreparation: ImplementationResult["turnPreparation"];
};

async function prepareImplementation(
  gc: () => void,
  implementation: Implementation,
  workload: Workload,
  settings: BenchSettings,
  options: Options,
): Promise<Prepared> {
  const buildMilliseconds: number[] = [];
  const retained: number[] = [];
  let built: BuiltIndex | null = null;
  // Quick builds are repeated (median reported) to smooth out JIT warm-up; slow ones are measured once.
  for (
    let repeat = 0;
    repeat < Math.max(1, options.buildRepeats) &&
    (repeat === 0 || options.forceBuildRepeats || buildMilliseconds[0]! < REPEAT_BUILDS_UNDER_MS);
    repeat++
  ) {
    built = null; // the previous copy must be collectable before the next measurement starts
    const measured = await measureBuild(gc, () => implementation.build(workload, settings));
    built = measured.value;
    buildMilliseconds.push(measured.milliseconds);
    retained.push(measured.retainedBytes);
  }
  const index = built!;
  const preparation = await measureBuild(gc, () => implementation.prepareTurns(workload, settings, index));
  console.error(
    `[${workload.name}] ${implementation.name} built in ${buildMilliseconds.map((value) => value.toFixed(0)).join(", ")} ms` +
      ` (turn preparation ${preparation.milliseconds.toFixed(0)} ms)`,
  );
  return {
    implementation,
    index,
    runner: preparation.value,
    build: {
      milliseconds: buildMilliseconds,
      medianMilliseconds: median(buildMilliseconds),
      retainedBytes: retained,
      medianRetainedBytes: median(retained),
    },
    turnPreparation: { milliseconds: preparation.milliseconds, retainedBytes: preparation.retainedBytes },
  };
}

/**
 * Runs one kind of query on the given implementations, interleaved: query i goes to each implementation in turn
 * (starting with a different one each time) before query i + 1. The harness passes one implementation at a time
 * (see {@link measureWorkload}). An implementation whose measured time exceeds the budget drops out once it has run
 * `MINIMUM_MEASURED` queries.
 */
async function measureInterleaved<R>(
  gc: () => void,
  prepared: readonly Prepared[],
  workload: Workload,
  budgetMs: number,
  operation: (item: Prepared, query: BenchQuery) => R | Promise<R>,
): Promise<SeriesResult<R>[]> {
  for (const item of prepared) {
    // Warm-up is bounded too (a fifth of the budget, at least 1 query), so slow implementations do not run long.
    await measureSeries(
      workload.warmupQueries,
      (query) => operation(item, query),
      budgetMs / 5,
      Math.min(1, workload.warmupQueries.length),
    );
  }
  settle(gc);
  const latencies = prepared.map(() => [] as number[]);
  const results = prepared.map(() => [] as R[]);
  const spent = prepared.map(() => 0);
  const minimum = Math.min(MINIMUM_MEASURED, workload.queries.length);
  for (let queryIndex = 0; queryIndex < workload.queries.length; queryIndex++) {
    const query = workload.queries[queryIndex]!;
    let active = 0;
    for (let offset = 0; offset < prepared.length; offset++) {
      const position = (queryIndex + offset) % prepared.length;
      // An implementation stops at the end of its budget, but only ever after a contiguous prefix of queries.
      if (latencies[position]!.length < queryIndex) continue;
      const measured = latencies[position]!.length;
      // Very slow implementations (a few queries already took three budgets) stop after 3 queries instead of 5.
      const enough = measured >= minimum || (measured >= 3 && spent[position]! >= 3 * budgetMs);
      if (spent[position]! >= budgetMs && enough) continue;
      active++;
      const started = performance.now();
      let result = operation(prepared[position]!, query);
      if (result instanceof Promise) result = await result;
      const elapsed = performance.now() - started;
      latencies[position]!.push(elapsed);
      results[position]!.push(result as R);
      spent[position]! += elapsed;
    }
    if (active === 0) break;
  }
  return prepared.map((_, position) => ({
    stats: latencyStats(latencies[position]!),
    latencies: latencies[position]!,
    results: results[position]!,
  }));
}

async function measureWorkload(
  gc: () => void,
  implementations: readonly Implementation[],
  workload: Workload,
  settings: BenchSettings,
  options: Options,
): Promise<ImplementationResult[]> {
  const results: ImplementationResult[] = [];
  const budget = options.seriesBudgetMs;
  // One implementation at a time: only its index is alive while it is measured, so the garbage collections in
  // its numbers are its own (with every index alive, each full collection walks all of them, gigabytes at 100k).
  for (const implementation of implementations) {
    let item: Prepared | null = await prepareImplementation(gc, implementation, workload, settings, options);
    const only = [item];
    const started = performance.now();
    const lexical = await measureInterleaved(gc, only, workload, budget, (prepared, query) =>
      prepared.index.lexical(query),
    );
    const select = await measureInterleaved(gc, only, workload, budget, (prepared, query) =>
      prepared.index.select(query),
    );
    const turn = await measureInterleaved(gc, only, workload, budget, (prepared, query) =>
      prepared.runner.turn(query),
    );
    console.error(
      `[${workload.name}] ${implementation.name} queries measured in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const concurrent =
      options.backend !== null &&
      (implementation.name === "lexground" || implementation.name.startsWith("lexground:postgres"))
        ? await concurrentTurns(item.runner, workload.queries, options.clients, Math.max(budget, 5_000))
        : undefined;
    item.runner.dispose?.();
    const fleet =
      options.readerProcesses > 1 && hasFleetTurns(implementation)
        ? await implementation.fleetTurns(
            workload,
            options.clients,
            Math.max(budget, 5_000),
            options.readerProcesses,
          )
        : undefined;
    results.push({
      name: implementation.name,
      build: item.build,
      turnPreparation: item.turnPreparation,
      lexical: lexical[0]!,
      select: select[0]!,
      turn: turn[0]!,
      failedTurns: turn[0]!.results.filter((result) => result.failureReason !== undefined).length,
      ...(concurrent ? { concurrent } : {}),
      ...(fleet ? { fleet } : {}),
    });
    only.length = 0;
    item = null;
    settle(gc);
  }
  return results;
}

// Agreement between lexground and the plain oracle ------------------------------------------------------------

type Agreement = {
  compared: number;
  identical: number;
  maxRelativeScoreDifference: number;
  firstDifference?: string;
};

function relativeDifference(left: number, right: number): number {
  if (left === right) return 0;
  return Math.abs(left - right) / Math.max(Math.abs(left), Math.abs(right), Number.MIN_VALUE);
}

function compareSelections(
  queries: readonly BenchQuery[],
  ours: readonly KnowledgeSelection[],
  theirs: readonly KnowledgeSelection[],
): Agreement {
  const compared = Math.min(ours.length, theirs.length);
  let identical = 0;
  let maxRelativeScoreDifference = 0;
  let firstDifference: string | undefined;
  for (let index = 0; index < compared; index++) {
    const left = ours[index]!;
    const right = theirs[index]!;
    const problems: string[] = [];
    const ids = (selection: KnowledgeSelection, key: "primary" | "expanded") =>
      selection[key].map((entry) => entry.id).join(",");
    if (ids(left, "primary") !== ids(right, "primary")) problems.push("primary ids");
    if (ids(left, "expanded") !== ids(right, "expanded")) problems.push("expanded ids");
    if (left.confidence !== right.confidence)
      problems.push(`confidence ${left.confidence}/${right.confidence}`);
    if (left.candidateCount !== right.candidateCount) {
      problems.push(`candidateCount ${left.candidateCount}/${right.candidateCount}`);
    }
    if (left.candidates.length !== right.candidates.length) problems.push("candidate count after cut");
    for (let position = 0; position < Math.min(left.candidates.length, right.candidates.length); position++) {
      const a = left.candidates[position]!;
      const b = right.candidates[position]!;
      if (a.id !== b.id) {
        problems.push(`candidate ${position}: ${a.id} vs ${b.id}`);
        break;
      }
      const difference = relativeDifference(a.score, b.score);
      maxRelativeScoreDifference = Math.max(maxRelativeScoreDifference, difference);
      if (difference > 1e-9) problems.push(`candidate ${position} score ${a.score} vs ${b.score}`);
    }
    if (problems.length === 0) identical++;
    else
      firstDifference ??= `query ${index} ${JSON.stringify(queries[index]!.query.slice(0, 80))}: ${problems.join("; ")}`;
  }
  return { compared, identical, maxRelativeScoreDifference, firstDifference };
}

function compareTurns(ours: readonly TurnSummary[], theirs: readonly TurnSummary[]): Agreement {
  const compared = Math.min(ours.length, theirs.length);
  let identical = 0;
  let firstDifference: string | undefined;
  for (let index = 0; index < compared; index++) {
    const left = ours[index]!;
    const right = theirs[index]!;
    if (
      left.selectedIds.join(",") === right.selectedIds.join(",") &&
      left.contextTokens === right.contextTokens
    ) {
      identical++;
    } else {
      firstDifference ??= `turn ${index}: [${left.selectedIds.join(",")}] ${left.contextTokens} tokens vs [${right.selectedIds.join(",")}] ${right.contextTokens} tokens`;
    }
  }
  return { compared, identical, maxRelativeScoreDifference: 0, firstDifference };
}

// Reporting ---------------------------------------------------------------------------------------------------

/** `value ÷ lexground's value` for a statistic, both over the first `count` queries (the common prefix). */
function prefixRatio(
  mine: readonly number[],
  ours: readonly number[],
  pick: (stats: LatencyStats) => number,
): { ratio: number; count: number } {
  const count = Math.min(mine.length, ours.length);
  if (count === 0) return { ratio: Number.NaN, count };
  return {
    ratio: pick(latencyStats(mine.slice(0, count))) / pick(latencyStats(ours.slice(0, count))),
    count,
  };
}

const milliseconds = (value: number) =>
  Number.isNaN(value)
    ? "–"
    : value >= 100
      ? value.toFixed(0)
      : value >= 1
        ? value.toFixed(2)
        : value.toFixed(3);
const ratio = (value: number) =>
  Number.isNaN(value) ? "–" : value >= 10 ? value.toFixed(1) : value.toFixed(2);
const megabytes = (bytes: number) => (bytes / 1048576).toFixed(1);
const rate = (value: number) =>
  Number.isNaN(value) ? "–" : value >= 100 ? value.toFixed(0) : value.toFixed(1);

type WorkloadReport = {
  name: string;
  description: string;
  entryCount: number;
  activeEntryCount: number;
  queryCount: number;
  implementations: ReturnType<typeof implementationReport>[];
  agreement: { selections?: Agreement; turns?: Agreement };
  notes: string[];
  updates?: UpdateReport;
};

function implementationReport(result: ImplementationResult, ours: ImplementationResult) {
  const kinds = ["turn", "select", "lexical"] as const;
  const ratios: Record<string, number> = {
    buildMilliseconds: result.build.medianMilliseconds / ours.build.medianMilliseconds,
    retainedBytes: result.build.medianRetainedBytes / ours.build.medianRetainedBytes,
  };
  const comparedQueries: Record<string, number> = {};
  for (const kind of kinds) {
    const p50 = prefixRatio(result[kind].latencies, ours[kind].latencies, (stats) => stats.p50);
    ratios[`${kind}P50`] = p50.ratio;
    ratios[`${kind}P99`] = prefixRatio(
      result[kind].latencies,
      ours[kind].latencies,
      (stats) => stats.p99,
    ).ratio;
    ratios[`${kind}Throughput`] = prefixRatio(
      result[kind].latencies,
      ours[kind].latencies,
      (stats) => stats.throughput,
    ).ratio;
    comparedQueries[kind] = p50.count;
  }
  return {
    name: result.name,
    build: result.build,
    turnPreparation: result.turnPreparation,
    lexical: result.lexical.stats,
    select: result.select.stats,
    turn: result.turn.stats,
    failedTurns: result.failedTurns,
    ratiosToLexground: ratios,
    ratioQueryCounts: comparedQueries,
  };
}

function printWorkload(report: WorkloadReport): string {
  const lines: string[] = [];
  lines.push(
    `### ${report.name}: ${report.entryCount} entries (${report.activeEntryCount} active), ${report.queryCount} queries`,
  );
  lines.push("");
  lines.push(
    "| impl | build ms | ×build | heap MB | ×heap | turn p50 ms | turn p99 ms | turns/s | ×turn p50 | select p50 ms | ×select p50 | lexical p50 ms | lexical p99 ms | lexical q/s | ×lexical p50 | n turn/select/lexical |",
  );
  lines.push("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
  for (const item of report.implementations) {
    const r = item.ratiosToLexground;
    lines.push(
      `| ${item.name} | ${milliseconds(item.build.medianMilliseconds)} | ${ratio(r.buildMilliseconds!)} | ` +
        `${megabytes(item.build.medianRetainedBytes)} | ${ratio(r.retainedBytes!)} | ` +
        `${milliseconds(item.turn.p50)} | ${milliseconds(item.turn.p99)} | ${rate(item.turn.throughput)} | ${ratio(r.turnP50!)} | ` +
        `${milliseconds(item.select.p50)} | ${ratio(r.selectP50!)} | ` +
        `${milliseconds(item.lexical.p50)} | ${milliseconds(item.lexical.p99)} | ${rate(item.lexical.throughput)} | ${ratio(r.lexicalP50!)} | ` +
        `${item.turn.count}/${item.select.count}/${item.lexical.count} |`,
    );
  }
  lines.push("");
  for (const note of report.notes) lines.push(`- ${note}`);
  lines.push("");
  return lines.join("\n");
}

// Main --------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const gc = requireGc();
  const started = performance.now();
  const settings: BenchSettings = (() => {
    const resolved = resolveRetrieval();
    return { resolved, fieldWeights: resolved.fieldWeights };
  })();
  const backends: PostgresBackend[] = [];
  const server =
    options.backend === null
      ? null
      : await postgresServer(options.backend === "postgres" ? null : options.backend, options.replica);
  const implementations = [
    ...IMPLEMENTATIONS.filter(
      (implementation) =>
        !(options.skipPlain && implementation.name === "plain") &&
        !(options.skipPeers && (implementation.name === "minisearch" || implementation.name === "orama")),
    ),
    ...options.presets.map((preset) => lexgroundWithPreset(preset)),
    ...(server ? [lexgroundPostgres(server.url, backends, undefined, server.replicaUrl ?? undefined)] : []),
    ...(server?.replicaUrl ? [lexgroundPostgres(server.url, backends, server.replicaUrl)] : []),
  ];
  const revision = (() => {
    try {
      const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
        cwd: REPO_ROOT,
        encoding: "utf8",
      }).trim();
      const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], {
        cwd: REPO_ROOT,
        encoding: "utf8",
      });
      return dirty.trim() === "" ? head : `${head} (src/ has uncommitted changes)`;
    } catch {
      return "unknown";
    }
  })();
  const machine = {
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? "unknown",
    totalMemoryBytes: totalmem(),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    v8HeapLimitBytes: (await import("node:v8")).getHeapStatistics().heap_size_limit,
  };
  console.log(
    `lexground benchmark at ${revision}: ${machine.cpus} CPUs (${machine.cpuModel}), Node ${machine.node}, ${machine.platform}\n` +
      `implementations: ${implementations.map((implementation) => implementation.name).join(", ")}; ` +
      `up to ${options.queries} queries per workload, at most ${options.seriesBudgetMs} ms measured per series\n`,
  );
  const workloadFactories: { label: string; make: () => Workload }[] = [
    ...options.sizes.map((size) => ({
      label: `synthetic ${size}`,
      make: () => syntheticWorkload(size, options),
    })),
    ...options.datasets.map((name) => ({ label: name, make: () => datasetWorkload(name, options) })),
  ];
  const reports: WorkloadReport[] = [];
  const printed: string[] = [];
  for (const factory of workloadFactories) {
    const loadBefore = loadavg()[0]!;
    const generationStarted = performance.now();
    let workload: Workload | null = factory.make();
    console.error(
      `[${factory.label}] ${workload.entries.length} entries ready in ${(performance.now() - generationStarted).toFixed(0)} ms`,
    );
    const results = await measureWorkload(gc, implementations, workload, settings, options);
    const ours = results.find((result) => result.name === "lexground")!;
    const notes: string[] = [];
    const agreement: WorkloadReport["agreement"] = {};
    const plainResult = results.find((result) => result.name === "plain");
    if (plainResult) {
      agreement.selections = compareSelections(
        workload.queries,
        ours.select.results,
        plainResult.select.results,
      );
      agreement.turns = compareTurns(ours.turn.results, plainResult.turn.results);
      const selections = agreement.selections;
      notes.push(
        `lexground vs plain: ${selections.identical}/${selections.compared} selections identical ` +
          `(max relative score difference ${selections.maxRelativeScoreDifference.toExponential(1)}), ` +
          `${agreement.turns.identical}/${agreement.turns.compared} turns identical (selected ids, context tokens)` +
          (selections.firstDifference ? `; first difference: ${selections.firstDifference}` : "") +
          (agreement.turns.firstDifference
            ? `; first turn difference: ${agreement.turns.firstDifference}`
            : ""),
      );
    }
    for (const replicaResult of results.filter((result) => result.name === "lexground:postgres-replica")) {
      const selections = compareSelections(
        workload.queries,
        ours.select.results,
        replicaResult.select.results,
      );
      notes.push(
        `lexground:postgres-replica vs lexground: ${selections.identical}/${selections.compared} selections identical; ` +
          `its build reuses the generation lexground:postgres published (reads on the streaming replica); the replica ` +
          `served each new generation ${replicaLagMilliseconds
            .splice(0)
            .map((lag) => milliseconds(lag))
            .join(", ")} ms ` +
          `after the primary switched to it (replication and replay of its tables)`,
      );
    }
    const postgresResult = results.find((result) => result.name === "lexground:postgres");
    if (postgresResult) {
      const selections = compareSelections(
        workload.queries,
        ours.select.results,
        postgresResult.select.results,
      );
      notes.push(
        `lexground:postgres vs lexground: ${selections.identical}/${selections.compared} selections identical ` +
          `(max relative score difference ${selections.maxRelativeScoreDifference.toExponential(1)})` +
          (selections.firstDifference ? `; first difference: ${selections.firstDifference}` : ""),
      );
      notes.push(
        `lexground:postgres posting cache: ${backends.map((backend) => `${backend.postingCache.counts.hits} hits / ${backend.postingCache.counts.misses} misses, ${megabytes(backend.postingCache.bytes)} MB held`).join("; ")} ` +
          `(one lookup per term of a turn; per backend: publisher, reader)`,
      );
      notes.push(
        `lexground:postgres build = publishing a generation (postings computed in JS, loaded with binary COPY, ` +
          `indexed, switched): ${milliseconds(postgresResult.build.medianMilliseconds)} ms vs lexground's in-memory build ` +
          `${milliseconds(ours.build.medianMilliseconds)} ms (×${(postgresResult.build.medianMilliseconds / ours.build.medianMilliseconds).toFixed(1)}); ` +
          `reader engine heap (turn preparation): ${megabytes(postgresResult.turnPreparation.retainedBytes)} MB`,
      );
    }
    for (const result of results) {
      if (!result.concurrent) continue;
      const c = result.concurrent;
      notes.push(
        `${result.name}: ${options.clients} concurrent clients: ${c.turnsPerSecond.toFixed(1)} turns/s ` +
          `(${c.turns} turns, p50 ${c.p50.toFixed(1)} ms, p99 ${c.p99.toFixed(1)} ms${c.failed > 0 ? `, ${c.failed} failed open` : ""}; one process)`,
      );
      const f = result.fleet;
      if (f)
        notes.push(
          `${result.name}: the same ${options.clients} clients over ${f.processes} reader processes (replicas, each its own ` +
            `pool and posting cache, each warmed by one pass over the queries): ${f.turnsPerSecond.toFixed(1)} turns/s ` +
            `(${f.turns} turns, p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms, reader CPU ${f.readerCpuMsPerTurn.toFixed(2)} ms/turn` +
            `${f.failed > 0 ? `, ${f.failed} failed open` : ""})`,
        );
    }
    notes.push(
      `lexground engine from raw sources to ready (validation, content hash, build): ` +
        `${milliseconds(ours.turnPreparation.milliseconds)} ms, ${megabytes(ours.turnPreparation.retainedBytes)} MB retained`,
    );
    for (const result of results) {
      const short = (["turn", "select", "lexical"] as const).filter(
        (kind) => result[kind].stats.count < workload!.queries.length,
      );
      if (short.length > 0) {
        notes.push(
          `${result.name}: time cap reached, measured ${short
            .map((kind) => `${result[kind].stats.count} ${kind}`)
            .join(
              ", ",
            )} of ${workload.queries.length} queries (ratios use the same query prefix for lexground)`,
        );
      }
      if (result.failedTurns > 0) notes.push(`${result.name}: ${result.failedTurns} turns failed open`);
    }
    // Other processes compete for the same cores; the 1-minute load average says how much.
    notes.push(
      `1-minute load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after this workload ` +
        `(${machine.cpus} CPUs; above ${machine.cpus} other processes were competing for them)`,
    );
    const report: WorkloadReport = {
      name: workload.name,
      description: workload.description,
      entryCount: workload.entries.length,
      activeEntryCount: workload.entries.filter((entry) => entry.status === "active").length,
      queryCount: workload.queries.length,
      implementations: results.map((result) => implementationReport(result, ours)),
      agreement,
      notes: [workload.description, ...notes],
    };
    if (options.updates && workload.name.startsWith("synthetic")) {
      console.error(`[${factory.label}] update scenario`);
      report.updates = await measureUpdates(workload, { seed: options.seed });
    }
    reports.push(report);
    const text =
      printWorkload(report) + (report.updates ? `\n${printUpdates(workload.name, report.updates)}` : "");
    printed.push(text);
    console.log(text);
    workload = null;
    settle(gc);
  }
  const totalSeconds = (performance.now() - started) / 1000;
  console.log(
    `"×" columns: this implementation's value ÷ lexground's, same run and same queries (> 1: lexground is faster or smaller).\n` +
      `Total ${totalSeconds.toFixed(0)} s.`,
  );
  if (options.output !== null) {
    const output =
      options.output === ""
        ? join(HERE, "results", `${new Date().toISOString().replace(/[:.]/g, "-")}.json`)
        : resolve(options.output);
    mkdirSync(dirname(output), { recursive: true });
    writeFileSync(
      output,
      `${JSON.stringify({ revision, startedAt: new Date(Date.now() - totalSeconds * 1000).toISOString(), totalSeconds, machine, options, workloads: reports, markdown: printed.join("\n") }, null, 2)}\n`,
    );
    console.log(`JSON: ${output}`);
  }
  await Promise.all(backends.map((backend) => backend.close()));
  await server?.cluster?.dispose();
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
