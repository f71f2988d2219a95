/**
 * The root export runs unchanged outside Node: it bundles for the browser with no `node:` built-in and no polyfill,
 * and the bundle builds an index, grounds a turn and loads an index artifact from bytes in headless Chromium, with
 * the same cache key as in Node (where the native SHA-256 computes it).
 */

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { chromiumAvailable } from "../support/chromium.js";
import {
  BROWSER_PAGE,
  bundleForBrowser,
  expectPageMatchesNode,
  PINNED_CACHE_KEY,
  repositoryRoot as root,
  runPageInChromium,
} from "./bundle.js";
import { RUNTIME_SOURCES } from "./fixture.js";

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
    const { result } = await runPageInChromium(await bundleForBrowser(BROWSER_PAGE));
    await expectPageMatchesNode(result);
  });
});
