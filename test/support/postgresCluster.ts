/**
 * Throwaway PostgreSQL clusters for tests and benchmarks: `initdb` into a temporary folder, `pg_ctl start` on a
 * free local port, and stop/start/remove on demand (the fault tests stop the server under a running engine).
 *
 * The binaries come from `LEXGROUND_POSTGRES_BIN` or Debian's `/usr/lib/postgresql/<version>/bin` (package
 * `postgresql`). PostgreSQL refuses to run as root: as root, every command runs as the `postgres` user through
 * `runuser` (the Debian package creates that user). Without binaries (or without the `pg` package) the callers
 * skip with a notice, unless `LEXGROUND_REQUIRE_POSTGRES=1` (CI), where that is a failure.
 */
import { execFile } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { PostgresPool } from "../../src/postgres/index.js";

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
  /** Stops the server at once (`-m immediate`: connections are cut, as in a crash). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  dispose(): Promise<void>;
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

/** Runs a PostgreSQL binary, as the `postgres` user when this process is root. */
async function runAsPostgres(binary: string, args: string[]): Promise<void> {
  const asRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (asRoot) await run("runuser", ["-u", "postgres", "--", binary, ...args], { timeout: 60_000 });
  else await run(binary, args, { timeout: 60_000 });
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
  const folder = mkdtempSync(join(tmpdir(), "lexground-pg-"));
  chmodSync(folder, 0o755);
  const asRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: group } = await run("id", ["-g", "postgres"]);
    chownSync(folder, Number(stdout.trim()), Number(group.trim()));
  }
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
  const options = [
    `-p ${port}`,
    `-k ${folder}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c full_page_writes=off",
    "-c max_connections=60",
    ...settings.map((setting) => `-c ${setting}`),
  ].join(" ");
  const pgCtl = join(bin!, "pg_ctl");
  const start = () =>
    runAsPostgres(pgCtl, ["-D", data, "-l", join(folder, "log"), "-o", options, "-w", "start"]);
  const stop = () => runAsPostgres(pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]).catch(() => {});
  await start();
  return {
    cluster: {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      start,
      stop,
      async dispose() {
        await stop();
        rmSync(folder, { recursive: true, force: true });
      },
    },
  };
}
