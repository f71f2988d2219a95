/**
 * Cold-start measuring shared by `bench/coldstart.ts` and `bench/million.ts`: writing an artifact's pieces to a
 * file, and spawning a fresh `node` on the built package (`dist/`, imported by package name as an application does,
 * no TypeScript loader) that constructs an engine and grounds one query, timed from the spawn to its report of that
 * turn and to its exit, with the child's own CPU time up to the report; the CLI's `query --kb kb.lxg`, timed the same way; and, for comparison in the same run, a
 * bare `node -e ""` (Node's own start, which every figure includes).
 */
import { spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

/** The repository root (where `dist/` is built). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * What the children load: the built root export and the files of its static import graph (relative imports), so a
 * figure says whether it measured a bundle or a module tree.
 */
export function describeBuiltEntry(): string {
  // Node resolves the root export through its "node-addons" condition (dist/index.node.js) unless run with
  // --no-addons; other runtimes get dist/index.js.
  const nodeEntry = join(REPO_ROOT, "dist/index.node.js");
  const entry = existsSync(nodeEntry) ? nodeEntry : join(REPO_ROOT, "dist/index.js");
  const seen = new Map<string, number>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    const text = readFileSync(file, "utf8");
    seen.set(file, text.length);
    for (const match of text.matchAll(
      /(?:^|[\n;])\s*(?:import|export)\s[^;]*?from\s*["']([.#][^"']+)["']|(?:^|[\n;])\s*import\s*["']([.#][^"']+)["']/g,
    )) {
      const specifier = (match[1] ?? match[2])!;
      // The engine chunk, imported through package.json `imports` (its module; Node loads it code-cached).
      visit(
        specifier.startsWith("#")
          ? join(REPO_ROOT, "dist/knowledge/rootChunk.js")
          : resolve(dirname(file), specifier),
      );
    }
  };
  visit(entry);
  const bytes = [...seen.values()].reduce((sum, length) => sum + length, 0);
  const cached = existsSync(join(REPO_ROOT, "dist/knowledge/rootChunk.cache"));
  return `${relative(REPO_ROOT, entry)} (npm run build): ${seen.size} files in its static import graph, ${(bytes / 1024).toFixed(0)} KiB${cached ? " (the engine chunk with its V8 code cache in plain node)" : ""}`;
}

/**
 * The child: `node child.mjs <package or path> <manifest or -> <artifact or -> <query>`; prints a JSON report. The
 * harness passes `lexground`: the child imports the package by name, as an application does (resolved through
 * `node_modules` and the package's `exports`; see {@link writeFirstTurnChild}).
 */
const CHILD = `
const [specifier, manifestPath, artifactPath, query] = process.argv.slice(2);
const { KnowledgeGroundingEngine, manifestToSources } = await import(specifier);
// node:fs only to read a manifest: an application started from the artifact alone needs none (an ES import of it
// costs a few milliseconds of its own).
const sources = manifestPath === "-" ? undefined : manifestToSources(JSON.parse(
  process.getBuiltinModule("node:fs").readFileSync(manifestPath, "utf8")));
const engine = new KnowledgeGroundingEngine({
  enabled: true,
  ...(sources ? { sources } : {}),
  timeoutMs: 600000,
  ...(artifactPath !== "-" ? { indexArtifact: artifactPath } : {}),
});
const outcome = await engine.ground({ query });
const status = engine.getStatus();
const cpu = process.cpuUsage();
// The report goes to descriptor 1 directly: process.stdout on a pipe first builds Node's stream machinery (loading
// node:stream and its modules, 2-4 ms of CPU), which is the harness's reporting, not the first turn.
process.getBuiltinModule("node:fs").writeSync(1, JSON.stringify({ origin: status.snapshotOrigin, entries: status.entryCount,
  grounded: outcome.ephemeralContext !== null, failure: outcome.metadata.failureReason ?? null,
  error: status.lastError, rssMb: Math.round(process.memoryUsage().rss / 1048576),
  cpuMs: (cpu.user + cpu.system) / 1000 }));
`;

/** What a child reports about its first turn. */
export type FirstTurnReport = {
  origin: string | null;
  entries: number;
  grounded: boolean;
  failure: string | null;
  error: string | null;
  rssMb: number;
  cpuMs: number;
};

/**
 * Writes the child script into `directory` and returns its path; `directory/node_modules/lexground` links to the
 * repository, so the child's `import("lexground")` resolves as in an application that installed the package.
 */
export function writeFirstTurnChild(directory: string): string {
  const childPath = join(directory, "first-turn-child.mjs");
  writeFileSync(childPath, CHILD);
  mkdirSync(join(directory, "node_modules"), { recursive: true });
  const link = join(directory, "node_modules/lexground");
  if (!existsSync(link)) symlinkSync(REPO_ROOT, link, "dir");
  return childPath;
}

/** Writes an artifact's pieces (see `serializeIndexSnapshotChunks`) to `path`; returns its size in bytes. */
export function writeArtifactPieces(path: string, pieces: readonly Uint8Array[]): number {
  const descriptor = openSync(path, "w");
  let bytes = 0;
  try {
    for (const piece of pieces) {
      let written = 0;
      while (written < piece.byteLength)
        written += writeSync(descriptor, piece, written, Math.min(piece.byteLength - written, 1 << 30));
      bytes += piece.byteLength;
    }
  } finally {
    closeSync(descriptor);
  }
  return bytes;
}

/** Variables added to a child's environment (a string) or removed from it (`undefined`). */
export type ChildEnvironment = Record<string, string | undefined>;

/**
 * The variables through which the parent's environment changes Node's own start, before any code of the child runs:
 * `NODE_EXTRA_CA_CERTS` (Node 20 parses the file's certificates and its bundled root certificates at start, whether
 * or not the process ever opens a TLS connection: 45-50 ms with Debian's 144-certificate bundle on this machine,
 * where the sandbox sets it) and `NODE_OPTIONS`. `withoutNodeStartVariables` removes them from a child's environment.
 */
export const NODE_START_VARIABLES = ["NODE_EXTRA_CA_CERTS", "NODE_OPTIONS"] as const;

/** A child environment without {@link NODE_START_VARIABLES}, plus `environment`. */
export function withoutNodeStartVariables(environment: ChildEnvironment = {}): ChildEnvironment {
  return { ...Object.fromEntries(NODE_START_VARIABLES.map((name) => [name, undefined])), ...environment };
}

/**
 * Spawns `node` with `args`; resolves with the wall time from spawn to exit, what it printed, and the wall time from
 * spawn to its report: the moment its standard output first held one whole JSON value (a child writes its report
 * in one synchronous write right after its first turn; `NaN` when it printed none).
 */
function timedNode(
  args: string[],
  environment: ChildEnvironment = {},
): Promise<{ milliseconds: number; reportMilliseconds: number; output: string }> {
  return new Promise((resolvePromise, reject) => {
    const childEnvironment: NodeJS.ProcessEnv = { ...process.env, ...environment };
    for (const [name, value] of Object.entries(environment))
      if (value === undefined) delete childEnvironment[name];
    const started = performance.now();
    const child = spawn(process.execPath, args, {
      stdio: ["ignore", "pipe", "inherit"],
      env: childEnvironment,
    });
    let output = "";
    let reportMilliseconds = Number.NaN;
    child.stdout.on("data", (chunk) => {
      output += chunk;
      if (Number.isNaN(reportMilliseconds) && output.trimEnd().endsWith("}")) {
        try {
          JSON.parse(output);
          reportMilliseconds = performance.now() - started;
        } catch {
          // Not whole yet, or not a report.
        }
      }
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const milliseconds = performance.now() - started;
      if (code !== 0) reject(new Error(`node ${args.join(" ")} exited with ${code}`));
      else resolvePromise({ milliseconds, reportMilliseconds, output });
    });
  });
}

/**
 * Times a fresh `node` from spawn to its first grounded turn (`milliseconds`: until the parent holds the child's
 * report, written right after the turn) and to its exit (`exitMilliseconds`: Node's teardown included, and V8's
 * background compilations still running, which the process waits for): from the manifest when `manifestPath` is
 * given, with the artifact when `artifactPath` is given (both: the key-checked mode; the artifact alone: no sources).
 * `nodeOptions`: the child's `node` options (a larger heap by default, which a million entries need; any V8 option
 * makes the child load the engine without its code cache, see scripts/engineScript.mjs); `environment`: added to
 * the child's (a string) or removed from it (`undefined`).
 */
export async function timeFirstTurn(
  childPath: string,
  turn: { manifestPath?: string; artifactPath?: string; query: string },
  nodeOptions: readonly string[] = ["--max-old-space-size=8192"],
  environment: ChildEnvironment = {},
): Promise<{ milliseconds: number; exitMilliseconds: number; report: FirstTurnReport }> {
  const { milliseconds, reportMilliseconds, output } = await timedNode(
    [...nodeOptions, childPath, "lexground", turn.manifestPath ?? "-", turn.artifactPath ?? "-", turn.query],
    environment,
  );
  if (Number.isNaN(reportMilliseconds)) throw new Error(`the child printed no report:\n${output}`);
  return {
    milliseconds: reportMilliseconds,
    exitMilliseconds: milliseconds,
    report: JSON.parse(output) as FirstTurnReport,
  };
}

/**
 * Wall time from spawning the CLI (`dist/cli/bin.js`, as `npx lexground` runs it) on the artifact alone to its exit:
 * `lexground query --kb <artifact> <query>`, human output to a pipe. Its output must show a grounded context.
 */
export async function timeCliFirstTurn(
  turn: { artifactPath: string; query: string },
  environment: ChildEnvironment = {},
): Promise<number> {
  const { milliseconds, output } = await timedNode(
    [join(REPO_ROOT, "dist/cli/bin.js"), "query", "--kb", turn.artifactPath, turn.query],
    environment,
  );
  if (!/^Context\s+[1-9]\d* tokens/m.test(output)) throw new Error(`the CLI grounded nothing:\n${output}`);
  return milliseconds;
}

/** Wall time of a bare `node -e ""` (Node's own start and exit), for comparison in the same run. */
export async function timeBareNode(environment: ChildEnvironment = {}): Promise<number> {
  return (await timedNode(["-e", ""], environment)).milliseconds;
}

/** The median of `values` (the upper one of an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((left, right) => left - right);
  return sorted[Math.floor(sorted.length / 2)]!;
}
