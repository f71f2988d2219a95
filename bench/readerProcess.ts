/**
 * One reader process of a fleet, for the benchmark's throughput over several processes (`concurrentTurnsInProcesses`
 * in `bench/postgres.ts`): a replica as a fleet runs it (an engine without sources over its own pool and posting
 * cache, serving the published generation), driven by its parent over IPC: `warm` runs every query once, in
 * order; `run` keeps `clients` turns in flight from `startAt` (a shared `Date.now()` instant) for `budgetMs`, over
 * the queries from `offset` on, and reports its turns, their latencies and its CPU time.
 */
import { KnowledgeGroundingEngine } from "../src/index.js";
import { createPostgresBackend } from "../src/postgres/index.js";
import { engineTurnRunner } from "./implementations.js";
import type { BenchQuery } from "./workload.js";

/** What the parent sends first. */
export type ReaderSetup = {
  url: string;
  readUrl?: string;
  schema: string;
  queries: BenchQuery[];
  blockedDomains: string[];
  postingCacheBytes?: number;
};
/** A run's orders. */
export type ReaderRun = { clients: number; budgetMs: number; startAt: number; offset: number };
/** A run's report. */
export type ReaderReport = {
  turns: number;
  failed: number;
  latencies: number[];
  cpuMs: number;
  elapsedMs: number;
};

type Message =
  | { kind: "setup"; setup: ReaderSetup }
  | { kind: "warm" }
  | { kind: "run"; run: ReaderRun }
  | { kind: "exit" };

let engine: KnowledgeGroundingEngine | null = null;
let setup: ReaderSetup | null = null;
let close: (() => Promise<void>) | null = null;

async function handle(message: Message): Promise<unknown> {
  if (message.kind === "setup") {
    setup = message.setup;
    const backend = createPostgresBackend({
      connectionString: setup.url,
      ...(setup.readUrl ? { readConnectionString: setup.readUrl } : {}),
      schema: setup.schema,
      maxConnections: 16,
      statementTimeoutMs: 60_000,
      connectionTimeoutMs: 60_000,
      ...(setup.postingCacheBytes !== undefined ? { postingCacheBytes: setup.postingCacheBytes } : {}),
    });
    close = () => backend.close();
    engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [],
      backend,
      blockedDomains: setup.blockedDomains,
      timeoutMs: 60_000,
    });
    await engine.ready();
    if (!engine.getStatus().ready)
      throw new Error(`reader not ready: ${engine.getStatus().backend?.lastError}`);
    return null;
  }
  const runner = engineTurnRunner(engine!);
  const queries = setup!.queries;
  if (message.kind === "warm") {
    for (const query of queries) await runner.turn(query);
    return null;
  }
  if (message.kind === "run") {
    const { clients, budgetMs, startAt, offset } = message.run;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startAt - Date.now())));
    const latencies: number[] = [];
    let failed = 0;
    let next = offset;
    const cpu = process.cpuUsage();
    const started = performance.now();
    const deadline = started + budgetMs;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (performance.now() < deadline) {
          const query = queries[next++ % queries.length]!;
          const begin = performance.now();
          const result = await runner.turn(query);
          latencies.push(performance.now() - begin);
          if (result.failureReason !== undefined) failed++;
        }
      }),
    );
    const used = process.cpuUsage(cpu);
    const report: ReaderReport = {
      turns: latencies.length,
      failed,
      latencies,
      cpuMs: (used.user + used.system) / 1000,
      elapsedMs: performance.now() - started,
    };
    return report;
  }
  await close?.();
  process.exit(0);
}

process.on("message", (message: Message) => {
  handle(message).then(
    (result) => process.send!({ ok: true, result }),
    (error: unknown) => process.send!({ ok: false, error: String(error) }),
  );
});
