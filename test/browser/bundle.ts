/**
 * Bundling for the browser and running the bundle in headless Chromium, shared by the runtime test (the root
 * export from the sources) and the package test (the root export as installed from the packed tarball).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "vite";
import { expect } from "vitest";
import { withChromium } from "../support/chromium.js";
import { RUNTIME_QUERY, RUNTIME_SOURCES } from "./fixture.js";

export const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The page the browser runs: builds, grounds, loads an artifact from bytes (see ./page.ts). */
export const BROWSER_PAGE = join(repositoryRoot, "test/browser/page.ts");

/** The cache key of RUNTIME_SOURCES as lexground computed it before the engine left node:crypto (pinned). */
export const PINNED_CACHE_KEY =
  "knowledge-index-cache:v1|weights=title=5,aliases=5,keywords=3,summary=3,body=1|help-center:2026-07-14:3:63f4221152a2708b86f069a89af73894c3ab38e5f4c9743d5f27eca5ff9cc9f6";

const NODE_BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Fails the build on any import of a Node built-in: a browser bundle gets no polyfills. */
function refuseNodeBuiltins(): Plugin {
  return {
    name: "lexground-refuse-node-builtins",
    enforce: "pre",
    resolveId(source, importer) {
      if (source.startsWith("node:") || NODE_BUILTINS.has(source)) {
        this.error(
          `${importer ?? "the entry"} imports the Node built-in "${source}", which a browser does not have`,
        );
      }
      return null;
    },
  };
}

/**
 * Bundles `entry` as one classic script for the browser (a page opened from file:// cannot load modules), failing
 * on any Node built-in. `plugins` run after that check (for example to resolve lexground from an installed copy).
 */
export async function bundleForBrowser(entry: string, plugins: Plugin[] = []): Promise<string> {
  const output = await build({
    configFile: false,
    logLevel: "silent",
    root: repositoryRoot,
    plugins: [refuseNodeBuiltins(), ...plugins],
    resolve: { conditions: ["browser", "import", "default"] },
    build: {
      write: false,
      minify: false,
      target: "es2022",
      lib: { entry, formats: ["iife"], name: "lexgroundRuntimeTest", fileName: "bundle" },
    },
  });
  const results = Array.isArray(output) ? output : [output];
  const chunks = results.flatMap((result) => ("output" in result ? result.output : []));
  const code = chunks.map((chunk) => ("code" in chunk ? chunk.code : "")).join("\n");
  if (!code) throw new Error("the bundle is empty");
  return code;
}

/** What ./page.ts writes into the page, read back from Chromium's DOM. */
export type BrowserPageResult = {
  error?: string;
  hasProcess: boolean;
  content: string | null;
  metadata: { confidence?: string };
  cacheKey: string;
  ready: boolean;
  artifactBytes: number;
  fromBytes: { origin: string | null; content: string | undefined };
  fromPath: { ready: boolean; notes: string[] };
};

/**
 * Runs a bundle of ./page.ts inline in a page in headless Chromium and returns what the page wrote (the dumped
 * DOM is returned too, for failure messages). The caller checks Chromium is there first.
 */
export async function runPageInChromium(code: string): Promise<{ result: BrowserPageResult; dom: string }> {
  // `</script` cannot appear inside an inline script.
  if (/<\/script/i.test(code))
    throw new Error("the bundle holds </script, which would end the inline script");
  const directory = await mkdtemp(join(tmpdir(), "lexground-browser-"));
  try {
    const page = join(directory, "page.html");
    await writeFile(
      page,
      // The encoding declared: a file:// page without one is decoded by guessing from its bytes, which read the
      // fixture's non-ASCII text wrongly once the package's code held no non-ASCII character of its own.
      `<!doctype html><html><head><meta charset="utf-8"></head><body><pre id="result">pending</pre><script>${code}</script></body></html>`,
    );
    const dom = await withChromium((runChromium) =>
      // Virtual time lets the page's asynchronous build and turn finish before the DOM is dumped.
      runChromium(["--virtual-time-budget=30000", "--dump-dom", `file://${page}`]),
    );
    const text = dom.match(/<pre id="result">([\s\S]*?)<\/pre>/)?.[1];
    if (text === undefined) throw new Error(`no result in the page: ${dom.slice(0, 2000)}`);
    const result = JSON.parse(
      text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&amp;", "&"),
    ) as BrowserPageResult;
    return { result, dom };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/**
 * Checks what the page did in the browser: no `process`, a ready engine, the pinned cache key, and the same block
 * and confidence as the same turn in Node (the sources' engine), also when loaded from an artifact's bytes; a file
 * path is refused into the status notes.
 */
export async function expectPageMatchesNode(result: BrowserPageResult): Promise<void> {
  expect(result.error).toBeUndefined();
  expect(result.hasProcess).toBe(false);
  expect(result.ready).toBe(true);
  expect(result.cacheKey).toBe(PINNED_CACHE_KEY);

  // The same turn in Node gives the same context.
  const { KnowledgeGroundingEngine, clearKnowledgeIndexCache } = await import("../../src/index.js");
  clearKnowledgeIndexCache();
  const engine = new KnowledgeGroundingEngine({ enabled: true, sources: RUNTIME_SOURCES });
  const outcome = await engine.ground({ query: RUNTIME_QUERY });
  expect(outcome.ephemeralContext?.content).toContain("[KB:payouts.instant@2026-07-14]");
  expect(result.content).toBe(outcome.ephemeralContext!.content);
  expect(result.metadata.confidence).toBe(outcome.metadata.confidence);

  expect(result.artifactBytes).toBeGreaterThan(100);
  expect(result.fromBytes).toEqual({ origin: "artifact", content: outcome.ephemeralContext!.content });
  // A file path cannot be read in a browser: the engine says so and builds from the sources.
  expect(result.fromPath.ready).toBe(true);
  expect(result.fromPath.notes.join("\n")).toMatch(/needs Node's file system.*pass the artifact's bytes/);
}
