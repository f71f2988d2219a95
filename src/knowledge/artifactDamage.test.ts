import { afterEach, describe, expect, it } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import {
  blockedElementBytes,
  expectArtifactError,
  isPadding,
  withHeader,
  withSection,
} from "../../test/support/artifactBytes.js";
import { deserializeIndexSnapshot } from "./artifact.js";
import { KnowledgeArtifactError, readIndexArtifactHeader } from "./artifactHeader.js";
import { serializeIndexSnapshot } from "./artifactWriter.js";
import { getCompiledSnapshot } from "./compiledSnapshot.js";
import { resolveRetrieval } from "./config.js";
import { buildIndexArtifact, buildKnowledgeIndexCacheKey, clearKnowledgeIndexCache } from "./indexCache.js";
import { buildIndexSnapshot, type KnowledgeLexicalIndex } from "./knowledgeIndex.js";
import { normalizeSources } from "./resolve.js";
import { retrieve } from "./retrieval.js";

afterEach(() => clearKnowledgeIndexCache());

const sources = [settingsSource, policiesSource];

describe("damaged and crafted index artifacts", () => {
  it("rejects other files, other versions, corruption and other content with typed errors", async () => {
    const bytes = await buildIndexArtifact(sources);
    const key = readIndexArtifactHeader(bytes).cacheKey;
    expectArtifactError(
      () => deserializeIndexSnapshot(new TextEncoder().encode('{"not": "an index"} padding padding padding')),
      "not-an-index-artifact",
    );
    expectArtifactError(() => deserializeIndexSnapshot(new Uint8Array(3)), "not-an-index-artifact");
    // Formats 1 to 3 (eagerly read postings; another checksum) included: they are rebuilt, not read.
    for (const version of [1, 2, 3, 8, 99]) {
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

  it("input that is not bytes (a path, an ArrayBuffer, null) is a typed error that says what to pass", () => {
    const notBytes = (value: unknown) => value as Uint8Array;
    for (const value of ["kb.lxg", new ArrayBuffer(64), null, 42, { length: 3 }]) {
      expectArtifactError(() => readIndexArtifactHeader(notBytes(value)), "unreadable");
      expectArtifactError(() => deserializeIndexSnapshot(notBytes(value)), "unreadable");
    }
    expect(() => readIndexArtifactHeader(notBytes("kb.lxg"))).toThrow(/readIndexArtifactHeaderFrom\(path\)/);
    expect(() => readIndexArtifactHeader(notBytes(new ArrayBuffer(8)))).toThrow(/new Uint8Array\(buffer\)/);
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

  it("blocked tables (term dictionary, phrase trie edges, exact and alias lists, posting offsets) are read a block at a time: a damaged block fails only the lookups that read it", () => {
    const normalized = normalizeSources(sources, { manifestVersion: "0" });
    const built = buildIndexSnapshot(normalized.entries);
    const key = buildKnowledgeIndexCacheKey(normalized.groups);
    const bytes = serializeIndexSnapshot(built, key, { tableBlockElements: 2 });
    const header = readIndexArtifactHeader(bytes);
    expect(header.formatVersion).toBe(7);
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
      "phrases.exactOffsets",
      "phrases.exactDocs",
      // (The alias lists' entries are one block here, which the loop below, sparing the ends, does not damage.)
      "phrases.aliasOffsets",
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
      expect(failedSomewhere, name).toBe(true);
    }
  });

  it("crafted sections with valid checksums are refused when they disagree: ids out of their ranks' order (when first looked up), ranks that are no permutation", () => {
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
    // Two ranks swapped: the ids are then out of their ranks' order, found by the first lookup by id (the order
    // is checked a block of ranks at a time, when a lookup first searches the block).
    const swapped = deserializeIndexSnapshot(
      withRanks((values) => {
        [values[0], values[1]] = [values[1]!, values[0]!];
      }),
    ).snapshot;
    expectArtifactError(() => swapped.entriesById.get(normalized.entries[0]!.id), "corrupt");
    const crafted = [
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
    // Ids that are not one per entry: the ids are decoded as they are read, so the first lookup refuses them.
    const fewerIds = withSection(bytes, "lexical.idList", (section) => {
      section[section.indexOf(0)] = 0x2d;
    });
    const withFewerIds = deserializeIndexSnapshot(fewerIds, key).snapshot;
    expectArtifactError(() => withFewerIds.entriesById.get(firstId), "corrupt");
    expectArtifactError(() => [...withFewerIds.entriesById.keys()], "corrupt");
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
