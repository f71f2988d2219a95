/**
 * `npm run bench:postgres-updates -- [--size N] [--batch N] [--rounds N] [--replica]`: incremental updates on the
 * PostgreSQL backend. A throwaway cluster (and with `--replica` a streaming replica, where the reader engine reads)
 * gets a generated registry published; then `rounds` updates each replace `batch` random entries (new summary and
 * body). Reported: the publication, each update until live on the primary (the engine's `upsert` resolving) and
 * until the reader serves it, turn p50/p99 of the reader on an updated generation and after the compaction (a full
 * publication of the same registry), and whether the updated generation answered like the compacted one.
 */
import { loadavg } from "node:os";
import { type KnowledgeEntryInput, KnowledgeGroundingEngine } from "../src/index.js";
import { createPostgresBackend } from "../src/postgres/index.js";
import { startPostgresCluster } from "../test/support/postgresCluster.js";
import { createRandom, generateSyntheticRegistry } from "./synthetic.js";

const argv = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const index = argv.indexOf(name);
  return index >= 0 ? Number(argv[index + 1]) : fallback;
};
const size = flag("--size", 10_000);
const batch = flag("--batch", 10);
const rounds = flag("--rounds", 5);
const withReplica = argv.includes("--replica");
const turnsPerSeries = flag("--turns", 40);

const settings = ["shared_buffers=512MB", "work_mem=64MB", "max_wal_size=4GB", "checkpoint_timeout=30min"];
const { cluster, reason } = await startPostgresCluster(settings);
if (!cluster) throw new Error(`cannot start PostgreSQL: ${reason}`);
const replica = withReplica ? await cluster.startReplica(settings) : null;
const loadBefore = loadavg()[0]!;
const percentile = (values: number[], quantile: number) => {
  const sorted = values.slice().sort((left, right) => left - right);
  return sorted[Math.min(sorted.length - 1, Math.floor(quantile * sorted.length))] ?? 0;
};
const ms = (value: number) => value.toFixed(0);

try {
  const generated = generateSyntheticRegistry({ size, seed: 20_260_714 + size, queryCount: turnsPerSeries });
  const entries = generated.entries;
  const writerBackend = createPostgresBackend({
    connectionString: cluster.url,
    ...(replica ? { readConnectionString: replica.url } : {}),
    schema: "updates",
    statementTimeoutMs: 0,
    compactionDelayMs: 3_600_000,
  });
  const readerBackend = createPostgresBackend({
    connectionString: cluster.url,
    ...(replica ? { readConnectionString: replica.url } : {}),
    schema: "updates",
    statementTimeoutMs: 60_000,
    generationCheckMs: 0,
  });
  let started = performance.now();
  const writer = new KnowledgeGroundingEngine({
    enabled: true,
    sources: [{ id: "synthetic", version: "1", entries }],
    backend: writerBackend,
    blockedDomains: generated.blockedDomains,
  });
  await writer.ready();
  if (!writer.getStatus().ready) throw new Error(`publication failed: ${writer.getStatus().lastError}`);
  const publishMs = performance.now() - started;
  const reader = new KnowledgeGroundingEngine({
    enabled: true,
    sources: [],
    backend: readerBackend,
    blockedDomains: generated.blockedDomains,
    timeoutMs: 60_000,
  });
  await reader.ready();
  const turns = async () => {
    const times: number[] = [];
    const outcomes: string[] = [];
    for (const query of generated.queries) {
      const begin = performance.now();
      const outcome = await reader.ground({
        query: query.query,
        recentTurns: query.recentTurns,
        scope: { enabledIntegrations: query.enabledIntegrations },
      });
      times.push(performance.now() - begin);
      outcomes.push(
        JSON.stringify([outcome.metadata.selectedIds, outcome.ephemeralContext?.content ?? null]),
      );
    }
    return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), outcomes };
  };
  await turns(); // warm-up
  const fresh = await turns();
  const random = createRandom(7);
  const live: number[] = [];
  const served: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const replaced: KnowledgeEntryInput[] = [];
    for (let index = 0; index < batch; index++) {
      const entry = entries[Math.floor(random() * entries.length)]!;
      replaced.push({
        ...entry,
        summary: `${entry.summary} revised ${round}`,
        body: `${entry.body ?? ""} update ${round}`,
      });
    }
    started = performance.now();
    const result = await writer.upsert(replaced);
    if (!result.live) throw new Error(`update refused: ${result.reason}: ${writer.getStatus().lastError}`);
    live.push(performance.now() - started);
    const generation = writerBackend.status().generation;
    // The reader serves it once its pool (the replica, with --replica) has it.
    for (;;) {
      const index = await readerBackend.current();
      if (index && generation !== null && index.generation >= generation) break;
      if (!replica && index) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    served.push(performance.now() - started);
  }
  const updated = await turns();
  started = performance.now();
  await writerBackend.compacted();
  const compactionMs = performance.now() - started;
  if (replica) await replica.caughtUp(600_000);
  const compacted = await turns();
  const identical = updated.outcomes.filter((outcome, index) => outcome === compacted.outcomes[index]).length;
  console.log(
    `PostgreSQL incremental updates, ${size} entries${replica ? ", reader on a streaming replica" : ""} ` +
      `(load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after, 2 vCPUs)`,
  );
  console.log(`- publication (full): ${ms(publishMs)} ms`);
  console.log(
    `- replace ${batch} entries, ${rounds} rounds: live on the primary p50 ${ms(percentile(live, 0.5))} ms ` +
      `(${live.map(ms).join(", ")}); served by the reader p50 ${ms(percentile(served, 0.5))} ms`,
  );
  console.log(`- compaction (full publication of the updated registry): ${ms(compactionMs)} ms`);
  console.log(
    `- reader turns (${generated.queries.length}): fresh generation p50 ${fresh.p50.toFixed(1)} / p99 ${fresh.p99.toFixed(1)} ms; ` +
      `updated generation p50 ${updated.p50.toFixed(1)} / p99 ${updated.p99.toFixed(1)} ms; ` +
      `after compaction p50 ${compacted.p50.toFixed(1)} / p99 ${compacted.p99.toFixed(1)} ms`,
  );
  console.log(`- updated vs compacted generation: ${identical}/${updated.outcomes.length} turns identical`);
  await Promise.all([writerBackend.close(), readerBackend.close()]);
} finally {
  await cluster.dispose();
}
