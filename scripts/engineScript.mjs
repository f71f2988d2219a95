/**
 * Part of `npm run build` (called by scripts/bundle.mjs): the engine chunk (the root export's code, one file) for
 * Node with a V8 code cache.
 *
 * Why: a 10k cold start spent about 20 ms compiling the chunk's ~480 KiB at its import (V8's pre-parse) and 10-18 ms
 * compiling lazily, at the first turn, the functions the turn runs (README, "Prebuilt index artifacts and cold
 * start"). Node 20 has no module compile cache (`module.enableCompileCache` is Node 22), but `vm.Script` takes a V8
 * code cache, and `script.createCachedData()` made after a representative first turn holds the bytecode of every
 * function compiled until then. So the build writes, beside the chunk (`dist/knowledge/rootChunk.js`, unchanged):
 *
 * - `rootChunk.script.js`: the same code as a classic script, a function expression that takes the chunk's URL (its
 *   only `import.meta` use: the workers are started from beside it) and returns the chunk's exports; same lines.
 * - `rootChunk.cache`: V8's code cache of that script, made in a fresh `node` (no flags) after loading a small
 *   self-contained artifact from a file and grounding one turn on it.
 * - `rootChunk.node.js`: the loader. Every file of `dist/` imports the engine as `#lexground-engine`; package.json
 *   `imports` maps it, under the `node-addons` condition (only Node itself matches it, not bundlers, Deno or Bun;
 *   `--no-addons` turns it off), to the loader, and otherwise to the chunk. One module either way, so every entry
 *   point shares the same classes. The loader compiles the script with the cache when the process has no V8
 *   option (V8 takes a cache only under the flags it was made with; a rejected one costs more than the module) and
 *   the cache passes its check (V8 11.3 does not check the payload: see checkModuleBytes); V8 still checks its
 *   version, flags and source length and compiles normally when they differ. It loads the chunk instead (through
 *   `require`, synchronous: the loader has no top-level await, so `require("lexground")` still works) when the
 *   script cannot be read or run, under V8 options, with source maps enabled (a `vm` script's stack traces are not
 *   mapped), and with `LEXGROUND_CODE_CACHE=off`. `LEXGROUND_CODE_CACHE=report` prints what it did to stderr.
 *   While the engine's top level runs, the loader offers it the check's memory (see `takeLoaderScratch` in
 *   src/knowledge/runtime.ts).
 *
 * The cache sits in the package's own `dist/`, beside the code, with the code's trust; nothing is read from or
 * written to any other place.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** The specifier every file of `dist/` imports the engine by (package.json `imports`). */
export const ENGINE_SPECIFIER = "#lexground-engine";

/** The exported names of an esbuild chunk: its last statement, `export { a, b, ... };` (no renames). */
function exportedNames(text, file) {
  const at = text.lastIndexOf("\nexport {");
  const end = at < 0 ? -1 : text.indexOf("};", at);
  if (at < 0 || end < 0) throw new Error(`engine script: ${file} has no export list`);
  const names = text
    .slice(at + "\nexport {".length, end)
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  for (const name of names)
    if (!/^[A-Za-z_$][\w$]*$/.test(name)) throw new Error(`engine script: export "${name}" is renamed`);
  const rest = text.slice(end + 2);
  if (rest.replace(/\/\/[^\n]*/g, "").trim() !== "")
    throw new Error(`engine script: code after ${file}'s exports`);
  return { names, body: text.slice(0, at) };
}

/**
 * The loader exports copies of the script's bindings (`export const`), not live bindings: checked that no exported
 * `var` or `let` is assigned anywhere but at its declaration, and that the chunk has no other import or export.
 */
function checkChunk(body, names, file) {
  // esbuild writes top-level statements at column 0 (a dynamic import() in a worker's source text is not one).
  if (/^(import\s*[\w{*"']|export\s)/m.test(body))
    throw new Error(`engine script: ${file} imports or exports elsewhere`);
  const metaUses = body.match(/\bimport\.meta\b(\.url)?/g) ?? [];
  if (metaUses.some((use) => use !== "import.meta.url"))
    throw new Error(`engine script: ${file} uses import.meta other than import.meta.url`);
  for (const name of names) {
    const escaped = name.replace(/\$/g, "\\$");
    const declaration = new RegExp(
      `^(var|let|const|function\\*?|async function|class) ${escaped}\\b`,
      "m",
    ).exec(body);
    if (!declaration) throw new Error(`engine script: no top-level declaration of ${name} in ${file}`);
    if (declaration[1] !== "var" && declaration[1] !== "let") continue;
    const assignments =
      body.match(new RegExp(`(^|[^.\\w$])${escaped}\\s*(=(?!=)|\\+=|-=|\\+\\+|--)`, "gm")) ?? [];
    if (assignments.length !== 1) throw new Error(`engine script: ${name} is assigned after its declaration`);
  }
}

/**
 * V8 11.3 (Node 20) checks a code cache's header (version, flags, source length, payload length) but not its
 * payload: a cache with damaged payload bytes aborts the process (a V8 fatal error, not an exception). So the loader
 * checks the payload first, with this WebAssembly function (a JavaScript loop over the ~300 KB runs interpreted at
 * a cold start: 9-30 ms; this, well under a millisecond): over the 32-bit words of memory below `length`,
 * `h = (h ^ word) * 0x01000193` and `s = rotl(s, 5) + word`; returns `h ^ s`. It detects corruption, not tampering
 * (the cache has the code's own trust).
 */
function checkModuleBytes(pages) {
  const leb = (value) => {
    const bytes = [];
    do {
      let byte = value & 0x7f;
      value >>>= 7;
      if (value !== 0) byte |= 0x80;
      bytes.push(byte);
    } while (value !== 0);
    return bytes;
  };
  const signedLeb = (value) => {
    const bytes = [];
    for (;;) {
      const byte = value & 0x7f;
      value >>= 7;
      if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
        bytes.push(byte);
        return bytes;
      }
      bytes.push(byte | 0x80);
    }
  };
  const section = (id, content) => [id, ...leb(content.length), ...content];
  const name = (text) => [text.length, ...[...text].map((character) => character.charCodeAt(0))];
  // Locals: 0 the length in bytes (a multiple of 4), 1 the position, 2 h, 3 s.
  const body = [
    1,
    3,
    0x7f,
    0x41,
    ...signedLeb(0x811c9dc5 | 0),
    0x21,
    2,
    0x02,
    0x40,
    0x03,
    0x40,
    0x20,
    1,
    0x20,
    0,
    0x4f,
    0x0d,
    1,
    0x20,
    2,
    0x20,
    1,
    0x28,
    2,
    0,
    0x73,
    0x41,
    ...signedLeb(0x01000193),
    0x6c,
    0x21,
    2,
    0x20,
    3,
    0x41,
    5,
    0x77,
    0x20,
    1,
    0x28,
    2,
    0,
    0x6a,
    0x21,
    3,
    0x20,
    1,
    0x41,
    4,
    0x6a,
    0x21,
    1,
    0x0c,
    0,
    0x0b,
    0x0b,
    0x20,
    2,
    0x20,
    3,
    0x73,
    0x0b,
  ];
  return [
    0x00,
    0x61,
    0x73,
    0x6d,
    1,
    0,
    0,
    0,
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7f]),
    ...section(3, [1, 0]),
    ...section(5, [1, 0, ...leb(pages)]),
    ...section(7, [2, ...name("memory"), 2, 0, ...name("check"), 0, 0]),
    ...section(10, [1, ...leb(body.length), ...body]),
  ];
}

/** The same check in JavaScript, for the build. */
function checkValue(bytes) {
  const words = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.length >> 2);
  let h = 0x811c9dc5 | 0;
  let s = 0;
  for (const word of words) {
    h = Math.imul(h ^ word, 0x01000193);
    s = (((s << 5) | (s >>> 27)) + word) | 0;
  }
  return h ^ s;
}

/** The loader's source (ESM, no top-level await; see the module comment). */
function loaderSource(names, cache) {
  return `// Generated by scripts/engineScript.mjs (npm run build): the engine for Node, compiled with a V8 code cache.
const host = globalThis.process;
const SCRIPT_BYTES = ${cache.scriptBytes};
const CACHE_BYTES = ${cache.bytes};
const CACHE_CHECK = ${cache.check};
const CHECK_MODULE = [${cache.module.join(",")}];
/** Reads the file at \`path\` into \`bytes\` (its whole length) if it has that length; else returns false. */
function readWhole(fs, path, bytes) {
  const descriptor = fs.openSync(path, "r");
  try {
    if (fs.fstatSync(descriptor).size !== bytes.length) return false;
    let read = 0;
    for (let count = -1; read < bytes.length && count !== 0; read += count)
      count = fs.readSync(descriptor, bytes, read, bytes.length - read, read);
    return read === bytes.length;
  } finally {
    fs.closeSync(descriptor);
  }
}
/**
 * The check's WebAssembly instance: its memory holds the script's source, then the cache (see \`fromScript\`).
 * Undefined without WebAssembly.
 */
function checkInstance() {
  try {
    return new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(CHECK_MODULE))).exports;
  } catch {
    return undefined;
  }
}
/**
 * The script's source. Read into the check's memory, whose pages the cache then reuses: read as a file, it went to a
 * fresh buffer of its own (120 more pages to touch, each a page fault, about 15 microseconds on some virtual machines)
 * before V8 copied it into a string. ASCII (scripts/bundle.mjs): latin1 gives V8 a one-byte string without decoding.
 */
function scriptSource(fs, path, memory) {
  if (memory !== undefined && readWhole(fs, path, new Uint8Array(memory.buffer, 0, SCRIPT_BYTES)))
    return globalThis.Buffer.from(memory.buffer, 0, SCRIPT_BYTES).toString("latin1");
  return fs.readFileSync(path, "latin1");
}
/**
 * The cache, read straight into the check's WebAssembly memory (no copy), if it is the one the build wrote; else
 * undefined (see scripts/engineScript.mjs, checkModuleBytes). Throws when it cannot be read.
 */
function intactCache(fs, path, instance) {
  if (instance === undefined) return undefined;
  const bytes = new Uint8Array(instance.memory.buffer, 0, CACHE_BYTES);
  return readWhole(fs, path, bytes) && instance.check(CACHE_BYTES) === CACHE_CHECK ? bytes : undefined;
}
const mode = host.env.LEXGROUND_CODE_CACHE;
const report = (message) => {
  if (mode === "report") host.getBuiltinModule("node:fs").writeSync(2, \`lexground code cache: \${message}\\n\`);
};
// Options that set no V8 flag. V8 takes the cache only under the flags it was made with (none): under any other
// option of the command line or NODE_OPTIONS the chunk is loaded as a module, as without a cache, rather than
// compiled as a script whose cache V8 then rejects (about as slow, and a cache file read more).
const NODE_ONLY = /^(--(import|require|loader|experimental-loader|conditions|unhandled-rejections|env-file|input-type|title)(=.*)?|-r|-C|-e|--eval|-p|--print|--no-warnings|--no-deprecation|--trace-warnings|[^-].*)$/s;
function plainNode() {
  const options = [...host.execArgv, ...(host.env.NODE_OPTIONS ?? "").split(/\\s+/).filter(Boolean)];
  return options.every((option) => NODE_ONLY.test(option));
}
function fromScript() {
  if (mode === "off" || host.sourceMapsEnabled || host.versions.bun !== undefined || host.versions.deno !== undefined)
    return undefined;
  if (!plainNode()) {
    report("skipped (V8 options)");
    return undefined;
  }
  const fs = host.getBuiltinModule("node:fs");
  const vm = host.getBuiltinModule("node:vm");
  const { fileURLToPath } = host.getBuiltinModule("node:url");
  const scriptPath = fileURLToPath(new URL("./rootChunk.script.js", import.meta.url));
  const instance = checkInstance();
  const source = scriptSource(fs, scriptPath, instance?.memory);
  let cachedData;
  let state = "absent";
  try {
    cachedData = intactCache(fs, fileURLToPath(new URL("./rootChunk.cache", import.meta.url)), instance);
    if (cachedData === undefined) state = "damaged";
  } catch {
    // No cache: compiled as usual.
  }
  const script = new vm.Script(source, { filename: scriptPath, cachedData });
  // The check's memory (its pages already touched by the source and the cache, which V8 no longer needs) offered
  // to the engine while its top-level code runs (see runtime.ts, takeLoaderScratch).
  const scratchKey = Symbol.for("lexground.loaderScratch");
  if (instance !== undefined) globalThis[scratchKey] = instance.memory.buffer;
  let engine;
  try {
    engine = script.runInThisContext()(new URL("./rootChunk.js", import.meta.url).href);
  } finally {
    delete globalThis[scratchKey];
  }
  report(cachedData === undefined ? state : script.cachedDataRejected ? "rejected" : "accepted");
  return engine;
}
let engine;
try {
  engine = fromScript();
} catch (error) {
  report(\`failed (\${error?.message ?? error}), loading the module\`);
}
if (engine === undefined) {
  if (mode === "off" || host.sourceMapsEnabled) report("off");
  engine = host.getBuiltinModule("node:module").createRequire(import.meta.url)("./rootChunk.js");
}
export const {
${names.map((name) => `  ${name},`).join("\n")}
} = engine;
`;
}

/** A small self-contained artifact (built in a child from the ESM chunk) for the cache's representative turn. */
const ARTIFACT_CHILD = `
const [enginePath, artifactPath] = process.argv.slice(1);
const { buildIndexArtifact } = await import(enginePath);
const entries = [
  { id: "settings.multi-step-flow", title: "Multi-Step Flow", summary: "Controls whether guided workflow steps are shown to new accounts.", domain: "account-settings", integrations: ["integration-a"], kind: "configuration", body: "When on, onboarding is split into guided workflow steps.", aliases: ["enableMultiStepFlow"], keywords: ["wizard", "onboarding"], relatedEntryIds: ["settings.progress-indicator"] },
  { id: "settings.progress-indicator", title: "Progress Indicator", summary: "Shows a progress bar during onboarding.", domain: "account-settings", integrations: [], kind: "configuration" },
  { id: "access.policy-types", title: "Policy Types", summary: "The kinds of access policy an administrator can assign.", domain: "access-policies", integrations: [], kind: "policy", body: "There are three policy types: owner, editor and viewer." },
];
process.getBuiltinModule("node:fs").writeFileSync(artifactPath, await buildIndexArtifact([{ id: "docs", version: "1", entries }]));
`;

/**
 * The cache's workload, in a fresh \`node\` without flags (V8 accepts a cache only under the flags it was made with):
 * compiles the script as the loader does, loads the artifact from its file, grounds one turn, saves the cache.
 */
const CACHE_CHILD = `
const [scriptPath, engineUrl, artifactPath, cachePath] = process.argv.slice(1);
const fs = process.getBuiltinModule("node:fs");
const vm = process.getBuiltinModule("node:vm");
// V8 keeps the name a cache was made under: stack traces of a cached load show this one, wherever the package is
// installed, rather than the folder it was built in.
const script = new vm.Script(fs.readFileSync(scriptPath, "latin1"), { filename: "lexground/dist/knowledge/rootChunk.script.js" });
const { KnowledgeGroundingEngine } = script.runInThisContext()(engineUrl);
const engine = new KnowledgeGroundingEngine({ enabled: true, indexArtifact: artifactPath });
const outcome = await engine.ground({ query: "multi step flow onboarding" });
if (engine.getStatus().snapshotOrigin !== "artifact" || outcome.ephemeralContext === null)
  throw new Error("the cache's turn grounded nothing");
fs.writeFileSync(cachePath, script.createCachedData());
`;

/** Checks, in a fresh \`node\`, that the root export loads through the loader with the cache accepted. */
const CHECK_CHILD = `
const [rootUrl] = process.argv.slice(1);
const root = await import(rootUrl);
if (typeof root.KnowledgeGroundingEngine !== "function") throw new Error("no engine");
`;

function filesUnder(directory) {
  return readdirSync(directory, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

/**
 * The root export's entry for Node (\`dist/index.node.js\`, package.json \`exports\` ".", condition \`node-addons\`): the
 * bundled \`dist/index.js\`, importing the loader by its relative path instead of as {@link ENGINE_SPECIFIER}. The
 * same module either way (the specifier resolves to the same file under that condition), but resolving package.json
 * \`imports\` at a cold start cost about 1.8 ms of CPU and 44 page faults more than a relative path (a two-module
 * package, 15 runs). Other runtimes and bundlers take \`default\`: \`dist/index.js\`.
 */
function writeNodeEntry(dist) {
  const manifest = JSON.parse(readFileSync(join(dist, "..", "package.json"), "utf8"));
  const target = manifest.exports?.["."]?.["node-addons"];
  if (target !== "./dist/index.node.js")
    throw new Error(`engine script: package.json exports "." has no node-addons entry ./dist/index.node.js`);
  const text = readFileSync(join(dist, "index.js"), "utf8");
  const quoted = JSON.stringify(ENGINE_SPECIFIER);
  if (text.split(quoted).length !== 2)
    throw new Error(`engine script: dist/index.js does not import ${ENGINE_SPECIFIER} exactly once`);
  writeFileSync(
    join(dist, "index.node.js"),
    text.replace(quoted, JSON.stringify("./knowledge/rootChunk.node.js")),
  );
}

/**
 * Renames the engine chunk `chunkPath` (in `dist`) to `dist/knowledge/rootChunk.js`, points every other file at it as
 * {@link ENGINE_SPECIFIER}, and writes the classic script, its code cache and the loader beside it.
 */
export function emitEngineForNode({ dist, chunkPath }) {
  const knowledge = join(dist, "knowledge");
  const chunkName = chunkPath.slice(chunkPath.lastIndexOf("/") + 1);
  if (join(knowledge, chunkName) !== chunkPath)
    throw new Error(`engine script: ${chunkPath} is not in ${knowledge}`);
  const enginePath = join(knowledge, "rootChunk.js");
  const quotedChunk = new RegExp(`(["'])\\.\\.?/(?:[^"'\\n]*/)?${chunkName.replace(/\./g, "\\.")}\\1`, "g");
  for (const file of filesUnder(dist)) {
    if (!file.endsWith(".js") || file === chunkPath) continue;
    const text = readFileSync(file, "utf8");
    const rewritten = text.replace(quotedChunk, JSON.stringify(ENGINE_SPECIFIER));
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
  const text = readFileSync(chunkPath, "utf8");
  const map = JSON.parse(readFileSync(`${chunkPath}.map`, "utf8"));
  writeFileSync(`${enginePath}.map`, JSON.stringify({ ...map, file: "rootChunk.js" }));
  writeFileSync(
    enginePath,
    text.replace(`//# sourceMappingURL=${chunkName}.map`, "//# sourceMappingURL=rootChunk.js.map"),
  );
  rmSync(chunkPath);
  rmSync(`${chunkPath}.map`);

  const { names, body } = exportedNames(text, chunkName);
  checkChunk(body, names, chunkName);
  if (/[\u0080-\uffff]/.test(body)) throw new Error("engine script: the chunk is not ASCII");
  // Same lines as rootChunk.js (the wrapper's opening shares the chunk's first line), so a stack trace's line numbers
  // are the chunk's; strict, as the module is.
  const script = `(function (lexgroundEngineUrl) { "use strict"; ${body.replaceAll("import.meta.url", "lexgroundEngineUrl")}\nreturn { ${names.join(", ")} };\n})\n`;
  const scriptPath = join(knowledge, "rootChunk.script.js");
  writeFileSync(scriptPath, script, "latin1");

  const temporary = mkdtempSync(join(tmpdir(), "lexground-engine-cache-"));
  // No NODE_OPTIONS: the cache is for a plain \`node\` (V8 rejects it under other V8 flags).
  const environment = { ...process.env, NODE_OPTIONS: "" };
  const node = (source, args, extra = {}) =>
    execFileSync(process.execPath, ["--input-type=module", "-e", source, "--", ...args], {
      env: { ...environment, ...extra },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
  try {
    const artifactPath = join(temporary, "cache.lxg");
    node(ARTIFACT_CHILD, [pathToFileURL(enginePath).href, artifactPath]);
    node(CACHE_CHILD, [
      scriptPath,
      pathToFileURL(enginePath).href,
      artifactPath,
      join(knowledge, "rootChunk.cache"),
    ]);
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
  const cache = readFileSync(join(knowledge, "rootChunk.cache"));
  if (cache.length % 4 !== 0) throw new Error("engine script: the code cache is not whole 32-bit words");
  const scriptBytes = Buffer.byteLength(script, "latin1");
  // The memory holds the script's source, then the cache (see the loader's scriptSource).
  const module = checkModuleBytes(Math.ceil(Math.max(cache.length, scriptBytes) / 65536));
  const check = checkValue(cache);
  const { memory, check: checkInWebAssembly } = new WebAssembly.Instance(
    new WebAssembly.Module(new Uint8Array(module)),
  ).exports;
  new Uint8Array(memory.buffer).set(cache);
  if (checkInWebAssembly(cache.length) !== check) throw new Error("engine script: the cache checks disagree");
  writeFileSync(
    join(knowledge, "rootChunk.node.js"),
    loaderSource(names, { bytes: cache.length, check, module, scriptBytes }),
  );
  writeNodeEntry(dist);
  for (const entry of ["index.js", "index.node.js"]) {
    const checked = spawnSync(
      process.execPath,
      ["--input-type=module", "-e", CHECK_CHILD, "--", pathToFileURL(join(dist, entry)).href],
      { env: { ...environment, LEXGROUND_CODE_CACHE: "report" }, encoding: "utf8" },
    );
    if (checked.status !== 0 || !checked.stderr.includes("lexground code cache: accepted"))
      throw new Error(`engine script: dist/${entry} did not load with the code cache:\n${checked.stderr}`);
  }
}
