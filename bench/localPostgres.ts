/**
 * `npm run postgres:local`: a throwaway PostgreSQL cluster for trying the PostgreSQL backend (Debian's
 * `postgresql` package, or LEXGROUND_POSTGRES_BIN): prints its URL and runs until Ctrl-C, then removes it.
 */
import { startPostgresCluster } from "../test/support/postgresCluster.js";

const { cluster, reason } = await startPostgresCluster(["shared_buffers=256MB", "work_mem=64MB"]);
if (!cluster) {
  console.error(`cannot start PostgreSQL: ${reason}`);
  process.exit(1);
}
console.log(`PostgreSQL is running: ${cluster.url}`);
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
