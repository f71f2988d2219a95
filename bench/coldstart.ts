/**
 * Cold start: wall time from spawning a fresh Node process to its first grounded turn, with and without a
 * prebuilt index artifact, on synthetic registries. Each child runs the built package (`dist/`, plain `node`, no
 * TypeScript loader), reads the manifest, constructs the engine and grounds one query. Run with
 * `npm run bench:coldstart -- [--sizes 10000,100000] [--runs 3]`; it builds `dist/` first.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { buildIndexArtifact } from "../src/index.js";
import type { KnowledgeManifest } from "../src/types/knowledge.js";
import { generateSyntheticRegistry } from "./synthetic.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1]! : fallback;
}

const sizes = option("sizes", "10000,100000").split(",").map(Number);
const runs = Number(option("runs", "3"));

const CHILD = `
import { readFileSync } from "node:fs";
const [indexPath, manifestPath, artifactPath, query] = process.argv.slice(2);
const { KnowledgeGroundingEngine, manifestToSources } = await import(indexPath);
const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
const engine = new KnowledgeGroundingEngine({
  enabled: true,
  sources: manifestToSources(manifest),
  timeoutMs: 600000,
  ...(artifactPath !== "-" ? { indexArtifact: artifactPath } : {}),
});
const outcome = await engine.ground({ query });
const status = engine.getStatus();
process.stdout.write(JSON.stringify({ origin: status.snapshotOrigin, entries: status.entryCount,
  grounded: outcome.ephemeralContext !== null, failure: outcome.metadata.failureReason ?? null,
  rssMb: Math.round(process.memoryUsage().rss / 1048576) }));
`;

function runChild(childPath: string, manifestPath: string, artifactPath: string, query: string) {
  return new Promise<{ milliseconds: number; report: Record<string, unknown> }>((resolvePromise, reject) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [
        "--max-old-space-size=8192",
        childPath,
        join(REPO_ROOT, "dist/index.js"),
        manifestPath,
        artifactPath,
        query,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const milliseconds = performance.now() - started;
      if (code !== 0) reject(new Error(`child exited with ${code}`));
      else resolvePromise({ milliseconds, report: JSON.parse(output) });
    });
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  execFileSync("npm", ["run", "build"], { cwd: REPO_ROOT, stdio: "ignore" });
  const directory = mkdtempSync(join(tmpdir(), "lexground-coldstart-"));
  const childPath = join(directory, "child.mjs");
  writeFileSync(childPath, CHILD);
  console.log(
    `cold start: ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), Node ${process.version}, load ${loadavg()[0]!.toFixed(2)}`,
  );
  console.log("");
  console.log(
    "| entries | manifest MB | artifact MB | without artifact (ms) | with artifact (ms) | × faster | runs |",
  );
  console.log("|--:|--:|--:|--:|--:|--:|--:|");
  try {
    for (const size of sizes) {
      const workload = generateSyntheticRegistry({ size, seed: 42, queryCount: 1 });
      const manifest: KnowledgeManifest = {
        schemaVersion: "1",
        contentVersion: `synthetic-${size}`,
        generatedAt: "2026-01-01T00:00:00.000Z",
        catalogs: [{ id: "synthetic", entries: workload.entries }],
      };
      const manifestPath = join(directory, `kb-${size}.json`);
      const manifestText = JSON.stringify(manifest);
      writeFileSync(manifestPath, manifestText);
      const artifact = await buildIndexArtifact([
        { id: "synthetic", version: manifest.contentVersion, entries: workload.entries },
      ]);
      const artifactPath = join(directory, `kb-${size}.lxg`);
      writeFileSync(artifactPath, artifact);
      const query = workload.queries[0]!.query;
      const without: number[] = [];
      const withArtifact: number[] = [];
      for (let run = 0; run < runs; run++) {
        const built = await runChild(childPath, manifestPath, "-", query);
        if (built.report.origin !== "built" || !built.report.grounded)
          throw new Error(`unexpected: ${JSON.stringify(built.report)}`);
        without.push(built.milliseconds);
        const loaded = await runChild(childPath, manifestPath, artifactPath, query);
        if (loaded.report.origin !== "artifact" || !loaded.report.grounded)
          throw new Error(`unexpected: ${JSON.stringify(loaded.report)}`);
        withArtifact.push(loaded.milliseconds);
      }
      const slow = median(without);
      const fast = median(withArtifact);
      console.log(
        `| ${size} | ${(manifestText.length / 1048576).toFixed(1)} | ${(artifact.byteLength / 1048576).toFixed(1)} | ${slow.toFixed(0)} | ${fast.toFixed(0)} | ${(slow / fast).toFixed(2)} | ${runs} |`,
      );
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log("");
  console.log(
    "Median wall time from spawning `node` to the first grounded turn (read manifest, validate, content hash, build or load, one ground()).",
  );
}

await main();
