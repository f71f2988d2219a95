/**
 * The PostgreSQL backend as a benchmarked implementation (`npm run bench -- --backend postgres[=URL]`): its build
 * is publishing the workload into a new generation (computing the postings in JavaScript and loading them), its
 * queries go through the same selection code as lexground's over the database, and its turns are a reader
 * engine's (an engine without sources, as every replica of a fleet would run). Without a URL the harness starts a
 * throwaway cluster (test/support/postgresCluster.ts) and removes it at the end.
 *
 * `--replica` (a streaming replica of the throwaway cluster) or `--replica postgres://…` adds
 * `lexground:postgres-replica`: the same generation (reused, not published again), its queries and turns read on
 * the replica; its "build" is the wait until the replica serves the generation the primary published.
 */
import { KnowledgeGroundingEngine, retrieveFrom } from "../src/index.js";
import { createPostgresBackend, type PostgresBackend } from "../src/postgres/index.js";
import { type PostgresCluster, startPostgresCluster } from "../test/support/postgresCluster.js";
import {
  type BuiltIndex,
  engineTurnRunner,
  type Implementation,
  type TurnRunner,
} from "./implementations.js";

export const SERVER_SETTINGS = [
  "shared_buffers=512MB",
  "work_mem=64MB",
  "max_wal_size=4GB",
  "checkpoint_timeout=30min",
];

/**
 * A server for the run: the given URL, or a throwaway cluster; and with `replica`, a read replica: the given URL
 * (`postgres://…`), or (`true`) a streaming replica of the throwaway cluster.
 */
export async function postgresServer(
  url: string | null,
  replica: string | boolean = false,
): Promise<{ url: string; cluster: PostgresCluster | null; replicaUrl: string | null }> {
  let cluster: PostgresCluster | null = null;
  if (!url) {
    const started = await startPostgresCluster(SERVER_SETTINGS);
    if (!started.cluster) throw new Error(`--backend postgres: ${started.reason}`);
    cluster = started.cluster;
  }
  let replicaUrl: string | null = typeof replica === "string" ? replica : null;
  if (replica === true) {
    if (!cluster) throw new Error("--replica without a URL needs the throwaway cluster (--backend postgres)");
    replicaUrl = (await cluster.startReplica(SERVER_SETTINGS)).url;
  }
  return { url: url ?? cluster!.url, cluster, replicaUrl };
}

/** An implementation whose turns can also be served by several reader processes (a fleet on one machine). */
export type FleetImplementation = Implementation & {
  fleetTurns(
    workload: Parameters<Implementation["prepareTurns"]>[0],
    clients: number,
    budgetMs: number,
    processes: number,
  ): ReturnType<typeof concurrentTurnsInProcesses>;
};

/** Whether `implementation` can run its turns over several reader processes. */
export function hasFleetTurns(implementation: Implementation): implementation is FleetImplementation {
  return typeof (implementation as Partial<FleetImplementation>).fleetTurns === "function";
}

let runs = 0;
/** The content key of the latest publication per primary URL (the replica row reuses it). */
const publishedKeys = new Map<string, string>();

/** Per publication of the primary row: milliseconds from its switch until the replica served it. */
export const replicaLagMilliseconds: number[] = [];

/** Resolves once `backend` (reading on a replica) serves `generation`. */
async function servedOn(backend: PostgresBackend, generation: number) {
  for (;;) {
    const index = await backend.current();
    if (index && index.generation >= generation) return index;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * lexground over PostgreSQL; `backends` collects what to close at the end. With `readUrl` (a replica of `url`),
 * the generation the primary row published is reused and everything reads on the replica. With `lagProbeUrl`
 * (a replica, on the primary row), each publication also times how long the replica takes to serve it.
 */
export function lexgroundPostgres(
  url: string,
  backends: PostgresBackend[],
  readUrl?: string,
  lagProbeUrl?: string,
): FleetImplementation {
  const read = readUrl ? { readConnectionString: readUrl } : {};
  return {
    fleetTurns: (workload, clients, budgetMs, processes) =>
      concurrentTurnsInProcesses({
        url,
        ...(readUrl ? { readUrl } : {}),
        schema: "bench",
        queries: workload.queries,
        blockedDomains: workload.blockedDomains,
        clients,
        processes,
        budgetMs,
      }),
    name: readUrl ? "lexground:postgres-replica" : "lexground:postgres",
    async build(workload, settings): Promise<BuiltIndex> {
      const backend = createPostgresBackend({
        connectionString: url,
        ...read,
        schema: "bench",
        statementTimeoutMs: 0,
        generationCheckMs: 0,
      });
      backends.push(backend);
      // A fresh content key per build: every build is a real publication, never a reuse (except on the replica
      // row, which serves what the primary row published).
      const contentKey =
        (readUrl ? publishedKeys.get(url) : undefined) ?? `bench-${process.pid}-${Date.now()}-${runs++}`;
      const published = await backend.publish(workload.entries, {
        indexOptions: { fieldWeights: settings.fieldWeights },
        contentKey,
      });
      if (!readUrl) publishedKeys.set(url, contentKey);
      if (lagProbeUrl) {
        const probe = createPostgresBackend({
          connectionString: url,
          readConnectionString: lagProbeUrl,
          schema: "bench",
          generationCheckMs: 0,
          maxConnections: 1,
        });
        backends.push(probe);
        const switched = performance.now();
        await servedOn(probe, published.generation);
        replicaLagMilliseconds.push(performance.now() - switched);
      }
      // On a replica: wait until it has replayed the generation (its tables and its switch).
      const index = await servedOn(backend, published.generation);
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
        ...read,
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

/**
 * Throughput of a fleet on one machine: `clients` concurrent clients spread over `processes` reader processes
 * (`bench/readerProcess.ts`: each a replica with its own pool and posting cache, as a fleet runs them), each
 * warmed by one pass over the queries, then all started at one instant for `budgetMs`, each cycling through every
 * query from its own offset (no query is routed to one replica only). Turns per second are all processes' turns
 * over the measured time; CPU is the readers' own (the server's is not counted here).
 */
export async function concurrentTurnsInProcesses(options: {
  url: string;
  readUrl?: string;
  schema: string;
  queries: readonly Parameters<TurnRunner["turn"]>[0][];
  blockedDomains: readonly string[];
  clients: number;
  processes: number;
  budgetMs: number;
  postingCacheBytes?: number;
}): Promise<{
  processes: number;
  turns: number;
  turnsPerSecond: number;
  p50: number;
  p99: number;
  failed: number;
  readerCpuMsPerTurn: number;
}> {
  const { fork } = await import("node:child_process");
  const children = Array.from({ length: options.processes }, () =>
    fork(new URL("./readerProcess.ts", import.meta.url).pathname, [], {
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    }),
  );
  const ask = (child: (typeof children)[number], message: unknown) =>
    new Promise<unknown>((resolve, reject) => {
      child.once("message", (reply: { ok: boolean; result?: unknown; error?: string }) =>
        reply.ok ? resolve(reply.result) : reject(new Error(reply.error)),
      );
      child.once("exit", (code) => reject(new Error(`reader process exited with ${code}`)));
      child.send(message as Parameters<typeof child.send>[0]);
    });
  try {
    const setup = {
      url: options.url,
      ...(options.readUrl ? { readUrl: options.readUrl } : {}),
      schema: options.schema,
      queries: options.queries,
      blockedDomains: options.blockedDomains,
      ...(options.postingCacheBytes !== undefined ? { postingCacheBytes: options.postingCacheBytes } : {}),
    };
    await Promise.all(children.map((child) => ask(child, { kind: "setup", setup })));
    // Warmed one after the other: a replica that joins a running fleet warms while the others serve.
    for (const child of children) await ask(child, { kind: "warm" });
    const startAt = Date.now() + 200;
    const reports = (await Promise.all(
      children.map((child, index) =>
        ask(child, {
          kind: "run",
          run: {
            clients:
              Math.floor(options.clients / options.processes) +
              (index < options.clients % options.processes ? 1 : 0),
            budgetMs: options.budgetMs,
            startAt,
            offset: Math.floor((index * options.queries.length) / options.processes),
          },
        }),
      ),
    )) as { turns: number; failed: number; latencies: number[]; cpuMs: number; elapsedMs: number }[];
    const latencies = reports.flatMap((report) => report.latencies).sort((left, right) => left - right);
    const turns = latencies.length;
    const elapsed = Math.max(...reports.map((report) => report.elapsedMs));
    const at = (quantile: number) => latencies[Math.min(turns - 1, Math.floor(quantile * turns))] ?? 0;
    return {
      processes: options.processes,
      turns,
      turnsPerSecond: (turns * 1000) / elapsed,
      p50: at(0.5),
      p99: at(0.99),
      failed: reports.reduce((sum, report) => sum + report.failed, 0),
      readerCpuMsPerTurn: reports.reduce((sum, report) => sum + report.cpuMs, 0) / Math.max(1, turns),
    };
  } finally {
    for (const child of children) {
      child.removeAllListeners();
      child.send({ kind: "exit" });
    }
  }
}
