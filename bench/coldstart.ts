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
 * `--environments inherited,clean`: the children's environment, one table row each: `inherited`, the harness's own;
 * `clean`, the same without the variables that change Node's own start (`NODE_EXTRA_CA_CERTS`, `NODE_OPTIONS`:
 * `NODE_START_VARIABLES` in firstTurn.ts). Default: both when the harness's environment sets one of them, else
 * `inherited`. Every row has its own bare `node -e ""`, in the same environment and the same runs.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { buildIndexArtifactChunks, clearKnowledgeIndexCache } from "../src/index.js";
import type { KnowledgeManifest } from "../src/types/knowledge.js";
import {
  type ChildEnvironment,
  describeBuiltEntry,
  median,
  NODE_START_VARIABLES,
  REPO_ROOT,
  timeBareNode,
  timeCliFirstTurn,
  timeFirstTurn,
  withoutNodeStartVariables,
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
const startVariablesSet = NODE_START_VARIABLES.filter((name) => process.env[name] !== undefined);
const environments = option(
  "environments",
  startVariablesSet.length > 0 ? "inherited,clean" : "inherited",
).split(",");
for (const environment of environments)
  if (environment !== "inherited" && environment !== "clean")
    throw new Error(`--environments: "${environment}" is neither inherited nor clean`);
/** What each environment adds to or removes from a child's. */
const environmentChanges: Record<string, ChildEnvironment> = {
  inherited: {},
  clean: withoutNodeStartVariables(),
};

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
  console.log(
    `environments: ${environments.join(", ")}; the harness's sets ${startVariablesSet.length > 0 ? startVariablesSet.map((name) => `${name}=${process.env[name]}`).join(" ") : "none of"} ${NODE_START_VARIABLES.join(", ")} (clean: without them)`,
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
    `| entries | environment | manifest MB | artifact MB | ${modes.map((mode) => labels[mode] ?? mode).join(" | ")} | bare \`node -e ""\` (ms) | max RSS artifact alone (MB) | runs |`,
  );
  console.log(`|--:|:--|--:|--:|${modes.map(() => "--:|").join("")}--:|--:|--:|`);
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
      type Figures = { times: number[]; cpuTimes: number[]; exitTimes: number[] };
      const figures = new Map<string, Map<string, Figures>>(
        environments.map((environment) => [
          environment,
          new Map(modes.map((mode) => [mode, { times: [], cpuTimes: [], exitTimes: [] }])),
        ]),
      );
      const bareTimes = new Map<string, number[]>(environments.map((environment) => [environment, []]));
      const rssMb = new Map<string, number>(environments.map((environment) => [environment, 0]));
      for (let run = 0; run < runs; run++) {
        // The environments alternate within each run, so a change of the machine's state touches both alike.
        for (const environment of environments) {
          const changes = environmentChanges[environment]!;
          bareTimes.get(environment)!.push(await timeBareNode(changes));
          for (const mode of modes) {
            const modeFigures = figures.get(environment)!.get(mode)!;
            if (mode === "cli") {
              modeFigures.times.push(await timeCliFirstTurn({ artifactPath, query }, changes));
              modeFigures.cpuTimes.push(Number.NaN);
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
              mode === "artifact-nocache" ? { ...changes, LEXGROUND_CODE_CACHE: "off" } : changes,
            );
            const expectedOrigin = mode === "manifest" ? "built" : "artifact";
            if (result.report.origin !== expectedOrigin || !result.report.grounded)
              throw new Error(`unexpected (${mode}): ${JSON.stringify(result.report)}`);
            modeFigures.times.push(result.milliseconds);
            modeFigures.exitTimes.push(result.exitMilliseconds);
            modeFigures.cpuTimes.push(result.report.cpuMs);
            if (mode === "artifact")
              rssMb.set(environment, Math.max(rssMb.get(environment)!, result.report.rssMb));
          }
        }
      }
      for (const environment of environments) {
        const cells = modes.map((mode) => {
          const { times, cpuTimes, exitTimes } = figures.get(environment)!.get(mode)!;
          return mode === "cli"
            ? median(times).toFixed(0)
            : `${median(times).toFixed(0)} (${median(cpuTimes).toFixed(0)}); ${median(exitTimes).toFixed(0)}`;
        });
        console.log(
          `| ${size} | ${environment} | ${manifestBytes ? (manifestBytes / 1048576).toFixed(1) : "-"} | ${(artifactBytes / 1048576).toFixed(1)} | ${cells.join(" | ")} | ${median(bareTimes.get(environment)!).toFixed(0)} | ${rssMb.get(environment) || "-"} | ${runs} |`,
        );
      }
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log("");
  console.log(
    `Median wall time from spawning \`node\` to the first grounded turn, i.e. until the parent holds the child's report written right after the turn (in brackets: the child's CPU time up to then, user + system, which the machine's other load disturbs less), then to the child's exit (Node's teardown, and V8's background compilations, which the process waits for); load ${loadavg()[0]!.toFixed(2)} after the run. manifest: read, validate, content hash, build; manifest + artifact: read, validate, content hash, load the artifact (key check); artifact alone: load the self-contained artifact (no sources); CLI: lexground query --kb kb.lxg, spawn to exit; bare \`node -e ""\`: Node's own start and exit in the row's environment (its start is in every figure, its exit in the exit figures). Environment inherited: the harness's own; clean: without ${NODE_START_VARIABLES.join(" and ")}, which change Node's own start.`,
  );
}

await main();
