/**
 * Cold start: wall time from spawning a fresh Node process to its first grounded turn, on synthetic registries, in
 * three modes: from the manifest (read, validate, hash, build), from the manifest with a prebuilt artifact (read,
 * validate, hash, load), and from the self-contained artifact alone (`indexArtifact` without sources: load only).
 * Each child runs the built package (`dist/`, plain `node`, no TypeScript loader), constructs the engine and
 * grounds one query; a bare `node -e ""` is timed in the same runs (Node's own start, part of every figure). Run with `npm run bench:coldstart -- [--sizes 10000,100000] [--runs 3] [--modes a,b,c] [--artifact-dir DIR] [--heap]`
 * (modes: `manifest`, `manifest+artifact`, `artifact`, `artifact-nocache` (the same with `LEXGROUND_CODE_CACHE=off`: the engine
 * loaded as a module, without its V8 code cache), and `cli`: `lexground query --kb kb.lxg <query>` from spawn to
 * exit, wall time only; default the first three); it builds `dist/` first. The children import the package by
 * name, as an application does. With
 * `--artifact-dir`, the artifacts (and their query) are kept in DIR as `synthetic-<size>-seed42.lxg` and reused by
 * later runs with only the `artifact` mode (a million entries' artifact takes minutes and gigabytes to build).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { buildIndexArtifactChunks, clearKnowledgeIndexCache } from "../src/index.js";
import type { KnowledgeManifest } from "../src/types/knowledge.js";
import {
  describeBuiltEntry,
  median,
  REPO_ROOT,
  timeBareNode,
  timeCliFirstTurn,
  timeFirstTurn,
  writeArtifactPieces,
  writeFirstTurnChild,
} from "./firstTurn.js";
import { generateSyntheticRegistry } from "./synthetic.js";

function option(name: string, fallback: string): string {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1]! : fallback;
}

const sizes = option("sizes", "10000,100000").split(",").map(Number);
const runs = Number(option("runs", "3"));
const modes = option("modes", "manifest,manifest+artifact,artifact").split(",");
const artifactDirectory = option("artifact-dir", "");
/**
 * `--heap`: children run with `--max-old-space-size=8192` (needed from about a million entries). Without it, plain
 * `node` as an application starts, which is what the engine's V8 code cache is made for (any V8 option makes the
 * engine load without it: scripts/engineScript.mjs); sizes from a million entries get it regardless.
 */
const heapFlag = process.argv.includes("--heap");

async function main(): Promise<void> {
  execFileSync("npm", ["run", "build"], { cwd: REPO_ROOT, stdio: "ignore" });
  const directory = mkdtempSync(join(tmpdir(), "lexground-coldstart-"));
  const childPath = writeFirstTurnChild(directory);
  console.log(
    `cold start: ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), Node ${process.version}, load ${loadavg()[0]!.toFixed(2)}`,
  );
  console.log(
    `children load ${describeBuiltEntry()}; node options: ${heapFlag ? "--max-old-space-size=8192" : "none below 1M entries (--max-old-space-size=8192 from 1M)"}`,
  );
  console.log("");
  const labels: Record<string, string> = {
    manifest: "manifest (ms: turn (CPU); exit)",
    "manifest+artifact": "manifest + artifact (ms: turn (CPU); exit)",
    artifact: "artifact alone (ms: turn (CPU); exit)",
    "artifact-nocache": "artifact alone, no code cache (ms: turn (CPU); exit)",
    cli: "CLI query --kb kb.lxg (ms, wall only)",
  };
  console.log(
    `| entries | manifest MB | artifact MB | ${modes.map((mode) => labels[mode] ?? mode).join(" | ")} | bare \`node -e ""\` (ms) | max RSS artifact alone (MB) | runs |`,
  );
  console.log(`|--:|--:|--:|${modes.map(() => "--:|").join("")}--:|--:|--:|`);
  try {
    for (const size of sizes) {
      const manifestPath = join(directory, `kb-${size}.json`);
      const kept = artifactDirectory ? join(artifactDirectory, `synthetic-${size}-seed42`) : "";
      const artifactPath = kept ? `${kept}.lxg` : join(directory, `kb-${size}.lxg`);
      let manifestBytes = 0;
      let artifactBytes: number;
      let query: string;
      if (
        kept &&
        modes.every((mode) => mode === "artifact" || mode === "artifact-nocache" || mode === "cli") &&
        existsSync(`${kept}.query.txt`)
      ) {
        // Kept by an earlier run (its query beside it): reused as it is.
        query = readFileSync(`${kept}.query.txt`, "utf8");
        artifactBytes = statSync(artifactPath).size;
      } else {
        const workload = generateSyntheticRegistry({ size, seed: 42, queryCount: 1 });
        const manifest: KnowledgeManifest = {
          schemaVersion: "1",
          contentVersion: `synthetic-${size}`,
          generatedAt: "2026-01-01T00:00:00.000Z",
          catalogs: [{ id: "synthetic", entries: workload.entries }],
        };
        // A million entries' manifest is longer than the longest string V8 makes: written only when a mode reads it.
        if (modes.some((mode) => mode !== "artifact" && mode !== "artifact-nocache" && mode !== "cli")) {
          const manifestText = JSON.stringify(manifest);
          manifestBytes = Buffer.byteLength(manifestText);
          writeFileSync(manifestPath, manifestText);
        }
        const pieces = await buildIndexArtifactChunks([
          { id: "synthetic", version: manifest.contentVersion, entries: workload.entries },
        ]);
        clearKnowledgeIndexCache();
        if (kept) mkdirSync(artifactDirectory, { recursive: true });
        artifactBytes = writeArtifactPieces(artifactPath, pieces);
        pieces.length = 0;
        query = workload.queries[0]!.query;
        if (kept) writeFileSync(`${kept}.query.txt`, query);
      }
      const heapOption = heapFlag || size >= 1_000_000;
      const times = new Map<string, number[]>(modes.map((mode) => [mode, []]));
      const cpuTimes = new Map<string, number[]>(modes.map((mode) => [mode, []]));
      const exitTimes = new Map<string, number[]>(modes.map((mode) => [mode, []]));
      const bareTimes: number[] = [];
      let rssMb = 0;
      for (let run = 0; run < runs; run++) {
        bareTimes.push(await timeBareNode());
        for (const mode of modes) {
          if (mode === "cli") {
            times.get(mode)!.push(await timeCliFirstTurn({ artifactPath, query }));
            cpuTimes.get(mode)!.push(Number.NaN);
            continue;
          }
          const result = await timeFirstTurn(
            childPath,
            {
              ...(mode === "artifact" || mode === "artifact-nocache" ? {} : { manifestPath }),
              ...(mode === "manifest" ? {} : { artifactPath }),
              query,
            },
            heapOption ? ["--max-old-space-size=8192"] : [],
            mode === "artifact-nocache" ? { LEXGROUND_CODE_CACHE: "off" } : {},
          );
          const expectedOrigin = mode === "manifest" ? "built" : "artifact";
          if (result.report.origin !== expectedOrigin || !result.report.grounded)
            throw new Error(`unexpected (${mode}): ${JSON.stringify(result.report)}`);
          times.get(mode)!.push(result.milliseconds);
          exitTimes.get(mode)!.push(result.exitMilliseconds);
          cpuTimes.get(mode)!.push(result.report.cpuMs);
          if (mode === "artifact") rssMb = Math.max(rssMb, result.report.rssMb);
        }
      }
      console.log(
        `| ${size} | ${manifestBytes ? (manifestBytes / 1048576).toFixed(1) : "-"} | ${(artifactBytes / 1048576).toFixed(1)} | ${modes.map((mode) => (mode === "cli" ? median(times.get(mode)!).toFixed(0) : `${median(times.get(mode)!).toFixed(0)} (${median(cpuTimes.get(mode)!).toFixed(0)}); ${median(exitTimes.get(mode)!).toFixed(0)}`)).join(" | ")} | ${median(bareTimes).toFixed(0)} | ${rssMb || "-"} | ${runs} |`,
      );
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log("");
  console.log(
    `Median wall time from spawning \`node\` to the first grounded turn, i.e. until the parent holds the child's report written right after the turn (in brackets: the child's CPU time up to then, user + system, which the machine's other load disturbs less), then to the child's exit (Node's teardown, and V8's background compilations, which the process waits for); load ${loadavg()[0]!.toFixed(2)} after the run. manifest: read, validate, content hash, build; manifest + artifact: read, validate, content hash, load the artifact (key check); artifact alone: load the self-contained artifact (no sources); CLI: lexground query --kb kb.lxg, spawn to exit; bare \`node -e ""\`: Node's own start and exit (its start is in every figure, its exit in the exit figures).`,
  );
}

await main();
