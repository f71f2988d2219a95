/**
 * The engine chunk for Node, compiled with its V8 code cache (scripts/engineScript.mjs): plain `node` loads it with
 * the cache accepted; it exports what the module exports, with the same classes for every entry point, and grounds
 * the same turn; a corrupt, truncated or missing cache, a missing script and V8 options all fall back to a working
 * engine. Runs the built `dist/` in fresh `node` processes (no NODE_OPTIONS: the test runner's would turn it off).
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, repositoryRoot } from "./packed.js";

const execute = promisify(execFile);

/**
 * The child: imports the root export and three subpaths, builds a small self-contained artifact, loads it from a
 * file, grounds one turn; prints what it exported (names, and each value's kind and, for primitives and plain data,
 * its JSON), whether the subpaths share the root's classes, and the turn's context.
 */
const CHILD = `
const [packageRoot, artifactPath] = process.argv.slice(1);
const root = await import(packageRoot + "/dist/index.js");
const neurolink = await import(packageRoot + "/dist/neurolink/index.js");
const postgres = await import(packageRoot + "/dist/postgres/index.js");
const files = await import(packageRoot + "/dist/files/index.js");
// The loader hands its memory over only while the engine's top level runs (see runtime.ts, takeLoaderScratch).
const scratchLeft = Object.getOwnPropertySymbols(globalThis).some((key) => key.description?.startsWith("lexground"));
const describe = (value) =>
  typeof value === "function" ? "function " + value.name + "/" + value.length
  : typeof value === "object" && value !== null && !ArrayBuffer.isView(value) ? JSON.stringify(value) ?? typeof value
  : typeof value + " " + String(value);
const exported = Object.fromEntries(Object.keys(root).sort().map((name) => [name, describe(root[name])]));
const entries = [
  { id: "a.multi-step", title: "Multi-Step Flow", summary: "Guided workflow steps for new accounts.", domain: "docs", integrations: [], kind: "configuration", body: "Onboarding is split into steps.", aliases: ["enableMultiStepFlow"] },
  { id: "a.progress", title: "Progress Indicator", summary: "A progress bar during onboarding.", domain: "docs", integrations: [], kind: "configuration" },
];
const fs = process.getBuiltinModule("node:fs");
fs.writeFileSync(artifactPath, await root.buildIndexArtifact([{ id: "docs", version: "1", entries }]));
root.clearKnowledgeIndexCache();
const engine = new root.KnowledgeGroundingEngine({ enabled: true, indexArtifact: artifactPath });
const outcome = await engine.ground({ query: "enableMultiStepFlow onboarding" });
let thrown;
// A typed error from the engine: the same class, which the root's instanceof recognises.
let thrownAt;
try { await root.loadIndexArtifact(new Uint8Array(10)); } catch (error) { thrown = error?.constructor?.name + ": " + error?.message + " " + (error instanceof root.KnowledgeArtifactError); thrownAt = String(error?.stack).split("\\n").find((line) => line.includes("rootChunk")); }
console.log(JSON.stringify({
  exported,
  shared: neurolink.MissingPeerDependencyError === root.MissingPeerDependencyError &&
    postgres.MissingPeerDependencyError === root.MissingPeerDependencyError,
  filesLoaded: Object.keys(files).length > 0,
  origin: engine.getStatus().snapshotOrigin,
  context: outcome.ephemeralContext,
  thrown: thrown ?? null,
  thrownAt: thrownAt ?? null,
  scratchLeft,
}));
`;

type ChildReport = {
  exported: Record<string, string>;
  shared: boolean;
  filesLoaded: boolean;
  origin: string;
  context: string | null;
  thrown: string | null;
  /** The error's first stack frame in the engine chunk. */
  thrownAt: string | null;
  scratchLeft: boolean;
};

let scratch: string;

beforeAll(async () => {
  await ensureBuilt();
  scratch = mkdtempSync(join(tmpdir(), "lexground-code-cache-"));
}, 300_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs the child on the package at `packageRoot` with `options` and `LEXGROUND_CODE_CACHE=report`. */
async function run(
  packageRoot: string,
  options: string[] = [],
  environment: Record<string, string> = {},
): Promise<{ report: ChildReport; cache: string[] }> {
  const { NODE_OPTIONS: _ignored, ...inherited } = process.env;
  const { stdout, stderr } = await execute(
    process.execPath,
    [
      ...options,
      "--input-type=module",
      "-e",
      CHILD,
      "--",
      packageRoot,
      join(scratch, `${Math.random()}.lxg`),
    ],
    { env: { ...inherited, LEXGROUND_CODE_CACHE: "report", ...environment }, timeout: 60_000 },
  );
  const cache = [...stderr.matchAll(/^lexground code cache: (.*)$/gm)].map((match) => match[1]!);
  return { report: JSON.parse(stdout) as ChildReport, cache };
}

/** A copy of the built package (`dist/`, package.json, node_modules linked) in the scratch folder, to break. */
function copyPackage(name: string): string {
  const copy = join(scratch, name);
  cpSync(join(repositoryRoot, "dist"), join(copy, "dist"), { recursive: true });
  cpSync(join(repositoryRoot, "package.json"), join(copy, "package.json"));
  // The dependencies the files entry point imports.
  symlinkSync(join(repositoryRoot, "node_modules"), join(copy, "node_modules"), "dir");
  return copy;
}

describe("the engine chunk's V8 code cache (Node)", () => {
  let module: ChildReport;

  beforeAll(async () => {
    // --no-addons: package.json `imports` resolves the engine to the plain module, as every other runtime does.
    const { report, cache } = await run(repositoryRoot, ["--no-addons"]);
    expect(cache).toEqual([]);
    module = report;
  }, 120_000);

  it("plain node loads the engine with the cache accepted: same exports, shared classes, same turn", async () => {
    const { report, cache } = await run(repositoryRoot);
    expect(cache).toEqual(["accepted"]);
    expect(Object.keys(report.exported).length).toBeGreaterThan(100);
    expect(report.exported).toEqual(module.exported);
    expect(report.shared).toBe(true);
    expect(module.shared).toBe(true);
    expect(report.filesLoaded).toBe(true);
    expect(report.origin).toBe("artifact");
    expect(report.context).not.toBeNull();
    expect(report.context).toEqual(module.context);
    expect(report.thrown).toMatch(/^KnowledgeArtifactError: .* true$/);
    expect(report.thrown).toBe(module.thrown);
    expect(report.scratchLeft).toBe(false);
  });

  it("stack traces of a cached load name the package's script, not the folder the cache was built in", async () => {
    const copy = copyPackage("moved");
    const { report, cache } = await run(copy);
    expect(cache).toEqual(["accepted"]);
    expect(report.thrownAt).toContain("lexground/dist/knowledge/rootChunk.script.js:");
    expect(report.thrownAt).not.toContain(repositoryRoot);
    // Without the cache: the installed file.
    const off = await run(copy, [], { LEXGROUND_CODE_CACHE: "off" });
    expect(off.report.thrownAt).toContain(join(copy, "dist/knowledge/rootChunk.js"));
  });

  it("a V8 option or LEXGROUND_CODE_CACHE=off loads the module instead", async () => {
    const flagged = await run(repositoryRoot, ["--max-old-space-size=4096"]);
    expect(flagged.cache).toEqual(["skipped (V8 options)"]);
    const off = await run(repositoryRoot, [], { LEXGROUND_CODE_CACHE: "off" });
    expect(off.cache, "off reports nothing").toEqual([]);
    for (const { report } of [flagged, off]) {
      expect(report.exported).toEqual(module.exported);
      expect(report.shared).toBe(true);
      expect(report.context).toEqual(module.context);
    }
  });

  it("a damaged, truncated or missing cache is not used; one V8 rejects neither: the script compiles without it", async () => {
    const copy = copyPackage("broken-cache");
    const cachePath = join(copy, "dist/knowledge/rootChunk.cache");
    const cache = readFileSync(cachePath);
    const header = Buffer.from(cache);
    for (let index = 0; index < 64; index++) header[index] = header[index]! ^ 0xff;
    // Payload bytes V8 11.3 does not check: given to it, they abort the process (a V8 fatal error).
    const payload = Buffer.from(cache);
    for (let index = cache.length >> 1; index < (cache.length >> 1) + 256; index++)
      payload[index] = payload[index]! ^ 0x55;
    const damaged = [Buffer.alloc(cache.length, 0x5a), header, payload, cache.subarray(0, cache.length >> 1)];
    const outcomes: string[][] = [];
    for (const bytes of [...damaged, Buffer.alloc(0)]) {
      writeFileSync(cachePath, bytes);
      const { report, cache: reported } = await run(copy);
      outcomes.push(reported);
      expect(report.exported).toEqual(module.exported);
      expect(report.shared).toBe(true);
      expect(report.context).toEqual(module.context);
    }
    rmSync(cachePath);
    const missing = await run(copy);
    expect(missing.report.context).toEqual(module.context);
    outcomes.push(missing.cache);

    // A whole cache that V8 rejects: made under another V8 flag, with the loader's check rewritten to pass it.
    const scriptPath = join(copy, "dist/knowledge/rootChunk.script.js");
    await execute(
      process.execPath,
      [
        "--max-old-space-size=1000",
        "-e",
        `const fs = require("node:fs"); const script = new (require("node:vm").Script)(fs.readFileSync(${JSON.stringify(scriptPath)}, "latin1"));
         fs.writeFileSync(${JSON.stringify(cachePath)}, script.createCachedData());`,
      ],
      { timeout: 60_000 },
    );
    const foreign = readFileSync(cachePath);
    const words = new Int32Array(foreign.buffer, foreign.byteOffset, foreign.length >> 2);
    let h = 0x811c9dc5 | 0;
    let s = 0;
    for (const word of words) {
      h = Math.imul(h ^ word, 0x01000193);
      s = (((s << 5) | (s >>> 27)) + word) | 0;
    }
    const loaderPath = join(copy, "dist/knowledge/rootChunk.node.js");
    writeFileSync(
      loaderPath,
      readFileSync(loaderPath, "utf8")
        .replace(/^const CACHE_BYTES = \d+;$/m, `const CACHE_BYTES = ${foreign.length};`)
        .replace(/^const CACHE_CHECK = -?\d+;$/m, `const CACHE_CHECK = ${h ^ s};`),
    );
    const rejected = await run(copy);
    expect(rejected.report.exported).toEqual(module.exported);
    expect(rejected.report.context).toEqual(module.context);
    outcomes.push(rejected.cache);
    expect(outcomes).toEqual([
      ["damaged"],
      ["damaged"],
      ["damaged"],
      ["damaged"],
      ["damaged"],
      ["absent"],
      ["rejected"],
    ]);
  }, 120_000);

  it("the package's name resolves to the Node entry (dist/index.node.js) in node, to dist/index.js otherwise; both give the same module", async () => {
    // Imported by name from the repository (the package's self-reference): package.json `exports` ".", `node-addons`.
    const child = `
const named = await import("lexground");
const byPath = await import(${JSON.stringify(`${repositoryRoot}/dist/index.js`)});
const neurolink = await import("lexground/neurolink");
console.log(JSON.stringify({
  resolved: import.meta.resolve("lexground").split("/dist/")[1],
  sameKeys: JSON.stringify(Object.keys(named).sort()) === JSON.stringify(Object.keys(byPath).sort()),
  sameValues: Object.keys(named).every((name) => named[name] === byPath[name]),
  shared: neurolink.MissingPeerDependencyError === named.MissingPeerDependencyError,
  count: Object.keys(named).length,
}));`;
    const { NODE_OPTIONS: _ignored, ...inherited } = process.env;
    const outcomes = [];
    for (const options of [[], ["--no-addons"]]) {
      const { stdout, stderr } = await execute(
        process.execPath,
        [...options, "--input-type=module", "-e", child],
        {
          cwd: repositoryRoot,
          env: { ...inherited, LEXGROUND_CODE_CACHE: "report" },
          timeout: 60_000,
        },
      );
      outcomes.push({ ...JSON.parse(stdout), cache: stderr.trim() });
    }
    expect(outcomes).toEqual([
      {
        resolved: "index.node.js",
        sameKeys: true,
        sameValues: true,
        shared: true,
        count: expect.any(Number),
        cache: "lexground code cache: accepted",
      },
      {
        resolved: "index.js",
        sameKeys: true,
        sameValues: true,
        shared: true,
        count: expect.any(Number),
        cache: "",
      },
    ]);
    expect(outcomes[0]!.count).toBeGreaterThan(100);
  }, 120_000);

  it("a missing or broken script falls back to the module", async () => {
    const copy = copyPackage("broken-script");
    const scriptPath = join(copy, "dist/knowledge/rootChunk.script.js");
    writeFileSync(scriptPath, "(function () { throw new Error('broken'); })\n");
    const broken = await run(copy);
    expect(broken.cache).toEqual(["failed (broken), loading the module"]);
    rmSync(scriptPath);
    const missing = await run(copy);
    expect(missing.cache).toHaveLength(1);
    expect(missing.cache[0]).toMatch(/^failed \(ENOENT.*\), loading the module$/);
    for (const { report } of [broken, missing]) {
      expect(report.exported).toEqual(module.exported);
      expect(report.shared).toBe(true);
      expect(report.context).toEqual(module.context);
    }
  }, 120_000);
});
