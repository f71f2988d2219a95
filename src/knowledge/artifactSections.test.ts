import { afterEach, describe, expect, it } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import { deserializeIndexSnapshot } from "./artifact.js";
import { type KnowledgeIndexArtifactHeader, memorySource } from "./artifactHeader.js";
import { sectionReader } from "./artifactSections.js";
import { buildIndexArtifact, clearKnowledgeIndexCache } from "./indexCache.js";

afterEach(() => clearKnowledgeIndexCache());

/** A header naming only `sections` (what `sectionReader` reads of it). */
function headerWith(sections: KnowledgeIndexArtifactHeader["sections"]): KnowledgeIndexArtifactHeader {
  return { sections } as KnowledgeIndexArtifactHeader;
}

describe("zeroed buffers of lazy sections", () => {
  it("share one buffer, each at an 8-byte aligned offset of its own, the same bytes at every call", () => {
    const read = sectionReader(
      headerWith({
        a: { offset: 0, length: 5, checksum: 0, lazy: true },
        eager: { offset: 8, length: 4, checksum: 0 },
        b: { offset: 16, length: 12, checksum: 0, lazy: true },
        c: { offset: 32, length: 8, checksum: 0, lazy: true },
      }),
      0,
      memorySource(new Uint8Array(40)),
      () => new Uint8Array(0),
    );
    const a = read.zeroed("a");
    const b = read.zeroed("b");
    const c = read.zeroed("c");
    expect([a.byteLength, b.byteLength, c.byteLength]).toEqual([5, 12, 8]);
    expect(b.buffer).toBe(a.buffer);
    expect(c.buffer).toBe(a.buffer);
    const ranges = [a, b, c].map((bytes) => [bytes.byteOffset, bytes.byteOffset + bytes.byteLength] as const);
    for (const [start] of ranges) expect(start % 8).toBe(0);
    ranges.sort((left, right) => left[0] - right[0]);
    for (let index = 1; index < ranges.length; index++)
      expect(ranges[index]![0]).toBeGreaterThanOrEqual(ranges[index - 1]![1]);
    expect([...a, ...b, ...c].every((byte) => byte === 0)).toBe(true);
    b.fill(7);
    expect(read.zeroed("b")).toEqual(b);
    expect([...a, ...c].every((byte) => byte === 0)).toBe(true);
    expect(() => read.zeroed("eager")).toThrow("read at load where it should be lazy");
    expect(() => read.zeroed("missing")).toThrow("section missing is missing");
  });

  it("a loaded artifact's postings and blocked tables are views of one buffer (allocated apart, a load touched pages)", async () => {
    const bytes = await buildIndexArtifact([settingsSource, policiesSource]);
    const { snapshot } = deserializeIndexSnapshot(bytes);
    const state = snapshot.lexical as unknown as {
      postings: { active: boolean; docs: Int32Array; contributions: Float64Array; offsets: Int32Array }[];
    };
    const arrays = state.postings
      .filter((field) => field.active)
      .flatMap((field) => [field.docs, field.contributions, field.offsets]);
    expect(arrays.length).toBeGreaterThan(3);
    for (const array of arrays) expect(array.buffer).toBe(arrays[0]!.buffer);
  });
});
