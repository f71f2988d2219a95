/**
 * Probe (session 16): replays a dumped turn's statements (`bench/pgFreshProbe.ts --dump-turn N`) on one fresh
 * connection, `--rounds` times, with the server process's CPU and minor page faults per statement (from /proc):
 * round 0 is a new connection's first read of those pages, the next rounds a warm connection's.
 * `node --import tsx bench/pgReplay.ts --url postgres://… --file /tmp/pgfresh16/turn9.json [--rounds 3]
 *   [--prelude] [--explain]`
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { importPostgresDriver } from "../test/support/postgresCluster.js";

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 && process.argv[index + 1] !== undefined ? process.argv[index + 1]! : fallback;
}
type Client = {
  connect(): Promise<void>;
  query(t: string, v?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number }>;
  end(): Promise<void>;
};
const pg = (await importPostgresDriver()) as unknown as {
  Client: new (c: { connectionString: string; options?: string }) => Client;
};
if (!option("url", "")) throw new Error("--url is required");
const dumped = JSON.parse(readFileSync(option("file", "/tmp/pgfresh16/turn9.json"), "utf8")) as {
  kind: string;
  text: string;
  values?: unknown[];
}[];
const rounds = Number(option("rounds", "3"));
const client = new pg.Client({
  connectionString: option("url", ""),
  options: "-c max_parallel_workers_per_gather=0 -c jit=off",
});
await client.connect();
const pid = Number((await client.query("select pg_backend_pid() as pid")).rows[0]!.pid);
const stat = () => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return { cpu: (Number(fields[11]) + Number(fields[12])) * 10, faults: Number(fields[7]) };
};
const explain = process.argv.includes("--explain");
if (process.argv.includes("--prelude")) {
  const before = stat();
  const started = performance.now();
  // The relations' catalog entries and each statement's shape on a trivial input (no data pages beyond a few).
  await client.query(`select count(*) from "bench".g2_postings where term = 'zzzz-none'`);
  await client.query(`select count(*) from "bench".g2_frequent where doc = any('{-1}'::int4[])`);
  await client.query(`select count(*) from "bench".g2_entries where doc = any('{-1}'::int4[])`);
  await client.query(`select count(*) from "bench".g2_phrases where key = 'zzzz-none'`);
  const after = stat();
  console.log(
    `prelude: ${(performance.now() - started).toFixed(1)} ms cpu ${after.cpu - before.cpu} faults ${after.faults - before.faults}`,
  );
}
for (let round = 0; round < rounds; round++) {
  const line: string[] = [];
  let totalMs = 0;
  for (const [index, statement] of dumped.entries()) {
    const before = stat();
    const started = performance.now();
    if (statement.kind === "copy") await client.query(`copy (${statement.text}) to '/dev/null' with binary`);
    else if (explain && round === 0) {
      const plan = await client.query(`explain (analyze, buffers) ${statement.text}`, statement.values);
      console.log(plan.rows.map((row) => row["QUERY PLAN"]).join("\n"));
    } else await client.query(statement.text, statement.values);
    const ms = performance.now() - started;
    totalMs += ms;
    const after = stat();
    line.push(
      `#${index} ${statement.kind} ${ms.toFixed(1)} ms cpu ${after.cpu - before.cpu} faults ${after.faults - before.faults}`,
    );
  }
  console.log(`round ${round}: ${totalMs.toFixed(0)} ms: ${line.join("; ")}`);
}
await client.end();
