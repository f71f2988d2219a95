/**
 * The parts of the `pg` driver the backend uses, typed structurally so that lexground compiles without `pg`'s
 * types and a host's own `pg.Pool` (any 8.x) fits. `pg` itself is an optional peer dependency, loaded on first use.
 */
import {
  importPeerDependency,
  MissingPeerDependencyError,
  PEER_DEPENDENCY_RANGES,
} from "../peerDependency.js";

/**
 * A statement: text, parameters, a name when it should be prepared once per connection, and `query_timeout` (ms)
 * to replace the pool's client-side read timeout for this statement.
 */
export type PostgresQueryConfig = { text: string; values?: unknown[]; name?: string; query_timeout?: number };

/** What a query resolves with (the fields lexground reads). */
export type PostgresQueryResult = { rows: Record<string, unknown>[]; rowCount: number | null };

/** A connection checked out of a pool. */
export type PostgresPoolClient = {
  query(config: PostgresQueryConfig): Promise<PostgresQueryResult>;
  /** Returns the connection to the pool; `true` (or an error) destroys it instead. */
  release(destroy?: boolean | Error): void;
};

/** A `pg.Pool` (or anything with the same methods). */
export type PostgresPool = {
  query(config: PostgresQueryConfig): Promise<PostgresQueryResult>;
  connect(): Promise<PostgresPoolClient>;
  end(): Promise<void>;
};

/** Pool settings passed to `new pg.Pool(…)` for pools lexground creates. */
export type PostgresPoolSettings = {
  connectionString: string;
  max: number;
  connectionTimeoutMillis: number;
  idleTimeoutMillis: number;
  statement_timeout: number;
  query_timeout: number;
  application_name: string;
  options: string;
};

type PostgresModule = { Pool: new (settings: PostgresPoolSettings) => PostgresPool & PoolEvents };
type PoolEvents = { on(event: "error", listener: (error: Error) => void): unknown };

/** The peer dependency, as `MissingPeerDependencyError` names it. */
export const PG_PEER = {
  packageName: "pg",
  versionRange: PEER_DEPENDENCY_RANGES.pg,
  feature: "lexground/postgres",
} as const;

let driver: Promise<PostgresModule> | null = null;

/** Loads `pg` once; rejects with {@link MissingPeerDependencyError} when it is not installed. */
export function loadPostgresDriver(): Promise<PostgresModule> {
  driver ??= importPeerDependency(PG_PEER, async () => {
    // @ts-expect-error pg ships no type declarations (and may be absent): the structural types above describe it.
    const loaded = (await import("pg")) as { default?: PostgresModule } & Partial<PostgresModule>;
    const module = loaded.default ?? (loaded as PostgresModule);
    if (typeof module.Pool !== "function") throw new TypeError("the pg package has no Pool export");
    return module;
  }).catch((error: unknown) => {
    driver = null;
    throw error;
  });
  return driver;
}

/** Creates a pool of the installed `pg` (idle-client errors are recorded, never thrown: they would crash Node). */
export async function createPool(
  settings: PostgresPoolSettings,
  onError: (error: Error) => void,
): Promise<PostgresPool> {
  const { Pool } = await loadPostgresDriver();
  const pool = new Pool(settings);
  pool.on("error", onError);
  return pool;
}

export { MissingPeerDependencyError };
