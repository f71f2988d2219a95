/**
 * lexground fuzzing: `npm run fuzz` runs the property suites (test/reliability, test/property and the property
 * tests beside the engine) with many more runs than `npm test` does, one vitest process per suite with
 * LEXGROUND_PROPERTY_RUNS raised, unhandled rejections fatal. It prints every seed (replay a failure with
 * LEXGROUND_SEED=<seed> and the same LEXGROUND_PROPERTY_RUNS), the runs per suite and the outcome, and exits
 * non-zero when any suite fails. A counterexample found here becomes a fixed test beside the property.
 *
 * Flags: --scale F multiplies every run count (default 1, about 5 minutes on 2 cores), --quick is --scale 0.1,
 * --only <substring> runs the suites whose path contains it. LEXGROUND_SEED, when set, is passed through.
 */
import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** Per-test time limit of the fuzzed suites. */
const FUZZ_TEST_TIMEOUT_MS = 20 * 60_000;

/** Suites and the runs each of their properties gets at scale 1 (`npm test` uses far fewer). */
const SUITES: { path: string; runs: number; note: string }[] = [
  {
    path: "test/reliability/authorization.test.ts",
    runs: 2_000,
    note: "5 (entitlements, query) pairs per run",
  },
  { path: "test/reliability/bm25.test.ts", runs: 2_000, note: "" },
  { path: "test/reliability/stuffing.test.ts", runs: 400, note: "" },
  { path: "test/reliability/unicode.test.ts", runs: 2_000, note: "" },
  {
    path: "test/reliability/delimiters.test.ts",
    runs: 3_000,
    note: "plus every compatibility form in every position of nine forged tags, once",
  },
  {
    path: "test/reliability/forgery.test.ts",
    runs: 3_000,
    note: "citation forging: 1-4 entries of forged markers and headers per run",
  },
  { path: "test/reliability/determinism.test.ts", runs: 1_500, note: "" },
  { path: "test/reliability/concurrency.test.ts", runs: 120, note: "3-10 scheduled operations per run" },
  { path: "test/reliability/rebuild.test.ts", runs: 1_000, note: "1-6 overlapping rebuilds per run" },
  { path: "test/reliability/redos.test.ts", runs: 1, note: "not randomized: every regex once" },
  {
    path: "test/reliability/phrases.test.ts",
    runs: 200,
    note: "lookup vs the straightforward one (1-4 queries per registry); 1,024-token lookup time on registries of up to 36 aliases of up to 10,000 characters",
  },
  { path: "test/property/engine-vs-plain.test.ts", runs: 3_000, note: "" },
  {
    path: "test/property/updates.test.ts",
    runs: 1_000,
    note: "incremental updates vs full builds: 1-10 changes per run, branching chains, and one run of 1,000 updates in a row",
  },
  {
    path: "test/neurolink/memoryIsolation.test.ts",
    runs: 5_000,
    note: "2-8 hostile (userId, sessionId) pairs per run; in-memory, and Redis on a real server when installed",
  },
  { path: "src/knowledge/context.test.ts", runs: 5_000, note: "" },
  { path: "src/knowledge/normalize.test.ts", runs: 5_000, note: "" },
  { path: "src/knowledge/resolve.test.ts", runs: 5_000, note: "" },
  { path: "src/knowledge/citation.test.ts", runs: 5_000, note: "" },
  { path: "src/knowledge/artifact.test.ts", runs: 1_000, note: "" },
  { path: "src/knowledge/analyzer.test.ts", runs: 5_000, note: "" },
  { path: "src/knowledge/termDictionary.test.ts", runs: 2_000, note: "up to 200 terms per run" },
  {
    path: "src/knowledge/phraseTrie.test.ts",
    runs: 5_000,
    note: "up to 25 keys and 50 query tokens per run",
  },
];

type Outcome = {
  path: string;
  runs: number;
  properties: number;
  seeds: string[];
  notes: string[];
  passed: number;
  failed: number;
  seconds: number;
  exitCode: number;
};

function parseOptions(argv: readonly string[]): { scale: number; only: string | null } {
  let scale = 1;
  let only: string | null = null;
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index];
    if (flag === "--scale") scale = Number(argv[++index]);
    else if (flag === "--quick") scale = 0.1;
    else if (flag === "--only") only = argv[++index] ?? null;
    else
      throw new Error(
        `unknown flag ${flag}; usage: npm run fuzz -- [--scale F] [--quick] [--only substring]`,
      );
  }
  if (!(scale > 0)) throw new Error("--scale must be a positive number");
  return { scale, only };
}

function runSuite(path: string, runs: number): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      process.execPath,
      // Runs are raised up to a hundredfold here, so `npm test`'s 60 s per-test limit would fail a correct suite
      // on a busy machine: a property gets 20 minutes (this harness checks correctness; speed is the soak's).
      [
        resolve(REPO_ROOT, "node_modules/vitest/vitest.mjs"),
        "run",
        path,
        `--testTimeout=${FUZZ_TEST_TIMEOUT_MS}`,
      ],
      {
        cwd: REPO_ROOT,
        env: {
          ...process.env,
          LEXGROUND_PROPERTY_RUNS: String(runs),
          NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --unhandled-rejections=strict`.trim(),
          FORCE_COLOR: "0",
          NO_COLOR: "1",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const lines = output.split("\n");
      const seeds = lines.filter((line) => /^\[property\] .*: seed -?\d+/.test(line));
      const notes = lines.filter((line) => /^\[(property|redos)\]/.test(line) && !seeds.includes(line));
      const tests = /Tests\s+(?:(\d+) failed)?\s*\|?\s*(?:(\d+) passed)?/.exec(
        lines.find((line) => /^\s*Tests\s/.test(line)) ?? "",
      );
      const outcome: Outcome = {
        path,
        runs,
        properties: seeds.length,
        seeds,
        notes,
        failed: Number(tests?.[1] ?? 0),
        passed: Number(tests?.[2] ?? 0),
        seconds: (performance.now() - started) / 1000,
        exitCode: code ?? 1,
      };
      if (outcome.exitCode !== 0) {
        // Show the failure (counterexample, seed, path) as vitest reported it.
        console.log(
          output
            .split("\n")
            .filter((line) => line.trim() !== "")
            .slice(-80)
            .join("\n"),
        );
      }
      resolvePromise(outcome);
    });
  });
}

async function main(): Promise<void> {
  const { scale, only } = parseOptions(process.argv.slice(2));
  const suites = SUITES.filter((suite) => only === null || suite.path.includes(only));
  console.log(
    `lexground fuzz: ${suites.length} suites, scale ${scale}${process.env.LEXGROUND_SEED ? `, LEXGROUND_SEED=${process.env.LEXGROUND_SEED}` : ""}`,
  );
  const outcomes: Outcome[] = [];
  const started = performance.now();
  for (const suite of suites) {
    const runs = Math.max(1, Math.round(suite.runs * scale));
    const outcome = await runSuite(suite.path, runs);
    outcomes.push(outcome);
    const status = outcome.exitCode === 0 ? "ok" : "FAILED";
    console.log(
      `\n${status.padEnd(6)} ${suite.path}: ${outcome.properties} properties × ${runs} runs${suite.note ? ` (${suite.note})` : ""}, ${outcome.passed} tests passed, ${outcome.failed} failed, ${outcome.seconds.toFixed(0)} s`,
    );
    for (const line of [...outcome.seeds, ...outcome.notes]) console.log(`       ${line}`);
  }
  const totalRuns = outcomes.reduce((sum, outcome) => sum + outcome.properties * outcome.runs, 0);
  const failedSuites = outcomes.filter((outcome) => outcome.exitCode !== 0);
  console.log(
    `\n${totalRuns.toLocaleString("en-US")} property runs requested over ${outcomes.reduce((sum, outcome) => sum + outcome.properties, 0)} properties in ${((performance.now() - started) / 1000).toFixed(0)} s; ` +
      `${outcomes.length - failedSuites.length} suites passed, ${failedSuites.length} failed`,
  );
  console.log(
    `${outcomes.reduce((sum, outcome) => sum + outcome.passed, 0)} passed, ${outcomes.reduce((sum, outcome) => sum + outcome.failed, 0)} failed`,
  );
  if (failedSuites.length > 0) process.exitCode = 1;
}

await main();
