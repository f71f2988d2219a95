/**
 * The last step of `npm run build`: replaces the one-file-per-module JavaScript that `tsc` wrote to `dist/` by
 * esbuild bundles of the package's entry points (every `exports` target, the CLI and the build worker) with their
 * shared code in chunks under `dist/knowledge/`. One esbuild run for all of them, so every module still exists once
 * per process whichever entries an application imports; `tsc`'s declarations stay as they are.
 *
 * Why: Node loads an ES module graph file by file (resolve, read, compile, link). The root export was 49 modules;
 * loading them took most of a cold start's time after Node's own (`npm run bench:coldstart`), and a bundle of the
 * same code loads in a fraction of it. Peer and runtime dependencies stay `import`s of their packages.
 *
 * The root export's code is one chunk: esbuild puts code in one chunk per set of entry points that use it, and the
 * other entry points (the CLI's commands, the worker) each use another part of it, which split it into seven
 * chunks, each a file more to load (about 1 ms each at a cold start). Every other entry point (and every module
 * loaded by a dynamic import) therefore also uses all of the root export (`KEEP_ROOT` below), so they share it as
 * one chunk; they load the root export's code with their own (most of them did already; the CLI's `--help` and the
 * build worker load more than before). Checked after the build: the root export is at most two files.
 */
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { emitEngineForNode } from "./engineScript.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const staging = join(root, "dist-bundle");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** The workers started by URL from beside the code that starts them: the parallel build's, the compaction's and the split search's. */
const WORKERS = ["buildWorker.js", "compactionWorker.js", "scoringWorker.js"];

/** Every JavaScript file `package.json` points at, and the workers. */
function entryPoints() {
  const targets = new Set([
    ...WORKERS.map((worker) => `./dist/knowledge/${worker}`),
    ...Object.values(manifest.bin ?? {}),
  ]);
  const visit = (value) => {
    if (typeof value === "string") {
      if (value.endsWith(".js")) targets.add(value);
    } else if (value && typeof value === "object")
      // The root export's Node entry is written after the bundle, from its bundled entry (scripts/engineScript.mjs).
      for (const [condition, nested] of Object.entries(value)) if (condition !== "node-addons") visit(nested);
  };
  visit(manifest.exports);
  return [...targets].map((target) => join(root, target));
}

function filesUnder(directory) {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

const rootEntry = join(root, manifest.exports["."].default);
/** The root export's run-time names (`tsc`'s modules, before bundling; the package has no side effects). */
const rootNames = Object.keys(await import(pathToFileURL(rootEntry).href));
/**
 * Appended to every entry point and dynamically imported module except the root export: it imports every name of
 * the root export and uses them as values, so all of the root export's code is used by every entry point (see the
 * module comment). Named, not `import * as`: a namespace used as a value makes esbuild build it as an object in the
 * root chunk (a getter per export, made at every import of the root export: about 2 ms and 60 page faults of a
 * 10k cold start, `npm run bench:coldstart`), which nothing else needs.
 */
const KEEP_ROOT = (file) =>
  `\nimport { ${rootNames.map((name, index) => `${name} as lexgroundRoot${index}`).join(", ")} } from ${JSON.stringify(relative(dirname(file), rootEntry).replace(/^(?!\.)/, "./"))};\n` +
  `if ([${rootNames.map((_, index) => `lexgroundRoot${index}`).join(", ")}].some((value) => value === undefined))\n` +
  '  throw new Error("lexground: the root export did not load");\n';

/** Entry points and dynamically imported modules (not the root export) get {@link KEEP_ROOT}. */
function keepRootPlugin(entries) {
  const keepers = new Set(entries.filter((entry) => entry !== rootEntry));
  return {
    name: "lexground-keep-root",
    setup(builder) {
      builder.onResolve({ filter: /^\./ }, (args) => {
        if (args.kind === "dynamic-import") {
          const target = resolve(args.resolveDir, args.path);
          if (target !== rootEntry && target.startsWith(dist)) keepers.add(target);
        }
        return undefined;
      });
      builder.onLoad({ filter: /\.js$/ }, (args) => {
        if (!keepers.has(args.path) || !isAbsolute(args.path)) return undefined;
        return { contents: readFileSync(args.path, "utf8") + KEEP_ROOT(args.path), loader: "js" };
      });
    },
  };
}

rmSync(staging, { recursive: true, force: true });
const entries = entryPoints();
await build({
  entryPoints: entries,
  outdir: staging,
  outbase: dist,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  // Beside the worker: the chunk that starts it finds `./buildWorker.js` next to itself (checked below).
  chunkNames: "knowledge/chunk-[hash]",
  sourcemap: true,
  logLevel: "warning",
  plugins: [keepRootPlugin(entries)],
});

// The parallel build and the compaction resolve their workers as `./<worker>.js` from the file their code lands in.
for (const file of filesUnder(staging)) {
  if (!file.endsWith(".js") || WORKERS.some((worker) => file.endsWith(worker))) continue;
  for (const worker of WORKERS)
    if (readFileSync(file, "utf8").includes(`"./${worker}"`) && dirname(file) !== join(staging, "knowledge"))
      throw new Error(`bundle: ${relative(staging, file)} starts ${worker} but is not beside it`);
}

// ASCII only: V8 keeps a source file holding any other character as a two-byte string, which doubles its memory
// and slows its compilation at every cold start (the root chunk had four such characters, all in comments).
// esbuild escapes non-ASCII characters in code (its default charset), so any left are in comments it kept; each
// UTF-16 code unit becomes "?", which leaves every line's columns (and so the source maps) as they were.
for (const file of filesUnder(staging)) {
  if (!file.endsWith(".js")) continue;
  const text = readFileSync(file, "utf8");
  if (/[\u0080-\uffff]/.test(text)) writeFileSync(file, text.replace(/[\u0080-\uffff]/g, "?"));
}

// The root export is its entry file and one chunk (plus, at most, an empty module's): see the module comment.
const rootGraph = new Set();
const visitGraph = (file) => {
  if (rootGraph.has(file)) return;
  rootGraph.add(file);
  for (const match of readFileSync(file, "utf8").matchAll(
    /(?:^|\n)\s*(?:import|export)\b[^;]*?["'](\.[^"']+)["']/g,
  ))
    visitGraph(resolve(dirname(file), match[1]));
};
visitGraph(join(staging, relative(dist, rootEntry)));
const loadedFiles = [...rootGraph].filter((file) => readFileSync(file, "utf8").trim() !== "");
if (loadedFiles.length > 2)
  throw new Error(`bundle: the root export loads ${loadedFiles.length} files where one chunk was expected`);
// No namespace object of the root export is built at its import (see KEEP_ROOT).
for (const file of loadedFiles)
  if (/\b__export\(/.test(readFileSync(file, "utf8")))
    throw new Error(
      `bundle: ${relative(staging, file)} builds a namespace object at the root export's import`,
    );

const engineChunk = loadedFiles.find((file) => file !== join(staging, relative(dist, rootEntry)));
if (!engineChunk) throw new Error("bundle: the root export has no chunk");

// tsc's JavaScript (and its maps) goes; its declarations stay; the bundles take the entry points' places.
for (const file of filesUnder(dist)) if (/\.js(\.map)?$/.test(file)) rmSync(file);
for (const file of filesUnder(staging)) renameSync(file, join(dist, relative(staging, file)));
rmSync(staging, { recursive: true, force: true });

// The engine chunk as `dist/knowledge/engine.js`, and Node's code-cached copy of it (scripts/engineScript.mjs).
emitEngineForNode({ dist, chunkPath: join(dist, relative(staging, engineChunk)) });
