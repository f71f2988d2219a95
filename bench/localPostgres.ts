/**
 * `npm run postgres:local`: a throwaway PostgreSQL cluster for trying the PostgreSQL backend (Debian's
 * `postgresql` package, or LEXGROUND_POSTGRES_BIN): prints its URL and runs until Ctrl-C, then removes it.
 * `npm run postgres:local -- --replica` also starts a streaming read replica of it (`pg_basebackup -R` through a
 * replication slot, a hot standby on its own port) and prints its URL for `readConnectionString`.
 */
import { startPostgresCluster } from "../test/support/postgresCluster.js";

const arguments_ = process.argv.slice(2);
const unknown = arguments_.filter((argument) => argument !== "--replica");
if (unknown.length > 0) {
  console.error(`usage: npm run postgres:local [-- --replica] (unknown: ${unknown.join(" ")})`);
  process.exit(2);
}
const settings = ["shared_buffers=256MB", "work_mem=64MB"];
const { cluster, reason } = await startPostgresCluster(settings);
if (!cluster) {
  console.error(`cannot start PostgreSQL: ${reason}`);
  process.exit(1);
}
const replica = arguments_.includes("--replica") ? await cluster.startReplica(settings) : null;
console.log(`PostgreSQL is running: ${cluster.url}`);
if (replica) {
  console.log(`Streaming read replica (hot standby): ${replica.url}`);
  console.log(
    `  createPostgresBackend({ connectionString: "${cluster.url}", readConnectionString: "${replica.url}" })`,
  );
}
console.log(`  lexground build examples/knowledge-base --backend ${cluster.url}`);
console.log(`  lexground query "instant payouts" --backend ${cluster.url}`);
console.log("Ctrl-C stops it and removes its data.");
const stop = async () => {
  await cluster.dispose();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
setInterval(() => {}, 1 << 30);
