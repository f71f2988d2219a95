/**
 * Probe (session 16): the reader process's sequence (`bench/postgresReader.ts`: 5 warm-ups, then N turns) on the
 * generation `bench/postgresMillion.ts --keep` left, with per turn the app's CPU and page faults, the backend's
 * steps, the candidates' rows read (and how many an earlier turn had read), and per server connection its CPU and
 * minor page faults (from /proc: the server must run on this machine; `*` marks a connection new in that turn).
 * Also (session 17): `engine.ready()`'s time, CPU and faults; per turn the partial-sum buffers made so far
 * (`scratchMisses`), heapTotal/external, and per step the app's faults since the previous step ended (`fN`).
 * `--dump-turn N` writes turn N's statements to /tmp/pgfresh16/turnN.json for `bench/pgReplay.ts`.
 * `node --expose-gc --import tsx bench/pgFreshProbe.ts --url postgres://… [--turns 20] [--clients 16]
 *   [--queries /tmp/lexground-pg-million-1000000.json] [--dump-turn N]`
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { KnowledgeGroundingEngine } from "../src/index.js";
import { createPostgresBackend } from "../src/postgres/index.js";
import { PostingSearch } from "../src/postgres/postingSearch.js";
import { TurnProfile } from "../src/postgres/turnProfile.js";
import { importPostgresDriver } from "../test/support/postgresCluster.js";
import { engineTurnRunner } from "./implementations.js";
import type { ReaderQueries } from "./postgresReader.js";

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 && process.argv[index + 1] !== undefined ? process.argv[index + 1]! : fallback;
}
const url = option("url", "");
if (!url) throw new Error("--url is required");
const turns = Number(option("turns", "20"));
const input = JSON.parse(
  readFileSync(option("queries", "/tmp/lexground-pg-million-1000000.json"), "utf8"),
) as ReaderQueries;

function procStat(pid: number): { cpu: number; faults: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { cpu: (Number(fields[11]) + Number(fields[12])) * 10, faults: Number(fields[7]) };
  } catch {
    return null;
  }
}

const pg = (await importPostgresDriver()) as unknown as {
  Client: new (c: {
    connectionString: string;
  }) => {
    connect(): Promise<void>;
    query(t: string): Promise<{ rows: Record<string, unknown>[] }>;
    end(): Promise<void>;
  };
};
const monitor = new pg.Client({ connectionString: url });
await monitor.connect();
async function lexgroundPids(): Promise<number[]> {
  const result = await monitor.query("select pid from pg_stat_activity where application_name = 'lexground'");
  return result.rows.map((row) => Number(row.pid));
}

const backend = createPostgresBackend({
  connectionString: url,
  schema: "bench",
  maxConnections: Number(option("clients", "16")),
  statementTimeoutMs: 600_000,
  connectionTimeoutMs: 600_000,
});
const engine = new KnowledgeGroundingEngine({
  enabled: true,
  sources: [],
  backend,
  blockedDomains: input.blockedDomains,
  timeoutMs: 600_000,
});
const readyFaults = process.resourceUsage().minorPageFault;
const readyCpu = process.cpuUsage();
const readyStarted = performance.now();
await engine.ready();
{
  const used = process.cpuUsage(readyCpu);
  console.log(
    `ready: ${(performance.now() - readyStarted).toFixed(0)} ms, app CPU ${((used.user + used.system) / 1000).toFixed(0)} faults ${process.resourceUsage().minorPageFault - readyFaults}`,
  );
}
const runner = engineTurnRunner(engine);
const everRead = new Set<number>();
let rowStats = "";
const searchPrototype = PostingSearch.prototype as unknown as {
  readFrequentRows: (docs: Int32Array, onRow: unknown) => Promise<void>;
};
const originalRows = searchPrototype.readFrequentRows;
searchPrototype.readFrequentRows = function (docs, onRow) {
  let again = 0;
  for (const doc of docs) if (everRead.has(doc)) again++;
  for (const doc of docs) everRead.add(doc);
  rowStats += ` rows ${docs.length} (read before ${again})`;
  return originalRows.call(this, docs, onRow);
};
const dumpTurn = Number(option("dump-turn", "0"));
let current = 0;
const dumped: { kind: string; text: string; values?: unknown[] }[] = [];
const originalCopy = backend.readCopy.bind(backend);
backend.readCopy = (query, onTuple) => {
  if (current === dumpTurn) dumped.push({ kind: "copy", text: query });
  return originalCopy(query, onTuple);
};
const originalRead = backend.read.bind(backend);
backend.read = (config) => {
  if (current === dumpTurn)
    dumped.push({
      kind: "read",
      text: config.text,
      values: config.values?.map((value) => {
        if (!Buffer.isBuffer(value)) return value;
        const count = value.readInt32BE(12);
        return Array.from({ length: count }, (_, index) => value.readInt32BE(20 + index * 8 + 4));
      }),
    });
  return originalRead(config);
};
let scratchMisses = 0;
const cacheProto = backend.postingCache as unknown as {
  takeScratch: (length: number) => Float64Array | undefined;
};
const originalTake = cacheProto.takeScratch.bind(backend.postingCache);
cacheProto.takeScratch = (length) => {
  const found = originalTake(length);
  if (!found) scratchMisses++;
  return found;
};
const profile = new TurnProfile();
backend.turnProfile = profile;
// Page faults since the previous step was added, per step (steps are added as they end).
const stepFaults = new Map<string, number>();
let lastFaults = process.resourceUsage().minorPageFault;
const originalAdd = profile.add.bind(profile);
profile.add = (step, milliseconds, bytes) => {
  const now = process.resourceUsage().minorPageFault;
  stepFaults.set(step, (stepFaults.get(step) ?? 0) + now - lastFaults);
  lastFaults = now;
  originalAdd(step, milliseconds, bytes);
};
const seen = new Map<number, { cpu: number; faults: number }>();
const all = [
  ...input.warmupQueries.slice(0, 5).map((q) => ({ q, warm: true })),
  ...input.queries.slice(0, turns).map((q) => ({ q, warm: false })),
];
let number = 0;
for (const { q, warm } of all) {
  number++;
  current = number;
  profile.reset();
  stepFaults.clear();
  lastFaults = process.resourceUsage().minorPageFault;
  rowStats = "";
  const before = new Map<number, { cpu: number; faults: number }>();
  for (const pid of await lexgroundPids()) before.set(pid, procStat(pid) ?? { cpu: 0, faults: 0 });
  const cpu = process.cpuUsage();
  const faults = process.resourceUsage().minorPageFault;
  const started = performance.now();
  await runner.turn(q);
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const appFaults = process.resourceUsage().minorPageFault - faults;
  const server: string[] = [];
  for (const pid of await lexgroundPids()) {
    const now = procStat(pid);
    if (!now) continue;
    const was = before.get(pid) ?? { cpu: 0, faults: 0 };
    const fresh = !seen.has(pid);
    seen.set(pid, now);
    const dc = now.cpu - was.cpu;
    const df = now.faults - was.faults;
    if (dc > 0 || df > 50) server.push(`${pid}${fresh ? "*" : ""} cpu ${dc} faults ${df}`);
  }
  const steps = [...profile.steps]
    .map(
      ([k, v]) =>
        `${k} ${v.milliseconds.toFixed(1)}${v.count > 1 ? `/${v.count}` : ""}${v.bytes ? ` ${(v.bytes / 1e6).toFixed(2)}MB` : ""}${stepFaults.get(k) ? ` f${stepFaults.get(k)}` : ""}`,
    )
    .join(", ");
  console.log(
    `${warm ? "warm-up" : "turn"} ${number}: ${wall.toFixed(0)} ms, recent ${q.recentTurns.length}, app CPU ${((used.user + used.system) / 1000).toFixed(0)} faults ${appFaults} scratchMisses ${scratchMisses} heap ${(process.memoryUsage().heapTotal / 1e6).toFixed(0)}/${(process.memoryUsage().external / 1e6).toFixed(0)}MB; server [${server.join("; ")}];${rowStats}; ${steps}`,
  );
}
if (dumpTurn)
  (await import("node:fs")).writeFileSync(`/tmp/pgfresh16/turn${dumpTurn}.json`, JSON.stringify(dumped));
await backend.close();
await monitor.end();
