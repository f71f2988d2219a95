/**
 * The root export runs unchanged outside Node: it bundles for the browser with no `node:` built-in and no polyfill,
 * and the bundle builds an index, grounds a turn and loads an index artifact from bytes in headless Chromium, with
 * the same cache key as in Node (where the native SHA-256 computes it).
 */

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "vite";
import { afterEach, describe, expect, it, vi } from "vitest";
import { chromiumAvailable, withChromium } from "../support/chromium.js";
import { RUNTIME_QUERY, RUNTIME_SOURCES } from "./fixture.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The cache key of RUNTIME_SOURCES as lexground computed it before the engine left node:crypto (pinned). */
const PINNED_CACHE_KEY =
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

/** Bundles `entry` as one classic script for the browser (a page opened from file:// cannot load modules). */
async function bundleForBrowser(entry: string): Promise<string> {
  const output = await build({
    configFile: false,
    logLevel: "silent",
    root,
    plugins: [refuseNodeBuiltins()],
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

describe("any runtime", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.resetModules();
  });

  it("the cache key is byte-identical to before, with Node's SHA-256 and with the pure JavaScript one", async () => {
    const native = await import("../../src/index.js");
    expect((await native.getOrBuildKnowledgeIndexSnapshot(RUNTIME_SOURCES)).cacheKey).toBe(PINNED_CACHE_KEY);
    // Without process.getBuiltinModule (a browser, an edge runtime) the pure SHA-256 computes the key.
    vi.resetModules();
    vi.stubGlobal("process", { ...process, getBuiltinModule: undefined });
    const pure = await import("../../src/index.js");
    const { usesNativeSha256 } = await import("../../src/knowledge/sha256.js");
    expect(usesNativeSha256()).toBe(false);
    expect((await pure.getOrBuildKnowledgeIndexSnapshot(RUNTIME_SOURCES)).cacheKey).toBe(PINNED_CACHE_KEY);
    expect(pure.buildKnowledgeIndexCacheKey).not.toBe(native.buildKnowledgeIndexCacheKey);
  });

  it("the browser bundle refuses a Node built-in (the check below can fail)", async () => {
    const directory = await mkdtemp(join(tmpdir(), "lexground-bundle-"));
    try {
      const entry = join(directory, "entry.ts");
      await writeFile(entry, 'import { createHash } from "node:crypto";\nconsole.log(createHash);\n');
      await expect(bundleForBrowser(entry)).rejects.toThrow(/Node built-in "node:crypto"/);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("the root export bundles for the browser with no Node built-in", async () => {
    const code = await bundleForBrowser(join(root, "src/index.ts"));
    expect(code).toContain("KnowledgeGroundingEngine");
    // `node:crypto` appears only as the name given to process.getBuiltinModule, never imported or required.
    expect(code).not.toMatch(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)["']node:/);
  });

  it("builds, grounds a turn and loads an artifact from bytes in headless Chromium", async (context) => {
    if (!chromiumAvailable("runtime", "the browser run of the root export")) context.skip();
    const code = await bundleForBrowser(join(root, "test/browser/page.ts"));
    const directory = await mkdtemp(join(tmpdir(), "lexground-browser-"));
    try {
      const page = join(directory, "page.html");
      // `</script` cannot appear inside an inline script; the bundle has none, but make sure.
      expect(code).not.toMatch(/<\/script/i);
      await writeFile(
        page,
        `<!doctype html><html><body><pre id="result">pending</pre><script>${code}</script></body></html>`,
      );
      const dom = await withChromium((runChromium) =>
        // Virtual time lets the page's asynchronous build and turn finish before the DOM is dumped.
        runChromium(["--virtual-time-budget=30000", "--dump-dom", `file://${page}`]),
      );
      const text = dom.match(/<pre id="result">([\s\S]*?)<\/pre>/)?.[1];
      expect(text, dom.slice(0, 2000)).toBeDefined();
      const result = JSON.parse(
        text!
          .replaceAll("&lt;", "<")
          .replaceAll("&gt;", ">")
          .replaceAll("&quot;", '"')
          .replaceAll("&amp;", "&"),
      );
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
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
