import { getHeapStatistics } from "node:v8";
import { describe, expect, it } from "vitest";
import { buildInt32Array } from "./buildMemory.js";
import { PhraseTrie } from "./phraseTrie.js";

describe("build memory", () => {
  it("is zeroed, in shared memory, and not counted as the heap's external memory", () => {
    const array = buildInt32Array(1000);
    expect(array.length).toBe(1000);
    expect(array.every((value) => value === 0)).toBe(true);
    expect(array.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(buildInt32Array(0).length).toBe(0);
    // The premise: 64 MB of plain typed array counts as external memory (and can start a full collection of the
    // host's heap), the same in shared memory does not.
    const bytes = 64 * 1024 * 1024;
    const before = getHeapStatistics().external_memory;
    const shared = buildInt32Array(bytes / 4);
    const afterShared = getHeapStatistics().external_memory;
    const plain = new Int32Array(bytes / 4);
    const afterPlain = getHeapStatistics().external_memory;
    expect(afterShared - before).toBeLessThan(bytes / 8);
    expect(afterPlain - afterShared).toBeGreaterThanOrEqual(bytes);
    expect(shared.length + plain.length).toBe(bytes / 2);
  });

  it("the phrase trie's table grows in shared memory", () => {
    const trie = new PhraseTrie();
    for (let index = 0; index < 5000; index++) trie.intern(`key ${index} word${index % 7}`);
    const { table } = trie as unknown as { table: Int32Array };
    expect(table.buffer).toBeInstanceOf(SharedArrayBuffer);
  });
});
