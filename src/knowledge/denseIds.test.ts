import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { expectArtifactError, withSection } from "../../test/support/artifactBytes.js";
import { fewestHeapBytesAllocated } from "../../test/support/heapAllocation.js";
import type { KnowledgeEntryInput } from "../types/knowledge.js";
import { deserializeIndexSnapshot } from "./artifact.js";
import { readIndexArtifactHeader } from "./artifactHeader.js";
import { checksum32 } from "./checksum.js";
import { resolveRetrieval } from "./config.js";
import { entryIdArray, ID_BLOCK_IDS, idBlockRange, LazyEntryIds } from "./denseIds.js";
import { buildIndexArtifact, clearKnowledgeIndexCache } from "./indexCache.js";
import { RankedIdMap } from "./rankedIdMap.js";
import { retrieve } from "./retrieval.js";

afterEach(() => clearKnowledgeIndexCache());

const encoder = new TextEncoder();

function lazyOf(ids: readonly string[]): LazyEntryIds {
  return new LazyEntryIds(
    encoder.encode(ids.join("\u0000")),
    ids.length,
    (message) => new RangeError(message),
  );
}

/** The starts `LazyEntryIds` takes for `list` (each id's first byte, then the list's length plus one). */
function startsOf(list: Uint8Array, count: number): Int32Array {
  const starts = new Int32Array(count + 1);
  let next = 1;
  for (let position = 0; position < list.length; position++)
    if (list[position] === 0) starts[next++] = position + 1;
  starts[count] = list.length + 1;
  return starts;
}

/**
 * A list read a block at a time (format 6) from `file` (the list's bytes as written), its block checksums computed
 * from `written` (what the writer saw) over `starts`; every block read is recorded in `reads`.
 */
function blockedList(
  file: Uint8Array,
  count: number,
  starts: Int32Array,
  written: Uint8Array = file,
): { lazy: LazyEntryIds; reads: number[]; buffer: Uint8Array } {
  const checksums = new Uint32Array(Math.ceil(count / ID_BLOCK_IDS));
  for (let block = 0; block < checksums.length; block++) {
    const range = idBlockRange(starts, written.length, block)!;
    checksums[block] = checksum32(written.subarray(range.from, range.to));
  }
  const reads: number[] = [];
  const buffer = new Uint8Array(file.length);
  const lazy = new LazyEntryIds(buffer, count, (message) => new RangeError(message), starts, {
    checksums,
    fill(from, to, target) {
      reads.push(from);
      target.set(file.subarray(from, to));
    },
    check: checksum32,
  });
  return { lazy, reads, buffer };
}

describe("entry ids decoded as they are read", () => {
  it("a list read a block of 64 ids at a time (format 6) reads back every id, reading a block at most twice before it is kept (property)", () => {
    const id = fc
      .string({ unit: "grapheme", minLength: 1, maxLength: 8 })
      .filter((text) => !text.includes("\u0000"));
    fc.assert(
      fc.property(
        fc.array(id, { minLength: 1, maxLength: 300 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        (ids, reads) => {
          const list = encoder.encode(ids.join("\u0000"));
          const starts = startsOf(list, ids.length);
          const { lazy, reads: blocksRead } = blockedList(list, ids.length, starts);
          const touched = new Set<number>();
          let previous = -1;
          for (const read of reads) {
            const doc = read % ids.length;
            const block = Math.floor(doc / ID_BLOCK_IDS);
            touched.add(block);
            // Ids equal as strings may repeat here; the list refuses a repeated id (tested apart).
            if (ids.indexOf(ids[doc]!) !== doc || ids.lastIndexOf(ids[doc]!) !== doc) continue;
            const before = blocksRead.length;
            expect(lazy.at(doc)).toBe(ids[doc]);
            // An id of the block read last is decoded from the bytes read for it.
            if (block === previous) expect(blocksRead).toHaveLength(before);
            if (blocksRead.length > before) previous = block;
          }
          expect(blocksRead.length).toBeLessThanOrEqual(2 * touched.size);
          // A block is kept once it is read a second time: never read a third.
          const timesRead = new Map<number, number>();
          for (const from of blocksRead) timesRead.set(from, (timesRead.get(from) ?? 0) + 1);
          expect([...timesRead.values()].every((times) => times <= 2)).toBe(true);
          for (const from of timesRead.keys())
            expect(
              [...touched].some((block) => idBlockRange(starts, list.length, block)!.from === from),
            ).toBe(true);
          if (new Set(ids).size === ids.length) {
            const kept = [...timesRead.values()].filter((times) => times === 2).length;
            const readBefore = blocksRead.length;
            expect(entryIdArray(lazy)).toEqual(ids);
            // Every block not kept apart is read (again) into the list.
            expect(blocksRead.length - readBefore).toBe(Math.ceil(ids.length / ID_BLOCK_IDS) - kept);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it("a block read for one id goes to one reused buffer, and is kept apart only when read again; the list's zeroed buffer stays untouched until every id is decoded", () => {
    const ids = Array.from({ length: 1000 }, (_, index) => `entry-${String(index * 7919).padStart(8, "0")}`);
    const list = encoder.encode(ids.join("\u0000"));
    const { lazy, reads, buffer } = blockedList(list, ids.length, startsOf(list, ids.length));
    for (const doc of [5, 700, 64, 999, 128, 300]) expect(lazy.at(doc)).toBe(ids[doc]);
    expect(reads).toHaveLength(6);
    // The block read last (ids 256-319) is still in the buffer: no read.
    expect(lazy.at(301)).toBe(ids[301]);
    expect(reads).toHaveLength(6);
    // Block 10 (ids 640-703) was read before and is not in the buffer any more: read again, and kept.
    expect(lazy.at(701)).toBe(ids[701]);
    expect(reads).toHaveLength(7);
    // Kept: another of its ids needs no read, after a read of block 0 (read before too: kept as well).
    expect(lazy.at(5 + 1)).toBe(ids[6]);
    expect(lazy.at(702)).toBe(ids[702]);
    expect(reads).toHaveLength(8);
    expect(buffer.every((byte) => byte === 0)).toBe(true);
    // Every id: the blocks kept are copied, the others read into the list.
    expect(entryIdArray(lazy)).toEqual(ids);
    expect(reads).toHaveLength(8 + Math.ceil(ids.length / ID_BLOCK_IDS) - 2);
    expect(buffer).toEqual(list);
    expect(lazy.at(700)).toBe(ids[700]);
  });

  it("a damaged block of a list read a block at a time fails only the reads of its ids, and zeros its bytes again", () => {
    const ids = Array.from({ length: 300 }, (_, index) => `id-${String(index).padStart(4, "0")}`);
    const list = encoder.encode(ids.join("\u0000"));
    const starts = startsOf(list, ids.length);
    const intact = blockedList(list, ids.length, starts);
    expect(intact.lazy.at(70)).toBe("id-0070");
    expect(intact.reads).toEqual([starts[64]! - 1]);
    expect(intact.lazy.at(127)).toBe("id-0127");
    expect(intact.reads).toHaveLength(1);
    const damagedFile = list.slice();
    damagedFile[starts[150]!]! ^= 1;
    const { lazy: damaged } = blockedList(damagedFile, ids.length, starts, list);
    expect(damaged.at(10)).toBe("id-0010");
    expect(() => damaged.at(150)).toThrow("block 2 of section lexical.idList does not match its checksum");
    expect(() => damaged.at(130)).toThrow("does not match its checksum");
    expect(damaged.at(200)).toBe("id-0200");
    expect(damaged.at(127)).toBe("id-0127");
    expect(() => damaged.toArray()).toThrow("does not match its checksum");
  });

  it("refuses starts that would decode an id from bytes its block did not read (a crafted artifact)", () => {
    const ids = Array.from({ length: 300 }, (_, index) => `id-${String(index).padStart(4, "0")}`);
    const list = encoder.encode(ids.join("\u0000"));
    const starts = startsOf(list, ids.length);
    // Id 70 made empty, placed inside block 3 (not read for it): zeros there read as an empty id between separators.
    const crafted = starts.slice();
    crafted[70] = starts[200]! + 2;
    crafted[71] = crafted[70]! + 1;
    const { lazy } = blockedList(list, ids.length, crafted);
    expect(() => lazy.at(70)).toThrow("does not hold one id per entry");
    expect(lazy.at(10)).toBe("id-0010");
  });

  it("reads back every id of a NUL-joined list, in any order and as an array (property)", () => {
    const id = fc
      .string({ unit: "grapheme", minLength: 1, maxLength: 12 })
      .filter((text) => !text.includes("\u0000"));
    fc.assert(
      fc.property(
        // Distinct ids, as an index holds them (a repeated id is refused as corrupt when read).
        fc.uniqueArray(id, { minLength: 1, maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 80 }),
        (ids, reads) => {
          const lazy = lazyOf(ids);
          expect(lazy.length).toBe(ids.length);
          for (const read of reads) expect(lazy.at(read % ids.length)).toBe(ids[read % ids.length]);
          expect(lazy.at(-1)).toBeUndefined();
          expect(lazy.at(ids.length)).toBeUndefined();
          expect(entryIdArray(lazy)).toEqual(ids);
          for (let doc = 0; doc < ids.length; doc++) expect(lazy.at(doc)).toBe(ids[doc]);
        },
      ),
    );
  });

  it("refuses a list with another number of ids, or an id that is not UTF-8, when the id concerned is read", () => {
    const corrupt = (message: string) => new RangeError(`corrupt: ${message}`);
    const ids = ["alpha", "beta", "gamma"];
    const bytes = encoder.encode(ids.join("\u0000"));
    expect(() => new LazyEntryIds(bytes, 4, corrupt).at(0)).toThrow("does not hold one id per entry");
    expect(() => new LazyEntryIds(bytes, 2, corrupt).at(0)).toThrow("does not hold one id per entry");
    expect(() => new LazyEntryIds(bytes, 2, corrupt).toArray()).toThrow("does not hold one id per entry");
    const damaged = bytes.slice();
    damaged[damaged.length - 1] = 0xff;
    const lazy = new LazyEntryIds(damaged, 3, corrupt);
    expect(lazy.at(0)).toBe("alpha");
    expect(lazy.at(1)).toBe("beta");
    expect(() => lazy.at(2)).toThrow("is not valid UTF-8");
    expect(() => lazy.toArray()).toThrow("is not valid UTF-8");
  });

  it("keeps the ids it decoded, not an array of every id: reading a few of 100,000 allocates a few kilobytes", () => {
    const ids = Array.from({ length: 100_000 }, (_, index) => `entry-${String(index).padStart(6, "0")}`);
    const bytes = encoder.encode(ids.join("\u0000"));
    const starts = new Int32Array(ids.length + 1);
    for (let doc = 1; doc <= ids.length; doc++) starts[doc] = starts[doc - 1]! + ids[doc - 1]!.length + 1;
    const { result, bytes: allocated } = fewestHeapBytesAllocated(
      3,
      () => new LazyEntryIds(bytes, ids.length, (message) => new RangeError(message), starts),
      (lazy) => [lazy.at(7), lazy.at(54_321), lazy.at(7), lazy.at(99_999)],
    );
    expect(result).toEqual(["entry-000007", "entry-054321", "entry-000007", "entry-099999"]);
    // An array of every dense id would be 800 KB.
    expect(allocated).toBeLessThan(50_000);
  });

  it("the id map finds an id the list already decoded without reading another, and refuses an id decoded twice", () => {
    const sorted = Array.from({ length: 5_000 }, (_, index) => `entry-${String(index).padStart(5, "0")}`);
    const lazy = lazyOf(sorted);
    const map = RankedIdMap.from(
      lazy,
      Int32Array.from(sorted, (_, doc) => doc),
    );
    expect(lazy.at(3_210)).toBe("entry-03210");
    let reads = 0;
    const at = lazy.at.bind(lazy);
    lazy.at = (doc: number) => {
      reads++;
      return at(doc);
    };
    expect(map.get("entry-03210")).toBe(3_210);
    expect(reads).toBe(0);
    // Not decoded yet: found by the search (which reads ids).
    expect(map.get("entry-00007")).toBe(7);
    expect(reads).toBeGreaterThan(0);
    const twice = lazyOf(["alpha", "alpha", "beta"]);
    expect(twice.at(0)).toBe("alpha");
    expect(() => twice.at(1)).toThrow("holds an id twice");
  });

  it("an artifact loads without decoding its ids: an id that is not UTF-8 fails only the reads that decode it", async () => {
    // 200 entries: the id lookups check their order a block of 64 ranks at a time, so the last block is apart.
    const entries: KnowledgeEntryInput[] = Array.from({ length: 200 }, (_, index) => ({
      id: `entry-${String(index).padStart(3, "0")}`,
      title: index === 0 ? "Quantum teleporter calibration" : `Ordinary topic ${index}`,
      summary: `Summary of entry ${index}.`,
      domain: "general",
      integrations: [],
      kind: "concept",
    }));
    const bytes = await buildIndexArtifact([{ id: "many", version: "1", entries }]);
    const key = readIndexArtifactHeader(bytes).cacheKey;
    // The last id's last byte becomes 0xff (not UTF-8); its checksum is made to match: only decoding finds it.
    const damaged = withSection(bytes, "lexical.idList", (section) => {
      section[section.length - 1] = 0xff;
    });
    const { snapshot } = deserializeIndexSnapshot(damaged, key);
    const result = retrieve(
      snapshot,
      { query: "quantum teleporter", recentTurns: [], enabledIntegrations: [] },
      resolveRetrieval(undefined),
    );
    expect(result.primary.map((entry) => entry.id)).toEqual(["entry-000"]);
    expect(snapshot.entriesById.get("entry-001")?.title).toBe("Ordinary topic 1");
    expectArtifactError(() => snapshot.entriesById.get("entry-199"), "corrupt");
    expectArtifactError(() => [...snapshot.entriesById.keys()], "corrupt");
  });
});
