/** The backend's shared tables: created and migrated to {@link SCHEMA_VERSION} by one writer at a time. */
import type { PostgresPool } from "./driver.js";
import { migrationStatements, quoteIdentifier, SCHEMA_VERSION } from "./sql.js";

/** Advisory lock key space ("lxg" in ASCII), second key: 1 migrations, 2 publishing. */
export const LOCK_NAMESPACE = 0x6c7867;

/** Creates the schema and applies the migrations it lacks, one writer at a time (an advisory lock). */
export async function migrateSchema(pool: PostgresPool, schema: string): Promise<void> {
  const client = await pool.connect();
  const s = quoteIdentifier(schema);
  try {
    await client.query({ text: "set statement_timeout = 0" });
    await client.query({ text: "select pg_advisory_lock($1, 1)", values: [LOCK_NAMESPACE] });
    await client.query({ text: `create schema if not exists ${s}` });
    await client.query({
      text: `create table if not exists ${s}.schema_version (
        singleton boolean primary key default true check (singleton), version integer not null)`,
    });
    const found = await client.query({ text: `select version from ${s}.schema_version` });
    const current = found.rows.length > 0 ? Number(found.rows[0]!.version) : 0;
    if (current > SCHEMA_VERSION) {
      throw new Error(
        `the ${schema} schema is at version ${current}, newer than this lexground's ${SCHEMA_VERSION}: upgrade lexground`,
      );
    }
    const migrations = migrationStatements(schema);
    for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
      await client.query({ text: "begin" });
      try {
        for (const text of migrations[version - 1]!) await client.query({ text });
        await client.query({
          text: `insert into ${s}.schema_version (version) values ($1)
            on conflict (singleton) do update set version = excluded.version`,
          values: [version],
        });
        await client.query({ text: "commit" });
      } catch (error) {
        await client.query({ text: "rollback" }).catch(() => {});
        throw error;
      }
    }
  } finally {
    // Destroyed rather than returned: its session holds the lock and the changed timeout.
    client.release(true);
  }
}
