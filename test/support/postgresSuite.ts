/**
 * The start of every PostgreSQL test file in one place: a throwaway cluster (and, on request, a streaming
 * replica of it), `describe` or `describe.skip` with a notice when PostgreSQL or `pg` is missing (a failure under
 * LEXGROUND_REQUIRE_POSTGRES=1), and pools and backends that are closed, newest first, after the file's tests,
 * before the cluster stops.
 */
import { afterAll, describe } from "vitest";
import {
  createPostgresBackend,
  type PostgresBackend,
  type PostgresBackendOptions,
  type PostgresPool,
} from "../../src/postgres/index.js";
import {
  importPostgresDriver,
  POSTGRES_REQUIRED,
  type PostgresCluster,
  type PostgresPoolClass,
  type PostgresReplica,
  startPostgresCluster,
} from "./postgresCluster.js";

/** A test file's PostgreSQL. */
export type PostgresSuite = {
  /** The throwaway primary (null when skipped, or on an external server). */
  cluster: PostgresCluster | null;
  /** Its streaming replica, when asked for. */
  replica: PostgresReplica | null;
  /** Where the primary listens ("" when skipped). */
  url: string;
  /** `describe` when a server runs, else `describe.skip`. */
  describePostgres: typeof describe;
  /** The `pg` driver (null when skipped). */
  pg: { Pool: PostgresPoolClass } | null;
  /** Runs `step` after the file's tests (the latest registered first), before the cluster stops. */
  cleanup(step: () => Promise<unknown>): void;
  /** A `pg` pool on the primary (or `options.connectionString`), its idle errors ignored, ended after the tests. */
  newPool(options?: object): PostgresPool;
  /** A backend on the primary (unless `options.pool`) checking its generation on every turn, closed after the tests. */
  backend(options?: Partial<PostgresBackendOptions>): PostgresBackend;
};

/**
 * Starts the file's PostgreSQL. `what` names its tests in the skip notice; `replica` also starts a streaming
 * replica; `external` uses the server at LEXGROUND_POSTGRES_URL when it is set.
 */
export async function startPostgresSuite(
  what: string,
  options: { replica?: boolean; external?: boolean } = {},
): Promise<PostgresSuite> {
  const externalUrl = options.external ? process.env.LEXGROUND_POSTGRES_URL : undefined;
  let cluster: PostgresCluster | null = null;
  let skipReason: string | undefined;
  if (!externalUrl) {
    const started = await startPostgresCluster();
    cluster = started.cluster;
    skipReason = started.reason;
  }
  const url = externalUrl ?? cluster?.url ?? "";
  if (!url && !POSTGRES_REQUIRED) console.warn(`[lexground] ${skipReason}: ${what} are SKIPPED`);
  const replica = cluster && options.replica ? await cluster.startReplica() : null;
  const pg = url ? await importPostgresDriver() : null;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    await cluster?.dispose();
  });
  const cleanup = (step: () => Promise<unknown>) => {
    cleanups.push(step);
  };
  return {
    cluster,
    replica,
    url,
    describePostgres: url ? describe : (describe.skip as typeof describe),
    pg,
    cleanup,
    newPool(poolOptions = {}) {
      const pool = new pg!.Pool({ connectionString: url, ...poolOptions });
      (pool as unknown as { on(event: string, listener: () => void): void }).on("error", () => {});
      cleanup(() => pool.end());
      return pool;
    },
    backend(backendOptions = {}) {
      const created = createPostgresBackend({
        ...(backendOptions.pool ? {} : { connectionString: url }),
        generationCheckMs: 0,
        ...backendOptions,
      } as PostgresBackendOptions);
      cleanup(() => created.close());
      return created;
    },
  };
}
