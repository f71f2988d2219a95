/**
 * A replica of the fleet in its own process, for `bench/postgresMillion.ts`: a reader engine (no sources) on the
 * PostgreSQL backend, serving the published generation. It measures whole turns (`engine.ground`) one at a time
 * (p50/p99), then `--clients` concurrent clients, and the process's heap while it does: started in a fresh
 * process, it holds no registry and no in-memory index, so what it holds is what a replica of the fleet holds.
 * Reads its queries from the JSON file `--queries` (written by the parent); prints one JSON object on stdout.
 *
 * `node --expose-gc --import tsx bench/postgresReader.ts --url postgres://… [--read-url postgres://…]
 *   --queries FILE [--schema bench] [--turns 60] [--budget-ms 600000] [--clients 16] [--concurrent-ms 60000]
 *   [--posting-cache-bytes N] [--fetch-budget-bytes N]`
 */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { KnowledgeGroundingEngine } from "../src/index.js";
import { createPostgresBackend } from "../src/postgres/index.js";
import { engineTurnRunner } from "./implementations.js";
import { concurrentTurns } from "./postgres.js";
import type { BenchQuery } from "./workload.js";

/** What the parent writes for this process. */
export type ReaderQueries = { blockedDomains: string[]; queries: BenchQuery[]; warmupQueries: BenchQuery[] };

/** What this process prints. */
export type ReaderReport = {
  turns: number;
  p50: number;
  p99: number;
  max: number;
  latencies: number[];
  failed: number;
  /** Posting cache lookups of the sequential turns (one per term). */
  cache: { hits: number; misses: number };
  concurrent: {
    clients: number;
    turnsPerSecond: number;
    turns: number;
    p50: number;
    p99: number;
    failed: number;
  };
  heap: {
    /** heapUsed + external after a full collection, before the engine exists (the code loaded). */
    baselineBytes: number;
    /** The same once the reader engine serves (connected, generation read). */
    readyBytes: number;
    /** The same after every turn, the engine alive. */
    afterTurnsBytes: number;
    /** Of \`afterTurnsBytes\`: V8's heap, the memory outside it (buffers), and the posting cache's lists. */
    afterTurnsParts: { heapUsedBytes: number; externalBytes: number; postingCacheBytes: number };
    /** The largest heapUsed + external seen right after a turn (no collection forced: garbage included). */
    peakDuringTurnsBytes: number;
    /** The largest resident set size seen. */
    peakRssBytes: number;
  };
  /** The fetch budget (`fetchBudgetBytes`): its limit, most turns admitted at once, most fetched bytes they held. */
  fetchBudget: { limitBytes: number; peakTurns: number; peakBytes: number };
  load: [number, number];
};

function option(name: string, fallback?: string): string {
  const index = process.argv.indexOf(`--${name}`);
  if (index >= 0 && process.argv[index + 1] !== undefined) return process.argv[index + 1]!;
  if (fallback === undefined) throw new Error(`--${name} is required`);
  return fallback;
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");

function retained(): number {
  gc!();
  gc!();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted.length === 0
    ? 0
    : sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const url = option("url");
  const readUrl = option("read-url", "");
  const input = JSON.parse(readFileSync(option("queries"), "utf8")) as ReaderQueries;
  const turnLimit = Number(option("turns", "60"));
  const budgetMs = Number(option("budget-ms", "600000"));
  const clients = Number(option("clients", "16"));
  const concurrentMs = Number(option("concurrent-ms", "60000"));
  const loadBefore = loadavg()[0]!;
  const queries = input.queries;
  input.queries = [];
  const baselineBytes = retained();
  let peakDuringTurnsBytes = 0;
  let peakRssBytes = 0;
  const sample = () => {
    const usage = process.memoryUsage();
    peakDuringTurnsBytes = Math.max(peakDuringTurnsBytes, usage.heapUsed + usage.external);
    peakRssBytes = Math.max(peakRssBytes, usage.rss);
  };
  const backend = createPostgresBackend({
    connectionString: url,
    ...(readUrl ? { readConnectionString: readUrl } : {}),
    schema: option("schema", "bench"),
    maxConnections: Math.max(1, clients),
    ...(option("posting-cache-bytes", "")
      ? { postingCacheBytes: Number(option("posting-cache-bytes")) }
      : {}),
    ...(option("fetch-budget-bytes", "") ? { fetchBudgetBytes: Number(option("fetch-budget-bytes")) } : {}),
    statementTimeoutMs: budgetMs,
    connectionTimeoutMs: budgetMs,
  });
  const engine = new KnowledgeGroundingEngine({
    enabled: true,
    sources: [],
    backend,
    blockedDomains: input.blockedDomains,
    timeoutMs: budgetMs,
  });
  await engine.ready();
  if (!engine.getStatus().ready)
    throw new Error(`the reader is not ready: ${engine.getStatus().backend?.lastError}`);
  const readyBytes = retained();
  const runner = engineTurnRunner(engine);
  for (const query of input.warmupQueries.slice(0, 5)) {
    await runner.turn(query);
    sample();
  }
  const before = { ...backend.postingCache.counts };
  const latencies: number[] = [];
  let failed = 0;
  const started = performance.now();
  for (const query of queries.slice(0, turnLimit)) {
    const begin = performance.now();
    const result = await runner.turn(query);
    latencies.push(performance.now() - begin);
    if (result.failureReason !== undefined) failed++;
    sample();
    process.stderr.write(
      `[reader] turn ${latencies.length}: ${latencies.at(-1)!.toFixed(0)} ms (${query.recentTurns.length} recent turns)\n`,
    );
    if (performance.now() - started > budgetMs) break;
  }
  const cache = {
    hits: backend.postingCache.counts.hits - before.hits,
    misses: backend.postingCache.counts.misses - before.misses,
  };
  const sampler = setInterval(sample, 50);
  const concurrent =
    clients > 0
      ? await concurrentTurns(runner, queries, clients, concurrentMs)
      : { turnsPerSecond: 0, turns: 0, p50: 0, p99: 0, failed: 0 };
  clearInterval(sampler);
  sample();
  const afterTurnsBytes = retained();
  const afterUsage = process.memoryUsage();
  const afterTurnsParts = {
    heapUsedBytes: afterUsage.heapUsed,
    externalBytes: afterUsage.external,
    postingCacheBytes: backend.postingCache.bytes,
  };
  await backend.close();
  const report: ReaderReport = {
    turns: latencies.length,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: Math.max(...latencies),
    latencies,
    failed,
    cache,
    concurrent: { clients, ...concurrent },
    heap: { baselineBytes, readyBytes, afterTurnsBytes, afterTurnsParts, peakDuringTurnsBytes, peakRssBytes },
    fetchBudget: {
      limitBytes: backend.fetchBudget.limitBytes,
      peakTurns: backend.fetchBudget.peaks.turns,
      peakBytes: backend.fetchBudget.peaks.bytes,
    },
    load: [loadBefore, loadavg()[0]!],
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

await main();
