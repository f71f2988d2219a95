/**
 * The update scenario (`--updates`): on an engine built from a workload's sources, how long an incremental update
 * takes to go live, how long the event loop is ever blocked while updates and the background compaction run, what
 * a turn costs while changes are pending versus after the compaction, and whether many random updates in a row
 * leave the engine answering exactly as a full build of the final registry.
 */
import { pathToFileURL } from "node:url";
import { KnowledgeGroundingEngine } from "../src/index.js";
import { clearKnowledgeIndexCache } from "../src/knowledge/indexCache.js";
import type {
  KnowledgeEntryInput,
  KnowledgeGroundingOutcome,
  KnowledgeSource,
} from "../src/types/knowledge.js";
import { AllocationSampler, printAllocations } from "./allocationSampler.js";
import {
  BlockProbe,
  BlockProfiler,
  type BlockReadings,
  type SampledProfile,
  threadCpuNanoseconds,
} from "./blockProbe.js";
import { createRandom, generateSyntheticRegistry } from "./synthetic.js";
import type { BenchQuery, Workload } from "./workload.js";

/** Figures of one update scenario. */
export type UpdateReport = {
  entryCount: number;
  /** Replacing `batchSize` entries: milliseconds from the call until the change serves. */
  batchSize: number;
  rounds: number;
  liveMilliseconds: { p50: number; p99: number; max: number };
  /**
   * The longest the event loop was blocked while the update rounds ran (the first update excluded; the compaction
   * waits for them to pause).
   */
  blockedDuringUpdates: BlockReadings;
  /** The same from the last update until the compaction is done (the whole compaction, nothing else running). */
  blockedDuringCompaction: BlockReadings;
  compactionMilliseconds: number;
  /** Main-thread CPU time the compaction took (Linux; null elsewhere): its own work and collections, not waits. */
  compactionCpuMilliseconds: number | null;
  turnWhilePendingMilliseconds: { p50: number; p99: number };
  turnAfterCompactionMilliseconds: { p50: number; p99: number };
  randomUpdates: number;
  /** Turns compared with a full build of the final registry, and how many were identical. */
  equality: { compared: number; identical: number; firstDifference?: string };
};

/**
 * The turn timeout of the benchmark's engines: a turn that overruns the default 800 ms on a loaded machine fails
 * open, which would count as a difference from the full build that has nothing to do with the updates.
 */
const COMPARISON_TIMEOUT_MS = 60_000;

function percentile(values: readonly number[], fraction: number): number {
  const sorted = values.slice().sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

function summary(outcome: KnowledgeGroundingOutcome): string {
  return JSON.stringify({
    context: outcome.ephemeralContext?.content ?? null,
    selected: outcome.metadata.selectedIds,
    expanded: outcome.metadata.expandedIds,
    confidence: outcome.metadata.confidence,
    failureReason: outcome.metadata.failureReason ?? null,
    candidates: outcome.retrieval?.candidates?.map((candidate) => [candidate.id, candidate.score]),
  });
}

async function turnTimes(
  engine: KnowledgeGroundingEngine,
  queries: readonly BenchQuery[],
): Promise<number[]> {
  const times: number[] = [];
  for (const query of queries) {
    const started = performance.now();
    await engine.ground({
      query: query.query,
      recentTurns: query.recentTurns,
      scope: { enabledIntegrations: query.enabledIntegrations },
    });
    times.push(performance.now() - started);
  }
  return times;
}

/** A changed copy of an entry: new words in its title and summary, so lengths, IDF and phrases move. */
function edited(
  entry: KnowledgeEntryInput,
  random: () => number,
  words: readonly string[],
): KnowledgeEntryInput {
  const word = () => words[Math.floor(random() * words.length)]!;
  return { ...entry, title: `${entry.title} ${word()}`, summary: `${word()} ${entry.summary} ${word()}` };
}

/** Runs the scenario on `workload` (see the module comment). */
export async function measureUpdates(
  workload: Workload,
  options: {
    seed: number;
    rounds?: number;
    batchSize?: number;
    randomUpdates?: number;
    compareQueries?: number;
    /**
     * Lists every main-thread block over 20 ms on stderr, with its phase and time, and marks each phase on stdout
     * (to place the lines of `--trace-gc`, which go to stdout too).
     */
    logBlocks?: boolean;
    /** Blocks listed by `logBlocks`: over this many milliseconds of main-thread CPU (default 20). */
    listBlocksOverMs?: number;
    /** Samples the main thread and says, for each listed block, what ran in it (implies `logBlocks`). */
    profileBlocks?: boolean;
    /**
     * Samples what the main thread allocates during the watched update rounds and during the compaction (garbage
     * included), and lists it by allocating function on stderr (`allocationSampler.ts`).
     */
    sampleAllocations?: boolean;
  },
): Promise<UpdateReport> {
  const rounds = options.rounds ?? 30;
  const batchSize = options.batchSize ?? 10;
  const randomUpdates = options.randomUpdates ?? 1000;
  const random = createRandom(options.seed ^ 0x5eed);
  const source = workload.sources[0]!;
  const registry = new Map<string, KnowledgeEntryInput>();
  for (const item of workload.sources) for (const entry of item.entries) registry.set(entry.id, entry);
  const ids = [...registry.keys()];
  const words = workload.queries
    .flatMap((query) => query.query.split(/\s+/))
    .filter((word) => word.length > 2);
  clearKnowledgeIndexCache();
  const engine = new KnowledgeGroundingEngine({
    enabled: true,
    sources: workload.sources,
    logger: null,
    timeoutMs: COMPARISON_TIMEOUT_MS,
  });
  await engine.ready();
  const queries = workload.queries.slice(0, 60);
  await turnTimes(engine, workload.warmupQueries.slice(0, 20));

  const logBlocks = options.logBlocks === true || options.profileBlocks === true;
  const probe = new BlockProbe(logBlocks, options.listBlocksOverMs);
  const profiler = options.profileBlocks ? new BlockProfiler() : null;
  await profiler?.start();
  let allocations: AllocationSampler | null = null;
  /** `rounds` updates of `batchSize` replaced entries, 20 ms apart; their times until live. */
  const updateRounds = async (watched: boolean): Promise<number[]> => {
    const live: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const batch: KnowledgeEntryInput[] = [];
      const chosen = new Set<string>();
      while (chosen.size < batchSize) chosen.add(ids[Math.floor(random() * ids.length)]!);
      for (const id of chosen) {
        const changed = edited(registry.get(id)!, random, words);
        registry.set(id, changed);
        batch.push(changed);
      }
      if (watched) probe.setPhase(`update ${round}`);
      const started = performance.now();
      const result = await engine.upsert(batch);
      if (watched) probe.setPhase(`after update ${round} (live at ${performance.now().toFixed(0)} ms)`);
      live.push(performance.now() - started);
      if (!result.live)
        throw new Error(`update round ${round} did not go live: ${JSON.stringify(result.issues)}`);
      // The first update also indexes the registry by id (once per engine, in slices): watched from the second on.
      if (watched && round === 0) {
        probe.start("after update 0");
        if (options.sampleAllocations) {
          allocations = new AllocationSampler();
          await allocations.start();
        }
      }
      // Spaced like edits arriving one after another (the compaction waits for a quiet moment).
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return live;
  };
  const live = await updateRounds(true);
  const blockedDuringUpdates = probe.stop();
  if (allocations) {
    const sampled = await (allocations as AllocationSampler).stop();
    console.error(`update rounds: ${printAllocations(sampled)}`);
    allocations = new AllocationSampler();
    await allocations.start();
  }
  // The whole compaction is watched: it starts once updates pause (200-400 ms after the last) and nothing else
  // runs meanwhile (turns while changes are pending are measured on a second series of rounds, below).
  const compactionStarted = performance.now();
  const compactionCpuStarted = threadCpuNanoseconds();
  probe.start("compaction (from the last update, the quiet period included)");
  await engine.compacted();
  const compactionMilliseconds = performance.now() - compactionStarted;
  const compactionCpuEnded = threadCpuNanoseconds();
  const compactionCpuMilliseconds =
    compactionCpuStarted === null || compactionCpuEnded === null
      ? null
      : (compactionCpuEnded - compactionCpuStarted) / 1e6;
  const blockedDuringCompaction = probe.stop();
  if (allocations)
    console.error(`compaction: ${printAllocations(await (allocations as AllocationSampler).stop())}`);
  probe.setPhase("turns after the compaction");
  const profile: SampledProfile | undefined = await profiler?.stop();
  if (logBlocks) {
    probe.logLongBlocks(profile);
    console.error(
      `compaction ran from ${compactionStarted.toFixed(0)} ms for ${compactionMilliseconds.toFixed(0)} ms`,
    );
  }
  const after = await turnTimes(engine, queries);
  // Turns while changes are pending: the same rounds again, then turns at once (the compaction starts among them).
  probe.setPhase("second rounds, then turns while changes are pending");
  await updateRounds(false);
  const pending = await turnTimes(engine, queries);
  await engine.compacted();

  // Many random updates in a row: replace, add and remove, then compare with a full build.
  let added = 0;
  for (let update = 0; update < randomUpdates; update++) {
    const roll = random();
    if (roll < 0.6) {
      const id = ids[Math.floor(random() * ids.length)]!;
      if (!registry.has(id)) continue;
      const changed = edited(registry.get(id)!, random, words);
      registry.set(id, changed);
      await engine.upsert([changed]);
    } else if (roll < 0.8) {
      const template = registry.get(ids[Math.floor(random() * ids.length)]!);
      if (!template) continue;
      const entry = { ...edited(template, random, words), id: `bench.added.${added++}`, aliases: [] };
      registry.set(entry.id, entry);
      await engine.upsert([entry], { sourceId: source.id });
    } else {
      const id = ids[Math.floor(random() * ids.length)]!;
      if (!registry.delete(id)) continue;
      await engine.remove([id]);
    }
  }
  const compared = workload.queries.slice(0, options.compareQueries ?? 50);
  const changedAnswers: string[] = [];
  for (const query of compared)
    changedAnswers.push(
      summary(
        await engine.ground({
          query: query.query,
          recentTurns: query.recentTurns,
          scope: { enabledIntegrations: query.enabledIntegrations },
        }),
      ),
    );
  await engine.compacted();
  const compactedAnswers: string[] = [];
  for (const query of compared)
    compactedAnswers.push(
      summary(
        await engine.ground({
          query: query.query,
          recentTurns: query.recentTurns,
          scope: { enabledIntegrations: query.enabledIntegrations },
        }),
      ),
    );
  clearKnowledgeIndexCache();
  // The final registry, grouped as the engine groups it: each source keeps its entries in order, new ones last.
  const finalSources: KnowledgeSource[] = workload.sources.map((item) => ({
    ...item,
    entries: item.entries.filter((entry) => registry.has(entry.id)).map((entry) => registry.get(entry.id)!),
  }));
  for (const [id, entry] of registry)
    if (id.startsWith("bench.added."))
      finalSources.find((item) => item.id === source.id)!.entries.push(entry);
  const full = new KnowledgeGroundingEngine({
    enabled: true,
    sources: finalSources,
    logger: null,
    timeoutMs: COMPARISON_TIMEOUT_MS,
  });
  await full.ready();
  let identical = 0;
  let firstDifference: string | undefined;
  for (const [index, query] of compared.entries()) {
    const expected = summary(
      await full.ground({
        query: query.query,
        recentTurns: query.recentTurns,
        scope: { enabledIntegrations: query.enabledIntegrations },
      }),
    );
    if (expected === changedAnswers[index] && expected === compactedAnswers[index]) identical++;
    else
      firstDifference ??= `query ${JSON.stringify(query.query.slice(0, 60))} (${expected === changedAnswers[index] ? "compacted" : "changed"} answer differs; full build: ${expected.slice(0, 200)})`;
  }
  clearKnowledgeIndexCache();
  return {
    entryCount: registry.size,
    batchSize,
    rounds,
    liveMilliseconds: { p50: percentile(live, 0.5), p99: percentile(live, 0.99), max: Math.max(...live) },
    blockedDuringUpdates,
    blockedDuringCompaction,
    compactionMilliseconds,
    compactionCpuMilliseconds,
    turnWhilePendingMilliseconds: { p50: percentile(pending, 0.5), p99: percentile(pending, 0.99) },
    turnAfterCompactionMilliseconds: { p50: percentile(after, 0.5), p99: percentile(after, 0.99) },
    randomUpdates,
    equality: { compared: compared.length, identical, ...(firstDifference ? { firstDifference } : {}) },
  };
}

/** The report as Markdown lines. */
export function printUpdates(name: string, report: UpdateReport): string {
  const ms = (value: number) => value.toFixed(1);
  const blocks = (readings: BlockReadings) =>
    `${ms(readings.timerGapMilliseconds)} / ${ms(readings.histogramMilliseconds)} / ${ms(readings.mainThreadCpuMilliseconds)} / ${ms(readings.collectorPauseMilliseconds)} ms`;
  const distribution = (readings: BlockReadings) =>
    `${readings.overTarget.byTimerGap} / ${readings.overTarget.byCpu} of ${readings.ticks} (longest: ${readings.longestGaps.map((gap) => `${ms(gap.gapMs)}/${ms(gap.cpuMs)}`).join(", ")} ms)`;
  return [
    `### ${name}: incremental updates (${report.entryCount} entries at the end)`,
    "",
    "| measure | value |",
    "|---|---|",
    `| replace ${report.batchSize} entries, live after (p50 / p99 / max of ${report.rounds}) | ${ms(report.liveMilliseconds.p50)} / ${ms(report.liveMilliseconds.p99)} / ${ms(report.liveMilliseconds.max)} ms |`,
    `| longest event-loop block during the update rounds (gap between 1 ms timer ticks / delay histogram / main-thread CPU between ticks, in 4 ms steps / longest collector pause) | ${blocks(report.blockedDuringUpdates)} |`,
    `| gaps over 20 ms during the update rounds (by wall clock / by main-thread CPU, of all ticks; the five longest gaps, wall/CPU) | ${distribution(report.blockedDuringUpdates)} |`,
    `| longest event-loop block during the compaction (same readings) | ${blocks(report.blockedDuringCompaction)} |`,
    `| gaps over 20 ms during the compaction (same) | ${distribution(report.blockedDuringCompaction)} |`,
    `| background compaction after the rounds, from the last update, 200-400 ms of waiting for quiet included (wall / main-thread CPU) | ${ms(report.compactionMilliseconds)} / ${report.compactionCpuMilliseconds === null ? "-" : ms(report.compactionCpuMilliseconds)} ms |`,
    `| turn p50 / p99 while changes are pending (after a second series of rounds; the compaction starts among them) | ${ms(report.turnWhilePendingMilliseconds.p50)} / ${ms(report.turnWhilePendingMilliseconds.p99)} ms |`,
    `| turn p50 / p99 after the compaction | ${ms(report.turnAfterCompactionMilliseconds.p50)} / ${ms(report.turnAfterCompactionMilliseconds.p99)} ms |`,
    `| ${report.randomUpdates} random updates, then turns equal to a full build (changed and compacted) | ${report.equality.identical}/${report.equality.compared}${report.equality.firstDifference ? ` (first difference: ${report.equality.firstDifference})` : ""} |`,
    "",
  ].join("\n");
}

/**
 * Run alone: `node --expose-gc --import tsx bench/updates.ts [--size 100000] [--rounds 30] [--random 1000]
 * [--seed 42] [--log-blocks] [--list-blocks-over 20] [--profile-blocks] [--sample-allocations]` measures the scenario on a synthetic registry without the rest of the benchmark (the figures
 * `npm run bench -- --updates` reports after each synthetic workload).
 */
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const option = (name: string, fallback: number): number => {
    const index = argv.indexOf(name);
    const value = index >= 0 ? Number(argv[index + 1]) : fallback;
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name} needs a number`);
    return value;
  };
  const size = option("--size", 100_000);
  const seed = option("--seed", 42);
  const generated = generateSyntheticRegistry({ size, seed: seed + size, queryCount: 200 });
  const workload: Workload = {
    name: `synthetic-${size}`,
    description: `${size} generated entries`,
    sources: [{ id: "synthetic", version: "1", entries: generated.entries }],
    entries: [],
    queries: generated.queries,
    warmupQueries: generated.warmupQueries,
    blockedDomains: generated.blockedDomains,
  };
  const report = await measureUpdates(workload, {
    seed,
    rounds: option("--rounds", 30),
    randomUpdates: option("--random", 1000),
    logBlocks: argv.includes("--log-blocks"),
    listBlocksOverMs: option("--list-blocks-over", 20),
    profileBlocks: argv.includes("--profile-blocks"),
    sampleAllocations: argv.includes("--sample-allocations"),
  });
  console.log(printUpdates(workload.name, report));
  console.log(JSON.stringify(report));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exitCode = 1;
  });
}
