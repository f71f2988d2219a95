/**
 * The last step of `npm run build`: replaces the one-file-per-module JavaScript that `tsc` wrote to `dist/` by
 * esbuild bundles of the package's entry points (every `exports` target, the CLI and the build worker) with their
 * shared code in chunks under `dist/knowledge/`. One esbuild run for all of them, so every module still exists once
 * per process whichever entries an application imports; `tsc`'s declarations stay as they are.
 *
 * Why: Node loads an ES module graph file by file (resolve, read, compile, link). The root export was 49 modules;
 * loading them took most of a cold start's time after Node's own (`npm run bench:coldstart`), and a bundle of the
 * same code loads in a fraction of it. Peer and runtime dependencies stay `import`s of their packages.
 */
import { readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const staging = join(root, "dist-bundle");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));

/** Every JavaScript file `package.json` points at, and the worker the parallel build starts by URL. */
function entryPoints() {
  const targets = new Set(["./dist/knowledge/buildWorker.js", ...Object.values(manifest.bin ?? {})]);
  const visit = (value) => {
    if (typeof value === "string") {
      if (value.endsWith(".js")) targets.add(value);
    } else if (value && typeof value === "object") for (const nested of Object.values(value)) visit(nested);
  };
  visit(manifest.exports);
  return [...targets].map((target) => join(root, target));
}

function filesUnder(directory) {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

rmSync(staging, { recursive: true, force: true });
await build({
  entryPoints: entryPoints(),
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
});

// The parallel build resolves its worker as `./buildWorker.js` from the file its code lands in.
for (const file of filesUnder(staging)) {
  if (!file.endsWith(".js") || file.endsWith("buildWorker.js")) continue;
  if (
    readFileSync(file, "utf8").includes('"./buildWorker.js"') &&
    dirname(file) !== join(staging, "knowledge")
  )
    throw new Error(`bundle: ${relative(staging, file)} starts the build worker but is not beside it`);
}

// tsc's JavaScript (and its maps) goes; its declarations stay; the bundles take the entry points' places.
for (const file of filesUnder(dist)) if (/\.js(\.map)?$/.test(file)) rmSync(file);
for (const file of filesUnder(staging)) renameSync(file, join(dist, relative(staging, file)));
rmSync(staging, { recursive: true, force: true });
