import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";

const KEY = Symbol.for("lexground.loaderScratch");

afterEach(() => {
  delete (globalThis as Record<symbol, unknown>)[KEY];
  vi.resetModules();
});

/** A small artifact file (its eager sections well under 64 KiB) and the engine's modules imported afresh. */
async function freshEngineWith(offered: unknown) {
  (globalThis as Record<symbol, unknown>)[KEY] = offered;
  vi.resetModules();
  const artifact = await import("./artifact.js");
  const indexCache = await import("./indexCache.js");
  delete (globalThis as Record<symbol, unknown>)[KEY];
  const entries = Array.from({ length: 30 }, (_, index) => ({
    id: `entry-${index}`,
    title: `Entry ${index}`,
    summary: `Summary of entry number ${index}.`,
    domain: "scratch",
    integrations: [],
    kind: "configuration" as const,
  }));
  const bytes = await indexCache.buildIndexArtifact([{ id: "docs", version: "1", entries }]);
  indexCache.clearKnowledgeIndexCache();
  const directory = mkdtempSync(join(tmpdir(), "lexground-scratch-"));
  const path = join(directory, "kb.lxg");
  writeFileSync(path, bytes);
  return { artifact, path, cleanup: () => rmSync(directory, { recursive: true, force: true }) };
}

/** The loaded index's ranks (an eager section). */
function ranksOf(snapshot: { lexical: unknown }): Int32Array {
  return (snapshot.lexical as { ranks: Int32Array }).ranks;
}

/** The buffer the loaded index's ranks are a view of. */
function ranksBuffer(snapshot: { lexical: unknown }): ArrayBufferLike {
  return ranksOf(snapshot).buffer;
}

describe("the Node loader's memory", () => {
  it("holds the first load's eager sections when offered (once), and the loaded snapshot grounds as usual", async () => {
    const offered = new ArrayBuffer(1 << 20);
    new Uint8Array(offered).fill(0xee);
    const { artifact, path, cleanup } = await freshEngineWith(offered);
    try {
      const first = await artifact.loadIndexArtifact(path);
      expect(ranksBuffer(first.snapshot) === offered).toBe(true);
      const second = await artifact.loadIndexArtifact(path);
      expect(ranksBuffer(second.snapshot) === offered).toBe(false);
      // Same index either way.
      expect(Array.from(ranksOf(first.snapshot))).toEqual(Array.from(ranksOf(second.snapshot)));
      const { retrieve } = await import("./retrieval.js");
      const { resolveRetrieval } = await import("./config.js");
      const selection = retrieve(
        first.snapshot,
        { query: "entry 7", recentTurns: [], enabledIntegrations: [] },
        resolveRetrieval(undefined),
      );
      expect(selection.primary[0]?.id).toBe("entry-7");
    } finally {
      cleanup();
    }
  });

  it("is ignored when it is not an ArrayBuffer or too small", async () => {
    for (const offered of [new ArrayBuffer(16), new Uint8Array(1 << 20), "memory"]) {
      const { artifact, path, cleanup } = await freshEngineWith(offered);
      try {
        const loaded = await artifact.loadIndexArtifact(path);
        expect(ranksBuffer(loaded.snapshot) === offered).toBe(false);
      } finally {
        cleanup();
      }
    }
  });
});
