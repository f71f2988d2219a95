/**
 * `lexground/postgres`: the lexical index in PostgreSQL, shared by every replica, with the same selections as the
 * in-memory index. Needs the `pg` package (an optional peer dependency: `npm install pg`).
 *
 * ```ts
 * import { KnowledgeGroundingEngine } from "lexground";
 * import { createPostgresBackend } from "lexground/postgres";
 *
 * const backend = createPostgresBackend({ connectionString: process.env.DATABASE_URL });
 * const writer = new KnowledgeGroundingEngine({ enabled: true, sources, backend }); // publishes a generation
 * const reader = new KnowledgeGroundingEngine({ enabled: true, sources: [], backend }); // serves the current one
 * ```
 *
 * @module
 */
export { createPostgresBackend, PostgresBackend } from "./backend.js";
export {
  loadPostgresDriver,
  MissingPeerDependencyError,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryConfig,
  type PostgresQueryResult,
} from "./driver.js";
export { type PostgresBackendOptions, PostgresBackendOptionsError } from "./options.js";
