/**
 * The PostgreSQL backend as a benchmarked implementation (`npm run bench -- --backend postgres[=URL]`): its build
 * is publishing the workload into a new generation (computing the postings in JavaScript and loading them), its
 * queries go through the same selection code as lexground's over the database, and its turns are a reader
 * engine's (an engine without sources, as every replica of a fleet would run). Without a URL the harness starts a
 * throwaway cluster (test/support/postgresCluster.ts) and removes it at the end.
 */
import { KnowledgeGroundingEngine, retrieveFrom } from "../src/index.js";
import type { KnowledgeBackendIndex } from "../src/knowledge/searchBackend.js";
import { createPostgresBackend, type PostgresBackend } from "../src/postgres/index.js";
import { type PostgresCluster, startPostgresCluster } from "../test/support/postgresCluster.js";
import {
  type BuiltIndex,
  engineTurnRunner,
  type Implementation,
  type TurnRunner,
} from "./implementations.js";

/** A server for the run: the given URL, or a throwaway cluster. */
export async function postgresServer(
  url: string | null,
): Promise<{ url: string; cluster: PostgresCluster | null }> {
  if (url) return { url, cluster: null };
  const { cluster, reason } = await startPostgresCluster([
    "shared_buffers=512MB",
    "work_mem=64MB",
    "max_wal_size=4GB",
    "checkpoint_timeout=30min",
  ]);
  if (!cluster) throw new Error(`--backend postgres: ${reason}`);
  return { url: cluster.url, cluster };
}

let runs = 0;

/** lexground over PostgreSQL; `backends` collects what to close at the end. */
export function lexgroundPostgres(url: string, backends: PostgresBackend[]): Implementation {
  return {
    name: "lexground:postgres",
    async build(workload, settings): Promise<BuiltIndex> {
      const backend = createPostgresBackend({
        connectionString: url,
        schema: "bench",
        statementTimeoutMs: 0,
      });
      backends.push(backend);
      // A fresh content key per build: every build is a real publication, never a reuse.
      await backend.publish(workload.entries, {
        indexOptions: { fieldWeights: settings.fieldWeights },
        contentKey: `bench-${process.pid}-${Date.now()}-${runs++}`,
      });
      const index = (await backend.current()) as KnowledgeBackendIndex;
      const topK = settings.resolved.candidateLimit * 2;
      const request = (query: Parameters<BuiltIndex["select"]>[0]) => ({
        query: query.query,
        recentTurns: query.recentTurns.slice(-4),
        enabledIntegrations: query.enabledIntegrations,
      });
      return {
        lexical: async (query) => {
          const { candidateQuery } = await import("../src/index.js");
          const evidence = await index.searcher.candidates({
            ...candidateQuery(
              { query: query.query, recentTurns: [], enabledIntegrations: [] },
              settings.resolved,
            ),
            topK,
          });
          return evidence.matches.map((match) => match.id);
        },
        select: (query) =>
          retrieveFrom(index.searcher, request(query), settings.resolved, workload.blockedDomains),
      };
    },
    async prepareTurns(workload): Promise<TurnRunner> {
      // A replica: no sources, its own backend object and pool, serving the published generation.
      const backend = createPostgresBackend({
        connectionString: url,
        schema: "bench",
        maxConnections: 16,
        statementTimeoutMs: 60_000,
        connectionTimeoutMs: 60_000,
      });
      backends.push(backend);
      const engine = new KnowledgeGroundingEngine({
        enabled: true,
        sources: [],
        backend,
        blockedDomains: workload.blockedDomains,
        timeoutMs: 60_000,
      });
      await engine.ready();
      if (!engine.getStatus().ready)
        throw new Error(`postgres reader not ready: ${engine.getStatus().backend?.lastError}`);
      return engineTurnRunner(engine);
    },
  };
}

/**
 * Throughput of `clients` concurrent clients: each takes the next query until `budgetMs` has passed (at least
 * one round of `clients` turns). Returns turns per second and the latency percentiles under that load.
 */
export async function concurrentTurns(
  runner: TurnRunner,
  queries: readonly Parameters<TurnRunner["turn"]>[0][],
  clients: number,
  budgetMs: number,
): Promise<{ turns: number; turnsPerSecond: number; p50: number; p99: number; failed: number }> {
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const started = performance.now();
  const deadline = started + budgetMs;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline || next < clients) {
        const query = queries[next++ % queries.length]!;
        const begin = performance.now();
        const result = await runner.turn(query);
        latencies.push(performance.now() - begin);
        if (result.failureReason !== undefined) failed++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  const sorted = latencies.slice().sort((left, right) => left - right);
  const at = (quantile: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(quantile * sorted.length))] ?? 0;
  return {
    turns: latencies.length,
    turnsPerSecond: (latencies.length * 1000) / elapsed,
    p50: at(0.5),
    p99: at(0.99),
    failed,
  };
}
