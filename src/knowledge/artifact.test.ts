import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import {
  blockedArbitrary,
  registryArbitrary,
  requestArbitrary,
  resolvedArbitrary,
} from "../../test/property/arbitraries.js";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import {
  deserializeIndexSnapshot,
  KnowledgeArtifactError,
  readIndexArtifactHeader,
  serializeIndexSnapshot,
} from "./artifact.js";
import { assembleKnowledgeContext } from "./context.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import { buildIndexArtifact, buildKnowledgeIndexCacheKey, clearKnowledgeIndexCache } from "./indexCache.js";
import { buildIndexSnapshot } from "./knowledgeIndex.js";
import { normalizeSources } from "./resolve.js";
import { retrieve } from "./retrieval.js";

afterEach(() => clearKnowledgeIndexCache());

const sources = [settingsSource, policiesSource];

describe("index artifact round trip", () => {
  it("a loaded snapshot retrieves exactly like the built one", () => {
    fc.assert(
      fc.property(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
        resolvedArbitrary,
        blockedArbitrary,
        fc.constantFrom("sum", "bm25f"),
        (registry, requests, resolved, blocked, scoring) => {
          const normalized = normalizeSources([{ id: "s", version: "2", entries: registry }], {
            manifestVersion: "0",
          });
          if (!normalized.validation.ok) return;
          const options = {
            fieldWeights: resolved.fieldWeights,
            k1: resolved.k1,
            b: resolved.b,
            scoring: scoring as "sum" | "bm25f",
          };
          const built = buildIndexSnapshot(normalized.entries, options);
          const key = buildKnowledgeIndexCacheKey(normalized.groups, options);
          const bytes = serializeIndexSnapshot(built, key, { includeEntries: true });
          const { snapshot: loaded, header } = deserializeIndexSnapshot(bytes, key);
          expect(header.entryCount).toBe(built.entryCount);
          expect([...loaded.exactIndex.keys()].sort()).toEqual([...built.exactIndex.keys()].sort());
          expect([...loaded.aliasIndex.keys()].sort()).toEqual([...built.aliasIndex.keys()].sort());
          // The engine's path: a lean artifact (no entries) loaded with the caller's own normalized entries.
          const lean = serializeIndexSnapshot(built, key);
          expect(lean.byteLength).toBeLessThan(bytes.byteLength);
          expect(() => deserializeIndexSnapshot(lean, key)).toThrow(/does not contain its entries/);
          const { snapshot: loadedLean } = deserializeIndexSnapshot(lean, key, normalized.entries);
          for (const request of requests) {
            const fromBuilt = retrieve(built, request, resolved, blocked);
            const fromLoaded = retrieve(loaded, request, resolved, blocked);
            expect(fromLoaded).toEqual(fromBuilt);
            expect(retrieve(loadedLean, request, resolved, blocked)).toEqual(fromBuilt);
            expect(assembleKnowledgeContext(fromLoaded)).toEqual(assembleKnowledgeContext(fromBuilt));
          }
          // Deterministic bytes (RELIABILITY 38).
          expect(
            serializeIndexSnapshot(buildIndexSnapshot([...normalized.entries].reverse(), options), key, {
              includeEntries: true,
            }),
          ).toEqual(bytes);
        },
      ),
      { seed: propertySeed("artifact round trip"), numRuns: propertyRuns(150) },
    );
  });

  it("rejects other files, other versions, corruption and other content with typed errors", async () => {
    const bytes = await buildIndexArtifact(sources, undefined, undefined, { includeEntries: true });
    const key = readIndexArtifactHeader(bytes).cacheKey;
    const expectCode = (data: Uint8Array, code: string, expected?: string) => {
      try {
        deserializeIndexSnapshot(data, expected);
        expect.unreachable();
      } catch (caught) {
        expect(caught).toBeInstanceOf(KnowledgeArtifactError);
        expect((caught as KnowledgeArtifactError).code).toBe(code);
      }
    };
    expectCode(
      new TextEncoder().encode('{"not": "an index"} padding padding padding padding'),
      "not-an-index-artifact",
    );
    const otherVersion = bytes.slice();
    new DataView(otherVersion.buffer).setUint32(8, 99, true);
    expectCode(otherVersion, "unsupported-format-version");
    const flipped = bytes.slice();
    flipped[flipped.length - 100]! ^= 0xff;
    expectCode(flipped, "corrupt", key);
    expectCode(bytes.subarray(0, bytes.length - 1), "corrupt");
    expectCode(bytes, "content-mismatch", `${key}x`);
    // Unaligned input (a Buffer slice at an odd offset) still loads.
    const unaligned = new Uint8Array(bytes.length + 3);
    unaligned.set(bytes, 3);
    expect(deserializeIndexSnapshot(unaligned.subarray(3), key).snapshot.entryCount).toBe(3);
  });
});

describe("engine with a prebuilt index", () => {
  it("loads a matching artifact from a file instead of building", async () => {
    const directory = await mkdtemp(join(tmpdir(), "lexground-artifact-"));
    try {
      const path = join(directory, "index.lxg");
      await writeFile(path, await buildIndexArtifact(sources));
      clearKnowledgeIndexCache();
      const engine = new KnowledgeGroundingEngine({ enabled: true, sources, indexArtifact: path });
      await engine.ready();
      expect(engine.getStatus()).toMatchObject({ ready: true, entryCount: 3, snapshotOrigin: "artifact" });
      const outcome = await engine.ground({
        query: "enable multi step flow",
        scope: { enabledIntegrations: ["integration-a"] },
      });
      expect(outcome.metadata.confidence).toBe("high");
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("falls back to building, with a note, when the artifact does not match or is missing", async () => {
    const stale = await buildIndexArtifact([policiesSource]);
    clearKnowledgeIndexCache();
    for (const indexArtifact of [stale, "/nonexistent/index.lxg"]) {
      clearKnowledgeIndexCache();
      const engine = new KnowledgeGroundingEngine({ enabled: true, sources, indexArtifact });
      await engine.ready();
      const status = engine.getStatus();
      expect(status).toMatchObject({ ready: true, entryCount: 3, snapshotOrigin: "built" });
      expect(status.notes?.[0]).toMatch(/^prebuilt index not used \(.+\); built from the sources instead$/);
    }
  });

  it("settings that change the index change the key, so an artifact of other settings is refused", async () => {
    const bytes = await buildIndexArtifact(sources);
    clearKnowledgeIndexCache();
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      indexArtifact: bytes,
      retrieval: { k1: 0.9 },
    });
    await engine.ready();
    expect(engine.getStatus().snapshotOrigin).toBe("built");
    expect(engine.getStatus().notes?.[0]).toContain("different content or index settings");
  });
});
