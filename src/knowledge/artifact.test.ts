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
import {
  contentKeySources,
  deserializeIndexSnapshot,
  KnowledgeArtifactError,
  loadIndexArtifact,
  readIndexArtifactHeader,
  serializeIndexSnapshot,
} from "./artifact.js";
import { checksum32 } from "./checksum.js";
import { getCompiledSnapshot } from "./compiledSnapshot.js";
import { resolveRetrieval } from "./config.js";
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

/** The artifact with its header JSON changed by `change` (and a matching header checksum): a crafted file. */
function withHeader(bytes: Uint8Array, change: (header: Record<string, unknown>) => void): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getUint32(12, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(24, 24 + headerLength)));
  const payload = bytes.subarray(Math.ceil((24 + headerLength) / 8) * 8);
  change(header);
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const payloadStart = Math.ceil((24 + headerBytes.length) / 8) * 8;
  const output = new Uint8Array(payloadStart + payload.length);
  output.set(bytes.subarray(0, 12));
  const outputView = new DataView(output.buffer);
  outputView.setUint32(12, headerBytes.length, true);
  outputView.setUint32(16, checksum32(headerBytes), true);
  output.set(headerBytes, 24);
  output.set(payload, payloadStart);
  return output;
}

function expectArtifactError(run: () => unknown, code: string): void {
  try {
    run();
    expect.unreachable(`expected a KnowledgeArtifactError with code ${code}`);
  } catch (caught) {
    expect(caught).toBeInstanceOf(KnowledgeArtifactError);
    expect((caught as KnowledgeArtifactError).code).toBe(code);
  }
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
        // and the format-4 layout of the same artifact (its tables eager), still read.
        fc.constantFrom(1, 2, 8, 1024),
        fc.boolean(),
        (registry, requests, resolved, blocked, scoring, tableBlockElements, format4) => {
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
            format4 ? asFormat4(bytes) : bytes,
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

  it("rejects other files, other versions, corruption and other content with typed errors", async () => {
    const bytes = await buildIndexArtifact(sources);
    const key = readIndexArtifactHeader(bytes).cacheKey;
    expectArtifactError(
      () => deserializeIndexSnapshot(new TextEncoder().encode('{"not": "an index"} padding padding padding')),
      "not-an-index-artifact",
    );
    expectArtifactError(() => deserializeIndexSnapshot(new Uint8Array(3)), "not-an-index-artifact");
    // Formats 1 to 3 (eagerly read postings; another checksum) included: they are rebuilt, not read.
    for (const version of [1, 2, 3, 6, 99]) {
      const otherVersion = bytes.slice();
      new DataView(otherVersion.buffer).setUint32(8, version, true);
      expectArtifactError(() => deserializeIndexSnapshot(otherVersion), "unsupported-format-version");
    }
    expectArtifactError(() => deserializeIndexSnapshot(bytes, `${key}x`), "content-mismatch");
    // Unaligned input (a Buffer slice at an odd offset) still loads.
    const unaligned = new Uint8Array(bytes.length + 3);
    unaligned.set(bytes, 3);
    expect(deserializeIndexSnapshot(unaligned.subarray(3), key).snapshot.entryCount).toBe(3);
  });

  it("a flipped byte anywhere is a typed error: at load, when its posting block is read, or when its entry is read", () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const built = buildIndexSnapshot(normalized.entries);
    const bytes = serializeIndexSnapshot(built, buildKnowledgeIndexCacheKey(normalized.groups));
    const header = readIndexArtifactHeader(bytes);
    const entriesStart = bytes.length - header.entryRecords.length;
    // Every seventh byte (so every section, record and prefix field), to keep the test short.
    const payloadStart = bytes.length - header.payloadLength;
    const lazySections = Object.values(header.sections).filter((section) => section.lazy);
    const inLazySection = (position: number) =>
      lazySections.some(
        (section) =>
          position >= payloadStart + section.offset &&
          position < payloadStart + section.offset + section.length,
      );
    expect(lazySections.length).toBeGreaterThan(0);
    for (let position = 0; position < bytes.length; position += 7) {
      const flipped = bytes.slice();
      flipped[position]! ^= 0x5a;
      if (inLazySection(position)) {
        // Postings, phrase keys and the blocked tables: the first read of the damaged block is a typed error, at
        // load for the blocks a load reads (the ends of the offset tables), otherwise when a reader needs it
        // (here: every block, by writing the loaded snapshot again).
        expectArtifactError(
          () => serializeIndexSnapshot(deserializeIndexSnapshot(flipped).snapshot, header.cacheKey),
          "corrupt",
        );
      } else if (position < entriesStart) {
        // Magic, version, lengths, header, sections: refused before anything is used.
        try {
          deserializeIndexSnapshot(flipped);
          // The reserved prefix bytes and the padding between sections are covered by no checksum.
          expect(
            position === 20 ||
              position === 21 ||
              position === 22 ||
              position === 23 ||
              isPadding(bytes, position),
          ).toBe(true);
        } catch (caught) {
          expect(caught).toBeInstanceOf(KnowledgeArtifactError);
          expect(["corrupt", "not-an-index-artifact", "unsupported-format-version"]).toContain(
            (caught as KnowledgeArtifactError).code,
          );
        }
      } else {
        // An entry record: the artifact loads; reading that entry is a typed error, the others read fine.
        const { snapshot } = deserializeIndexSnapshot(flipped);
        const failures: string[] = [];
        for (const id of built.entriesById.keys()) {
          try {
            expect(snapshot.entriesById.get(id)).toEqual(built.entriesById.get(id));
          } catch (caught) {
            expect(caught).toBeInstanceOf(KnowledgeArtifactError);
            expect((caught as KnowledgeArtifactError).code).toBe("corrupt");
            failures.push(id);
          }
        }
        expect(failures).toHaveLength(1);
      }
    }
  });

  it("blocked tables (term dictionary, phrase trie edges, posting offsets) are read a block at a time: a damaged block fails only the lookups that read it", () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const built = buildIndexSnapshot(normalized.entries);
    const key = buildKnowledgeIndexCacheKey(normalized.groups);
    const bytes = serializeIndexSnapshot(built, key, { tableBlockElements: 2 });
    const header = readIndexArtifactHeader(bytes);
    expect(header.formatVersion).toBe(5);
    expect(header.tableBlockElements).toBe(2);
    const payloadStart = bytes.length - header.payloadLength;
    const retrieval = resolveRetrieval(undefined);
    const terms = (built.lexical as KnowledgeLexicalIndex).exportParts().dictionary!.allTerms();
    const phrases = [...built.exactIndex.keys(), ...built.aliasIndex.keys()];
    const queries = [...terms, ...phrases];
    for (const name of [
      "lexical.dictionary.table",
      "lexical.dictionary.records",
      "phrases.table",
      "lexical.offsets.4",
    ]) {
      const section = header.sections[name]!;
      expect(section.lazy).toBe(true);
      const blockBytes = 2 * (blockedElementBytes(name) ?? 4);
      const blocks = Math.ceil(section.length / blockBytes);
      let failedSomewhere = false;
      // About 60 blocks of each table, spread over it (the dictionary's table has thousands of two-element blocks).
      const step = Math.max(1, Math.floor(blocks / 60));
      for (let block = 1; block < blocks - 1; block += step) {
        const damaged = bytes.slice();
        damaged[payloadStart + section.offset + block * blockBytes]! ^= 0x5a;
        // Not read at load (only the first and the last offsets are).
        const { snapshot } = deserializeIndexSnapshot(damaged, key);
        let failed = 0;
        for (const query of queries) {
          const request = { query, recentTurns: [], enabledIntegrations: ["billing", "payments", "support"] };
          let selection: ReturnType<typeof retrieve>;
          try {
            selection = retrieve(snapshot, request, retrieval);
          } catch (caught) {
            expect(caught).toBeInstanceOf(KnowledgeArtifactError);
            expect((caught as KnowledgeArtifactError).code).toBe("corrupt");
            expect((caught as Error).message).toContain(`of section ${name} does not match its checksum`);
            failed++;
            continue;
          }
          // A lookup that did not need the damaged block answers exactly as the built index.
          expect(selection).toEqual(retrieve(built, request, retrieval));
        }
        // The offsets are read with their block of postings (this small registry has one): every turn needs them.
        if (name !== "lexical.offsets.4") expect(failed).toBeLessThan(queries.length);
        if (failed > 0) failedSomewhere = true;
      }
      expect(failedSomewhere).toBe(true);
    }
  });

  it("crafted sections with valid checksums are refused when they disagree: ids out of their ranks' order, ranks that are no permutation", () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const bytes = serializeIndexSnapshot(
      buildIndexSnapshot(normalized.entries),
      buildKnowledgeIndexCacheKey(normalized.groups),
    );
    expect(deserializeIndexSnapshot(withSection(bytes, "lexical.ranks", () => {})).snapshot.entryCount).toBe(
      3,
    );
    const withRanks = (change: (ranks: Int32Array) => void) =>
      withSection(bytes, "lexical.ranks", (section) => {
        const values = new Int32Array(section.slice().buffer);
        change(values);
        section.set(new Uint8Array(values.buffer));
      });
    const crafted = [
      // Two ranks swapped: the ids are then out of their ranks' order.
      withRanks((values) => {
        [values[0], values[1]] = [values[1]!, values[0]!];
      }),
      // A rank repeated, and one out of range.
      withRanks((values) => {
        values[1] = values[0]!;
      }),
      withRanks((values) => {
        values[2] = 7;
      }),
    ];
    for (const artifact of crafted) expectArtifactError(() => deserializeIndexSnapshot(artifact), "corrupt");
  });

  it("tables checked when first used (posting offsets, phrase keys and lists, the entry table) refuse a crafted disorder then, with a typed error", () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const built = buildIndexSnapshot(normalized.entries);
    const key = buildKnowledgeIndexCacheKey(normalized.groups);
    const bytes = serializeIndexSnapshot(built, key);
    const swapFirstTwo = (name: string, values: "int32" | "float64") =>
      withSection(bytes, name, (section) => {
        const typed =
          values === "int32"
            ? new Int32Array(section.slice().buffer)
            : new Float64Array(section.slice().buffer);
        // The first two offsets after the first that differ, swapped: a list that ends before it starts (the
        // first and the last offset are checked at load).
        let at = 1;
        while (typed[at + 1] === typed[at]) at++;
        expect(at + 1).toBeLessThan(typed.length - 1);
        [typed[at], typed[at + 1]] = [typed[at + 1]!, typed[at]!];
        section.set(new Uint8Array(typed.buffer));
      });
    const phrase = [...built.exactIndex.keys()][0]!;
    const firstId = [...built.entriesById.keys()].sort()[0]!;
    const crafted: [
      string,
      (snapshot: ReturnType<typeof deserializeIndexSnapshot>["snapshot"]) => unknown,
    ][] = [
      ["lexical.offsets.4", (snapshot) => serializeIndexSnapshot(snapshot, key)],
      ["phrases.keyOffsets", (snapshot) => snapshot.exactIndex.get(phrase)],
      ["phrases.exactOffsets", (snapshot) => [...snapshot.exactIndex.values()]],
      ["entries.offsets", (snapshot) => [...snapshot.entriesById.values()]],
    ];
    for (const [name, use] of crafted) {
      const artifact = swapFirstTwo(
        name,
        name === "entries.offsets" || name === "phrases.keyOffsets" ? "float64" : "int32",
      );
      // Loading does not read these tables whole: the disorder is found when the turn that needs it reads them.
      const { snapshot } = deserializeIndexSnapshot(artifact, key);
      expectArtifactError(() => use(snapshot), "corrupt");
    }
    // An exact list naming an entry that does not exist.
    const missingEntry = withSection(bytes, "phrases.exactDocs", (section) => {
      new DataView(section.buffer, section.byteOffset).setInt32(0, 1_000, true);
    });
    const { snapshot } = deserializeIndexSnapshot(missingEntry, key);
    expectArtifactError(() => [...snapshot.exactIndex.values()], "corrupt");
    // The term dictionary's and the phrase trie's tables are not walked at load either: a lookup that reads a slot
    // naming a missing term, or an edge to a missing node or key, is the typed error of the turn that makes it.
    const term = (built.lexical as KnowledgeLexicalIndex).exportParts().dictionary!.allTerms()[0]!;
    const retrieval = resolveRetrieval(undefined);
    const missingTerms = withSection(bytes, "lexical.dictionary.table", (section) => {
      const slots = new Int32Array(section.slice().buffer);
      for (let slot = 1; slot < slots.length; slot += 2) if (slots[slot] !== 0) slots[slot] = 1_000_000;
      section.set(new Uint8Array(slots.buffer));
    });
    const withMissingTerms = deserializeIndexSnapshot(missingTerms, key).snapshot;
    expectArtifactError(
      () => retrieve(withMissingTerms, { query: term, recentTurns: [], enabledIntegrations: [] }, retrieval),
      "corrupt",
    );
    const edgesToNowhere = withSection(bytes, "phrases.table", (section) => {
      const slots = new Int32Array(section.slice().buffer);
      for (let slot = 0; slot < slots.length; slot += 3)
        if (slots[slot + 1] !== 0) slots[slot + 2] = 1_000_000;
      section.set(new Uint8Array(slots.buffer));
    });
    const withEdgesToNowhere = deserializeIndexSnapshot(edgesToNowhere, key).snapshot;
    expectArtifactError(() => withEdgesToNowhere.exactIndex.get(phrase), "corrupt");
    // A wrong edge count misleads no walk (turns serve), and is found before the first key is added (an update).
    const miscounted = deserializeIndexSnapshot(
      withHeader(bytes, (header) => {
        header.phraseEdgeCount = 0;
      }),
      key,
    ).snapshot;
    expect(miscounted.exactIndex.get(phrase)).toEqual(built.exactIndex.get(phrase));
    expectArtifactError(() => getCompiledSnapshot(miscounted)!.phraseTrie.add("brand new key"), "corrupt");
    // Ids that are not one per entry are refused at load.
    const fewerIds = withSection(bytes, "lexical.idList", (section) => {
      section[section.indexOf(0)] = 0x2d;
    });
    expectArtifactError(() => deserializeIndexSnapshot(fewerIds, key), "corrupt");
    // Intact: every entry and list reads back.
    const intact = deserializeIndexSnapshot(bytes, key).snapshot;
    expect(intact.entriesById.get(firstId)).toEqual(built.entriesById.get(firstId));
    for (const [phraseKey, ids] of built.exactIndex) expect(intact.exactIndex.get(phraseKey)).toEqual(ids);
  });

  it("a truncated or extended artifact is corrupt at every length (sampled)", () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const bytes = serializeIndexSnapshot(
      buildIndexSnapshot(normalized.entries),
      buildKnowledgeIndexCacheKey(normalized.groups),
    );
    const lengths = new Set<number>();
    for (let length = 0; length < bytes.length; length += 11) lengths.add(length);
    for (let length = 0; length < 200; length++) lengths.add(length).add(bytes.length - 1 - length);
    for (const length of lengths) {
      try {
        deserializeIndexSnapshot(bytes.subarray(0, length));
        expect.unreachable();
      } catch (caught) {
        expect(caught).toBeInstanceOf(KnowledgeArtifactError);
        expect(["corrupt", "not-an-index-artifact"]).toContain((caught as KnowledgeArtifactError).code);
      }
    }
    const extended = new Uint8Array(bytes.length + 8);
    extended.set(bytes);
    expectArtifactError(() => deserializeIndexSnapshot(extended), "corrupt");
  });

  it("huge or impossible declared lengths and counts are refused without allocating them", () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const bytes = serializeIndexSnapshot(
      buildIndexSnapshot(normalized.entries),
      buildKnowledgeIndexCacheKey(normalized.groups),
    );
    const hugeHeader = bytes.slice();
    new DataView(hugeHeader.buffer).setUint32(12, 0xffffffff, true);
    expectArtifactError(() => deserializeIndexSnapshot(hugeHeader), "corrupt");
    const crafted: ((header: Record<string, unknown>) => void)[] = [
      (header) => {
        header.payloadLength = 2 ** 52;
      },
      (header) => {
        (header.sections as Record<string, { length: number }>)["lexical.docs.4"]!.length = 2 ** 40;
      },
      (header) => {
        (header.sections as Record<string, { offset: number }>)["lexical.ranks"]!.offset = 3;
      },
      (header) => {
        header.entryRecords = { offset: 0, length: 2 ** 45 };
      },
      (header) => {
        header.entryCount = 2 ** 31;
      },
      (header) => {
        header.entryCount = -1;
      },
      (header) => {
        header.termCount = 1e9;
      },
      (header) => {
        header.phraseKeyCount = 1e9;
      },
      (header) => {
        header.postings = [{ active: true, postingCount: 1 }];
      },
      (header) => {
        header.options = { fieldWeights: { title: -1 }, k1: 1, b: 2, analyzer: "none", scoring: "sum" };
      },
      (header) => {
        header.sections = null;
      },
      (header) => {
        delete (header.sections as Record<string, unknown>)["entries.checksums"];
      },
    ];
    for (const change of crafted) {
      const started = performance.now();
      expectArtifactError(() => deserializeIndexSnapshot(withHeader(bytes, change)), "corrupt");
      // Generous: refusing must not mean reading or allocating what the header claims.
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });
});

/** The artifact with the bytes of section `name` changed by `change` (and a matching section checksum): a crafted file. */
/** The blocked tables of format 5 (`artifactBlocks.ts`) and their element sizes. */
function blockedElementBytes(name: string): number | undefined {
  if (name === "phrases.keyOffsets") return 8;
  if (/^(lexical\.dictionary\.(table|records)|lexical\.offsets\.\d|phrases\.table)$/.test(name)) return 4;
  return undefined;
}

/**
 * The artifact with section `name`'s bytes changed by `change`, and every checksum over them made to match (the
 * section's, or for a blocked table its blocks' in `<name>.checksums` and that section's): a crafted file.
 */
function withSection(bytes: Uint8Array, name: string, change: (section: Uint8Array) => void): Uint8Array {
  const header = readIndexArtifactHeader(bytes);
  const section = header.sections[name]!;
  const changed = bytes.slice();
  const payloadStart = bytes.length - header.payloadLength;
  const start = payloadStart + section.offset;
  const content = changed.subarray(start, start + section.length);
  change(content);
  const elementBytes = blockedElementBytes(name);
  const blockChecksums = header.sections[`${name}.checksums`];
  let checksumsContent: Uint8Array | null = null;
  if (section.lazy && elementBytes !== undefined && blockChecksums && header.tableBlockElements) {
    const blockBytes = header.tableBlockElements * elementBytes;
    const checksumsStart = payloadStart + blockChecksums.offset;
    checksumsContent = changed.subarray(checksumsStart, checksumsStart + blockChecksums.length);
    const view = new DataView(
      checksumsContent.buffer,
      checksumsContent.byteOffset,
      checksumsContent.byteLength,
    );
    for (let block = 0; block * 4 < checksumsContent.length; block++)
      view.setUint32(
        block * 4,
        checksum32(content.subarray(block * blockBytes, (block + 1) * blockBytes)),
        true,
      );
  }
  return withHeader(changed, (crafted) => {
    const table = crafted.sections as Record<string, { checksum: number; lazy?: boolean }>;
    if (checksumsContent) table[`${name}.checksums`]!.checksum = checksum32(checksumsContent);
    else table[name]!.checksum = checksum32(content);
  });
}

/**
 * The format-4 layout of a format-5 artifact: the blocked tables become eager sections checked whole (their block
 * checksums stay in the file, named by no section), no table block size, format 4.
 */
function asFormat4(bytes: Uint8Array): Uint8Array {
  const header = readIndexArtifactHeader(bytes);
  const payloadStart = bytes.length - header.payloadLength;
  const crafted = withHeader(bytes, (changed) => {
    const table = changed.sections as Record<
      string,
      { offset: number; length: number; checksum: number; lazy?: boolean }
    >;
    for (const name of Object.keys(table)) {
      if (blockedElementBytes(name) === undefined || !table[name]!.lazy) continue;
      const section = table[name]!;
      delete table[`${name}.checksums`];
      table[name] = {
        offset: section.offset,
        length: section.length,
        checksum: checksum32(
          bytes.subarray(payloadStart + section.offset, payloadStart + section.offset + section.length),
        ),
      };
    }
    delete changed.tableBlockElements;
    changed.formatVersion = 4;
  });
  new DataView(crafted.buffer, crafted.byteOffset).setUint32(8, 4, true);
  return crafted;
}

/** Whether `position` is alignment padding after a section or the header (bytes no checksum covers). */
function isPadding(bytes: Uint8Array, position: number): boolean {
  const header = readIndexArtifactHeader(bytes);
  const headerEnd = 24 + new DataView(bytes.buffer, bytes.byteOffset).getUint32(12, true);
  const payloadStart = bytes.length - header.payloadLength;
  if (position < payloadStart) return position >= headerEnd;
  const offset = position - payloadStart;
  const covering = Object.values(header.sections).some(
    (section) => offset >= section.offset && offset < section.offset + section.length,
  );
  return !covering && offset < header.entryRecords.offset;
}

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
    // Enough body postings for several blocks (a block holds at least 1,024 postings).
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
