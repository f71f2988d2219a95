/**
 * Throwaway PostgreSQL clusters for tests and benchmarks: `initdb` into a temporary folder, `pg_ctl start` on a
 * free local port, and stop/start/remove on demand (the fault tests stop the server under a running engine).
 *
 * The binaries come from `LEXGROUND_POSTGRES_BIN` or Debian's `/usr/lib/postgresql/<version>/bin` (package
 * `postgresql`). PostgreSQL refuses to run as root: as root, every command runs as the `postgres` user through
 * `runuser` (the Debian package creates that user). Without binaries (or without the `pg` package) the callers
 * skip with a notice, unless `LEXGROUND_REQUIRE_POSTGRES=1` (CI), where that is a failure.
 *
 * A cluster can start a streaming read replica of itself ({@link PostgresCluster.startReplica}): a second cluster
 * made by `pg_basebackup -R` (a base backup that writes the standby configuration) through a physical replication
 * slot, started on its own port, replaying the primary's WAL as it streams in, read-only.
 */
import { execFile } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { PostgresPool, PostgresPoolClient, PostgresQueryConfig } from "../../src/postgres/index.js";

const run = promisify(execFile);

/** Whether PostgreSQL tests must run (CI): a missing server or driver is then a failure. */
export const POSTGRES_REQUIRED = process.env.LEXGROUND_REQUIRE_POSTGRES === "1";

/** The folder of `initdb` and `pg_ctl`, or null. */
export function findPostgresBin(): string | null {
  const configured = process.env.LEXGROUND_POSTGRES_BIN;
  if (configured) return existsSync(join(configured, "pg_ctl")) ? configured : null;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, "bin", "pg_ctl")))
    .sort((left, right) => Number(right) - Number(left));
  return versions.length > 0 ? join(root, versions[0]!, "bin") : null;
}

/** The `pg` driver's Pool class (tests build their own pools to hold, fail or observe connections). */
export type PostgresPoolClass = new (options: object) => PostgresPool;

/** Imports `pg`, or null when it is not installed. */
export async function importPostgresDriver(): Promise<{ Pool: PostgresPoolClass } | null> {
  try {
    // @ts-expect-error pg ships no types
    const loaded = (await import("pg")) as { default: { Pool: PostgresPoolClass } };
    return loaded.default;
  } catch {
    return null;
  }
}

/** Whether the `pg` driver can be imported. */
export async function hasPostgresDriver(): Promise<boolean> {
  return (await importPostgresDriver()) !== null;
}

/** A running throwaway cluster. */
export type PostgresCluster = {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  url: string;
  port: number;
  /** Its temporary folder (the data in `data/`, the log in `log`). */
  folder: string;
  /** Stops the server at once (`-m immediate`: connections are cut, as in a crash). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  dispose(): Promise<void>;
  /**
   * Starts a streaming read replica of this cluster (hot standby on its own port, through a replication slot the
   * primary keeps WAL for). Disposing the primary disposes its replicas first.
   */
  startReplica(settings?: string[]): Promise<PostgresReplica>;
};

/** A hot-standby replica streaming from a {@link PostgresCluster}. */
export type PostgresReplica = Omit<PostgresCluster, "startReplica"> & {
  /** Pauses WAL replay (the replica keeps serving what it has replayed: a lagging replica). */
  pauseReplay(): Promise<void>;
  /** Resumes WAL replay. */
  resumeReplay(): Promise<void>;
  /** Resolves once the replica has replayed everything the primary had written when this was called. */
  caughtUp(timeoutMs?: number): Promise<void>;
};

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL binary, as the `postgres` user when this process is root; resolves with its output. */
async function runAsPostgres(binary: string, args: string[]): Promise<string> {
  const asRoot = typeof process.getuid === "function" && process.getuid() === 0;
  const { stdout } = asRoot
    ? await run("runuser", ["-u", "postgres", "--", binary, ...args], { timeout: 60_000 })
    : await run(binary, args, { timeout: 60_000 });
  return stdout;
}

/** A temporary folder the server can use (owned by the `postgres` user when this process is root). */
async function serverFolder(): Promise<string> {
  const folder = mkdtempSync(join(tmpdir(), "lexground-pg-"));
  chmodSync(folder, 0o755);
  const asRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: group } = await run("id", ["-g", "postgres"]);
    chownSync(folder, Number(stdout.trim()), Number(group.trim()));
  }
  return folder;
}

/** `pg_ctl` start/stop of one data folder with the options every throwaway server gets, plus `settings`. */
function serverControl(bin: string, folder: string, port: number, settings: string[]) {
  const data = join(folder, "data");
  const options = [
    `-p ${port}`,
    `-k ${folder}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c full_page_writes=off",
    "-c max_connections=60",
    ...settings.map((setting) => `-c ${setting}`),
  ].join(" ");
  const pgCtl = join(bin, "pg_ctl");
  return {
    start: async (): Promise<void> => {
      await runAsPostgres(pgCtl, ["-D", data, "-l", join(folder, "log"), "-o", options, "-w", "start"]);
    },
    stop: async (): Promise<void> => {
      await runAsPostgres(pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => "");
    },
  };
}

/** Runs one SQL statement through `psql` (no pool needed) and returns its unaligned output. */
async function psql(bin: string, port: number, sql: string): Promise<string> {
  const output = await runAsPostgres(join(bin, "psql"), [
    "-h",
    "127.0.0.1",
    "-p",
    String(port),
    "-U",
    "postgres",
    "-d",
    "postgres",
    "-X",
    "-A",
    "-t",
    "-v",
    "ON_ERROR_STOP=1",
    "-c",
    sql,
  ]);
  return output.trim();
}

let replicaCount = 0;

/** Starts a hot standby of the primary on `primaryPort` (see {@link PostgresCluster.startReplica}). */
async function startReplicaOf(
  bin: string,
  primaryPort: number,
  settings: string[],
): Promise<PostgresReplica> {
  const folder = await serverFolder();
  const slot = `lexground_replica_${process.pid}_${++replicaCount}`;
  // -R writes standby.signal and primary_conninfo (naming the slot); -X stream copies the WAL written meanwhile.
  await runAsPostgres(join(bin, "pg_basebackup"), [
    "-h",
    "127.0.0.1",
    "-p",
    String(primaryPort),
    "-U",
    "postgres",
    "-D",
    join(folder, "data"),
    "-R",
    "-X",
    "stream",
    "-C",
    "-S",
    slot,
    "-c",
    "fast",
    "--no-sync",
  ]);
  const port = await freePort();
  // Replay waits at most 5 s for a turn that reads tables being dropped (a retired generation), then cancels it.
  const control = serverControl(bin, folder, port, [
    "hot_standby=on",
    "max_standby_streaming_delay=5s",
    ...settings,
  ]);
  await control.start();
  const sleep = () => new Promise((resolve) => setTimeout(resolve, 50));
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    folder,
    start: control.start,
    stop: control.stop,
    async dispose() {
      await control.stop();
      rmSync(folder, { recursive: true, force: true });
      // Otherwise the primary keeps WAL for the slot forever.
      await psql(bin, primaryPort, `select pg_drop_replication_slot('${slot}')`).catch(() => "");
    },
    async pauseReplay() {
      await psql(bin, port, "select pg_wal_replay_pause()");
      for (let attempt = 0; attempt < 400; attempt++) {
        if ((await psql(bin, port, "select pg_get_wal_replay_pause_state()")) === "paused") return;
        await sleep();
      }
      throw new Error("the replica did not pause its replay");
    },
    async resumeReplay() {
      await psql(bin, port, "select pg_wal_replay_resume()");
    },
    async caughtUp(timeoutMs = 30_000) {
      const target = await psql(bin, primaryPort, "select pg_current_wal_lsn()");
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const behind = await psql(
          bin,
          port,
          `select coalesce(pg_last_wal_replay_lsn() < '${target}'::pg_lsn, true)`,
        );
        if (behind === "f") return;
        if (Date.now() > deadline) throw new Error(`the replica did not replay up to ${target}`);
        await sleep();
      }
    },
  };
}

/**
 * Starts a throwaway cluster, or returns null (with the reason) when PostgreSQL or `pg` is not installed. Throws
 * when they are missing and {@link POSTGRES_REQUIRED}.
 */
export async function startPostgresCluster(
  settings: string[] = [],
): Promise<{ cluster: PostgresCluster | null; reason?: string }> {
  const bin = findPostgresBin();
  const driver = await hasPostgresDriver();
  const reason = !bin
    ? "PostgreSQL is not installed (apt-get install postgresql, or set LEXGROUND_POSTGRES_BIN)"
    : !driver
      ? "the pg package is not installed"
      : undefined;
  if (reason) {
    if (POSTGRES_REQUIRED)
      throw new Error(`PostgreSQL is required (LEXGROUND_REQUIRE_POSTGRES=1): ${reason}`);
    return { cluster: null, reason };
  }
  const folder = await serverFolder();
  const data = join(folder, "data");
  await runAsPostgres(join(bin!, "initdb"), [
    "-D",
    data,
    "-A",
    "trust",
    "-U",
    "postgres",
    "-E",
    "UTF8",
    "--locale=C",
    "--no-sync",
  ]);
  const port = await freePort();
  // wal_level replica and WAL senders (the defaults, spelled out): a replica can stream from any cluster.
  const { start, stop } = serverControl(bin!, folder, port, [
    "wal_level=replica",
    "max_wal_senders=10",
    "max_replication_slots=10",
    ...settings,
  ]);
  await start();
  const replicas: PostgresReplica[] = [];
  return {
    cluster: {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      folder,
      start,
      stop,
      async dispose() {
        for (const replica of replicas.splice(0)) await replica.dispose();
        await stop();
        rmSync(folder, { recursive: true, force: true });
      },
      async startReplica(replicaSettings = settings) {
        const replica = await startReplicaOf(bin!, port, replicaSettings);
        replicas.push(replica);
        return replica;
      },
    },
  };
}

/** A pool whose statements can be observed, failed or held before they run (fault and replica tests). */
export function instrumentedPool(inner: PostgresPool): {
  pool: PostgresPool;
  seen: string[];
  state: {
    fail: ((text: string) => Error | null) | null;
    hold: ((text: string) => Promise<void> | null) | null;
  };
} {
  const seen: string[] = [];
  const state: {
    fail: ((text: string) => Error | null) | null;
    hold: ((text: string) => Promise<void> | null) | null;
  } = { fail: null, hold: null };
  const before = async (config: PostgresQueryConfig) => {
    seen.push(config.text);
    const error = state.fail?.(config.text);
    if (error) throw error;
    await state.hold?.(config.text);
  };
  const pool: PostgresPool = {
    async query(config) {
      await before(config);
      return inner.query(config);
    },
    async connect() {
      const client = await inner.connect();
      const wrapped: PostgresPoolClient = {
        async query(config) {
          await before(config);
          return client.query(config);
        },
        release: (destroy) => client.release(destroy),
      };
      return wrapped;
    },
    end: () => inner.end(),
  };
  return { pool, seen, state };
}

/** Calls `attempt` every 100 ms until `done` accepts its value or `ms` have passed; returns the last value. */
export async function eventually<T>(
  attempt: () => Promise<T>,
  done: (value: T) => boolean,
  ms = 15_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await attempt();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
