import { existsSync, readdirSync } from "node:fs";
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
import { asFormat4, asFormat5, asFormat6, expectArtifactError } from "../../test/support/artifactBytes.js";
import { deserializeIndexSnapshot, loadIndexArtifact } from "./artifact.js";
import { contentKeySources, readIndexArtifactHeader } from "./artifactHeader.js";
import { serializeIndexSnapshot } from "./artifactWriter.js";
import { assembleKnowledgeContext } from "./context.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import {
  buildIndexArtifact,
  buildKnowledgeIndexCacheKey,
  clearKnowledgeIndexCache,
  getOrLoadKnowledgeIndexArtifact,
} from "./indexCache.js";
import { buildIndexSnapshot, type KnowledgeLexicalIndex } from "./knowledgeIndex.js";
import { normalizeSources } from "./resolve.js";
import { retrieve } from "./retrieval.js";

afterEach(() => clearKnowledgeIndexCache());

const sources = [settingsSource, policiesSource];

function sortedKeys(map: Map<string, unknown>): string[] {
  return [...map.keys()].sort();
}

describe("index artifact round trip", () => {
  it("a loaded snapshot retrieves exactly like the built one", () => {
    fc.assert(
      fc.property(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
        resolvedArbitrary,
        blockedArbitrary,
        fc.constantFrom("sum", "bm25f"),
        // Tiny blocks, so that a small registry's tables span many (a read that skipped its block would see zeros),
        // and the format-6, -5 and -4 layouts of the same artifact (its phrase lists, then its ids, then its tables
        // eager), still read.
        fc.constantFrom(1, 2, 8, 1024),
        fc.constantFrom(7, 6, 5, 4),
        (registry, requests, resolved, blocked, scoring, tableBlockElements, format) => {
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
          const bytes = serializeIndexSnapshot(built, key, { tableBlockElements });
          const { snapshot: loaded, header } = deserializeIndexSnapshot(
            format === 4
              ? asFormat4(asFormat5(bytes))
              : format === 5
                ? asFormat5(bytes)
                : format === 6
                  ? asFormat6(bytes)
                  : bytes,
            key,
          );
          expect(header.entryCount).toBe(built.entryCount);
          expect(header.sources).toEqual([{ id: "s", version: "2", entryCount: registry.length }]);
          expect(loaded.entryCount).toBe(built.entryCount);
          // The lazy maps read like the built ones.
          expect([...loaded.entriesById.entries()]).toEqual([...built.entriesById.entries()]);
          expect(loaded.entriesById.size).toBe(built.entriesById.size);
          expect(sortedKeys(loaded.exactIndex)).toEqual(sortedKeys(built.exactIndex));
          expect(sortedKeys(loaded.aliasIndex)).toEqual(sortedKeys(built.aliasIndex));
          for (const [phrase, ids] of built.exactIndex) expect(loaded.exactIndex.get(phrase)).toEqual(ids);
          for (const [phrase, ids] of built.aliasIndex) expect(loaded.aliasIndex.get(phrase)).toEqual(ids);
          expect(new Map(loaded.relationIndex)).toEqual(new Map(built.relationIndex));
          expect(loaded.relationIndex.size).toBe(built.relationIndex.size);
          for (const request of requests) {
            const fromBuilt = retrieve(built, request, resolved, blocked);
            const fromLoaded = retrieve(loaded, request, resolved, blocked);
            expect(fromLoaded).toEqual(fromBuilt);
            expect(assembleKnowledgeContext(fromLoaded)).toEqual(assembleKnowledgeContext(fromBuilt));
          }
          // Deterministic bytes (checklist row 38), also when written again from the loaded snapshot (compared as
          // buffers: a generic deep equality of tens of kilobytes is slow).
          const reversed = serializeIndexSnapshot(
            buildIndexSnapshot([...normalized.entries].reverse(), options),
            key,
            { tableBlockElements },
          );
          const again = serializeIndexSnapshot(loaded, key, { tableBlockElements });
          expect(Buffer.from(reversed).equals(bytes)).toBe(true);
          expect(Buffer.from(again).equals(bytes)).toBe(true);
        },
      ),
      { seed: propertySeed("artifact round trip"), numRuns: propertyRuns(150) },
    );
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

  it("reads entries from a file through one reused buffer: each equals the built entry, in any order, one longer than the buffer included; a damaged record fails only its own reads", async () => {
    const entries = Array.from({ length: 12 }, (_, index) => ({
      id: `entry-${String(index).padStart(2, "0")}`,
      title: `Entry ${index}`,
      summary: `Summary ${index} ${"word ".repeat(index)}`,
      domain: "records",
      integrations: [],
      // One record over the reused buffer's 16 KiB (read into a buffer of its own), the others under it.
      body: index === 5 ? "long ".repeat(5000) : `Body ${index} ${"text ".repeat(index * 40)}`,
      relatedEntryIds: index > 0 ? [`entry-${String(index - 1).padStart(2, "0")}`] : [],
    }));
    const fileSources = [{ id: "s", version: "1", entries }];
    const normalized = normalizeSources(fileSources, { manifestVersion: "0" });
    expect(normalized.validation.ok).toBe(true);
    const built = buildIndexSnapshot(normalized.entries);
    const bytes = serializeIndexSnapshot(built, buildKnowledgeIndexCacheKey(normalized.groups));
    const header = readIndexArtifactHeader(bytes);
    const directory = await mkdtemp(join(tmpdir(), "lexground-records-"));
    try {
      const path = join(directory, "index.lxg");
      await writeFile(path, bytes);
      const order = [7, 5, 0, 11, 5, 3, 7, 1, 10, 2, 9, 4, 8, 6];
      const { snapshot } = await loadIndexArtifact(path);
      const read = order.map((index) => snapshot.entriesById.get(entries[index]!.id));
      order.forEach((index, position) => {
        expect(read[position]?.body).toBe(entries[index]!.body);
        expect(read[position]).toEqual(built.entriesById.get(entries[index]!.id));
      });
      // The last byte of entry 3's record flipped: only that entry fails, before and after the others are read.
      const damaged = bytes.slice();
      const recordsStart = bytes.length - header.entryRecords.length;
      const third = [...built.entriesById.keys()].indexOf(entries[3]!.id);
      const offsets = new Float64Array(
        bytes.buffer.slice(
          bytes.length - header.payloadLength + header.sections["entries.offsets"]!.offset,
          bytes.length - header.payloadLength + header.sections["entries.offsets"]!.offset + 8 * 13,
        ),
      );
      damaged[recordsStart + offsets[third + 1]! - 1]! ^= 0x01;
      await writeFile(path, damaged);
      const { snapshot: loaded } = await loadIndexArtifact(path);
      expectArtifactError(() => loaded.entriesById.get(entries[3]!.id), "corrupt");
      for (const index of order)
        if (index !== 3)
          expect(loaded.entriesById.get(entries[index]!.id)).toEqual(
            built.entriesById.get(entries[index]!.id),
          );
      expectArtifactError(() => loaded.entriesById.get(entries[3]!.id), "corrupt");
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

describe("engine from a self-contained artifact alone", () => {
  const queries = [
    { query: "enable multi step flow", scope: { enabledIntegrations: ["integration-a"] } },
    { query: "policy types for an administrator" },
    { query: "progress bar", recentTurns: [{ role: "user" as const, text: "onboarding wizard" }] },
    { query: "nothing matches zzz" },
  ];

  it("a file is opened once per load: its header names the cached snapshot, and a cache hit or a refusal leaves no file open", async () => {
    const directory = await mkdtemp(join(tmpdir(), "lexground-open-once-"));
    try {
      const path = join(directory, "kb.lxg");
      await writeFile(path, await buildIndexArtifact(sources));
      clearKnowledgeIndexCache();
      const openFiles = () => (existsSync("/proc/self/fd") ? readdirSync("/proc/self/fd").length : 0);
      const first = await getOrLoadKnowledgeIndexArtifact(path);
      expect(first.cacheHit).toBe(false);
      expect(first.origin).toBe("artifact");
      const before = openFiles();
      const second = await getOrLoadKnowledgeIndexArtifact(path);
      expect(second.cacheHit).toBe(true);
      expect(second.snapshot).toBe(first.snapshot);
      expect(openFiles()).toBe(before);
      await expect(getOrLoadKnowledgeIndexArtifact(path, { k1: 0.5 })).rejects.toMatchObject({
        code: "options-mismatch",
      });
      expect(openFiles()).toBe(before);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("serves from a file or bytes with no sources: same outcomes as the engine built from the sources", async () => {
    const directory = await mkdtemp(join(tmpdir(), "lexground-artifact-"));
    try {
      const bytes = await buildIndexArtifact(sources);
      const path = join(directory, "kb.lxg");
      await writeFile(path, bytes);
      const fromSources = new KnowledgeGroundingEngine({ enabled: true, sources });
      for (const indexArtifact of [path, bytes]) {
        clearKnowledgeIndexCache();
        const engine = new KnowledgeGroundingEngine({ enabled: true, indexArtifact });
        await engine.ready();
        const status = engine.getStatus();
        expect(status).toMatchObject({
          ready: true,
          entryCount: 3,
          snapshotOrigin: "artifact",
          lastError: null,
        });
        expect(status.content?.sources).toEqual([
          { id: "account-settings", version: "1", entryCount: 2 },
          { id: "access-policies", version: "1", entryCount: 1 },
        ]);
        expect(status.content?.key).toBe(readIndexArtifactHeader(bytes).cacheKey);
        for (const input of queries) {
          const loaded = await engine.ground(input);
          const built = await fromSources.ground(input);
          expect(loaded.ephemeralContext).toEqual(built.ephemeralContext);
          expect({ ...loaded.metadata, durationMs: 0 }).toEqual({ ...built.metadata, durationMs: 0 });
          expect({ ...loaded.retrieval, durationMs: 0 }).toEqual({ ...built.retrieval, durationMs: 0 });
        }
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("property: an engine started from the artifact alone grounds exactly like the engine built from the sources", async () => {
    await fc.assert(
      fc.asyncProperty(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 3 }),
        fc.constantFrom("neurolink", "recommended"),
        async (registry, requests, preset) => {
          const registrySources = [{ id: "s", version: "7", entries: registry }];
          if (!normalizeSources(registrySources, { manifestVersion: "0" }).validation.ok) return;
          clearKnowledgeIndexCache();
          const built = new KnowledgeGroundingEngine({ enabled: true, sources: registrySources, preset });
          await built.ready();
          const snapshot = built.getSnapshot()!;
          const bytes = serializeIndexSnapshot(snapshot, built.getStatus().content!.key);
          clearKnowledgeIndexCache();
          const loaded = new KnowledgeGroundingEngine({ enabled: true, indexArtifact: bytes, preset });
          await loaded.ready();
          expect(loaded.getStatus().snapshotOrigin).toBe("artifact");
          for (const request of requests) {
            const input = {
              query: request.query,
              recentTurns: request.recentTurns,
              scope: { enabledIntegrations: request.enabledIntegrations },
            };
            const fromArtifact = await loaded.ground(input);
            const fromSources = await built.ground(input);
            expect(fromArtifact.ephemeralContext).toEqual(fromSources.ephemeralContext);
            expect({ ...fromArtifact.retrieval, durationMs: 0 }).toEqual({
              ...fromSources.retrieval,
              durationMs: 0,
            });
          }
        },
      ),
      { seed: propertySeed("artifact-only engine"), numRuns: propertyRuns(60) },
    );
  });

  it("an artifact built with other index settings is refused with a typed reason, not served", async () => {
    const bytes = await buildIndexArtifact(sources);
    clearKnowledgeIndexCache();
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      indexArtifact: bytes,
      preset: "recommended",
    });
    await engine.ready();
    const status = engine.getStatus();
    expect(status.ready).toBe(false);
    expect(status.lastError).toContain("other index settings");
    const outcome = await engine.ground({ query: "policy types" });
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toBe("build-failed");
    await expect(
      new KnowledgeGroundingEngine({
        enabled: true,
        indexArtifact: bytes,
        preset: "recommended",
        strict: true,
      }).ready(),
    ).rejects.toMatchObject({ code: "KNOWLEDGE_BUILD_FAILED" });
  });

  it("a damaged, foreign or missing artifact leaves the engine without an index and says why", async () => {
    const bytes = await buildIndexArtifact(sources);
    const truncated = bytes.subarray(0, bytes.length - 10);
    const otherVersion = bytes.slice();
    new DataView(otherVersion.buffer).setUint32(8, 1, true);
    const cases: [string | Uint8Array, RegExp][] = [
      [truncated, /damaged/],
      [otherVersion, /format 1 is not supported/],
      [new TextEncoder().encode("not an artifact at all, just text"), /not a lexground index artifact/],
      ["/nonexistent/kb.lxg", /cannot be read/],
    ];
    for (const [indexArtifact, reason] of cases) {
      clearKnowledgeIndexCache();
      const engine = new KnowledgeGroundingEngine({ enabled: true, indexArtifact, logger: null });
      await engine.ready();
      expect(engine.getStatus().ready).toBe(false);
      expect(engine.getStatus().lastError).toMatch(reason);
      expect((await engine.ground({ query: "policy" })).metadata.failureReason).toBe("build-failed");
    }
  });

  it("a turn decodes only the entries it renders", async () => {
    const bytes = await buildIndexArtifact(sources);
    const { snapshot } = await loadIndexArtifact(bytes);
    const read: string[] = [];
    const original = snapshot.entriesById.get.bind(snapshot.entriesById);
    Object.defineProperty(snapshot.entriesById, "get", {
      value: (id: string) => {
        read.push(id);
        return original(id);
      },
    });
    const selection = retrieve(
      snapshot,
      { query: "policy types", recentTurns: [], enabledIntegrations: [] },
      (await import("./config.js")).resolveRetrieval(undefined),
    );
    expect(selection.primary.map((entry) => entry.id)).toEqual(["access.policy-types"]);
    // Read twice (selection, then its relations), decoded once.
    expect(new Set(read)).toEqual(new Set(["access.policy-types"]));
  });

  it("posting blocks are read and checked when a turn first needs them: a damaged block fails that turn open, the others serve", async () => {
    // Enough body postings for several blocks (a block holds at least 256 postings).
    const entries = Array.from({ length: 600 }, (_, index) => ({
      id: `entry-${String(index).padStart(4, "0")}`,
      title: `Entry ${index}`,
      summary: `Summary of entry ${index}.`,
      domain: "blocks",
      integrations: [],
      kind: "configuration" as const,
      body: Array.from({ length: 24 }, (_, word) => `w${(index * 7 + word * 13) % 1500}`).join(" "),
    }));
    const blockSources = [{ id: "blocks", version: "1", entries }];
    const normalized = normalizeSources(blockSources, { manifestVersion: "0" });
    const built = buildIndexSnapshot(normalized.entries);
    const key = buildKnowledgeIndexCacheKey(normalized.groups);
    const bytes = serializeIndexSnapshot(built, key);
    const header = readIndexArtifactHeader(bytes);
    const payloadStart = bytes.length - header.payloadLength;
    const int32Section = (name: string) => {
      const section = header.sections[name]!;
      return new Int32Array(
        bytes.slice(payloadStart + section.offset, payloadStart + section.offset + section.length).buffer,
      );
    };
    const bounds = int32Section("lexical.blocks.4");
    const offsets = int32Section("lexical.offsets.4");
    expect(bounds.length - 1).toBeGreaterThanOrEqual(3);
    const terms = (built.lexical as KnowledgeLexicalIndex).exportParts().dictionary!.allTerms();
    // A body term of the first block and one of the last.
    const bodyTermIn = (block: number) => {
      for (let term = bounds[block]!; term < bounds[block + 1]!; term++)
        if (offsets[term + 1]! > offsets[term]! && /^w\d+$/.test(terms[term]!)) return terms[term]!;
      throw new Error(`no body term in block ${block}`);
    };
    const damagedTerm = bodyTermIn(0);
    const intactTerm = bodyTermIn(bounds.length - 2);
    // Flip a byte of the first block's document ids.
    const damaged = bytes.slice();
    damaged[payloadStart + header.sections["lexical.docs.4"]!.offset + offsets[bounds[0]!]! * 4 + 1]! ^= 0x5a;

    const fromSources = new KnowledgeGroundingEngine({ enabled: true, sources: blockSources });
    const engine = new KnowledgeGroundingEngine({ enabled: true, indexArtifact: damaged });
    await engine.ready();
    // Loading did not read the postings: the damage is not found yet.
    expect(engine.getStatus()).toMatchObject({ ready: true, snapshotOrigin: "artifact", lastError: null });
    const intact = await engine.ground({ query: intactTerm });
    expect(intact.ephemeralContext).not.toBeNull();
    expect(intact.ephemeralContext).toEqual(
      (await fromSources.ground({ query: intactTerm })).ephemeralContext,
    );
    // The damaged block is found before any of its postings is used, every time it is needed.
    for (let attempt = 0; attempt < 2; attempt++) {
      const failed = await engine.ground({ query: `${intactTerm} ${damagedTerm}` });
      expect(failed.ephemeralContext).toBeNull();
      expect(failed.metadata.failureReason).toMatch(/damaged: block 0 of section lexical\.docs\.4/);
    }
    expect((await engine.ground({ query: intactTerm })).ephemeralContext).toEqual(intact.ephemeralContext);
    // Directly: a typed error, for the retrieval as for exporting the whole index.
    const { snapshot } = deserializeIndexSnapshot(damaged, key);
    const retrieval = (await import("./config.js")).resolveRetrieval(undefined);
    expectArtifactError(
      () => retrieve(snapshot, { query: damagedTerm, recentTurns: [], enabledIntegrations: [] }, retrieval),
      "corrupt",
    );
    expectArtifactError(() => serializeIndexSnapshot(snapshot, key), "corrupt");
    // Undamaged, every block reads back to the same artifact.
    expect(
      Buffer.from(serializeIndexSnapshot(deserializeIndexSnapshot(bytes, key).snapshot, key)).equals(bytes),
    ).toBe(true);
  });

  it("phrase keys are read and checked a block at a time when a lookup first needs them: a damaged block is a typed error", async () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const built = buildIndexSnapshot(normalized.entries);
    const key = buildKnowledgeIndexCacheKey(normalized.groups);
    const bytes = serializeIndexSnapshot(built, key);
    const header = readIndexArtifactHeader(bytes);
    expect(header.sections["phrases.keys"]!.lazy).toBe(true);
    const damaged = bytes.slice();
    damaged[bytes.length - header.payloadLength + header.sections["phrases.keys"]!.offset]! ^= 0x5a;
    // Loads (the keys are not read), and the first lookup that needs a key of the damaged block is refused.
    const { snapshot } = deserializeIndexSnapshot(damaged, key);
    const phrase = [...built.exactIndex.keys()][0]!;
    expectArtifactError(() => snapshot.exactIndex.get(phrase), "corrupt");
    const engine = new KnowledgeGroundingEngine({ enabled: true, indexArtifact: damaged });
    const outcome = await engine.ground({ query: phrase });
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toMatch(/damaged: block 0 of section phrases\.keys/);
    // Intact, every key reads back.
    const intact = deserializeIndexSnapshot(bytes, key).snapshot;
    for (const [phraseKey, ids] of built.exactIndex) expect(intact.exactIndex.get(phraseKey)).toEqual(ids);
  });

  it("the content key's sources are parsed back", () => {
    const key = buildKnowledgeIndexCacheKey(normalizeSources(sources, { manifestVersion: "0" }).groups);
    expect(contentKeySources(key)).toEqual([
      { id: "account-settings", version: "1", entryCount: 2 },
      { id: "access-policies", version: "1", entryCount: 1 },
    ]);
  });
});
