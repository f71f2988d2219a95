import { describe, expect, it } from "vitest";
import { blockedSections, eagerBlockedArray, lazyBlockedArray } from "./artifactBlocks.js";
import type { LazySection } from "./artifactLexical.js";

/** A lazy section over `bytes` that counts its reads. */
function sectionOf(bytes: Uint8Array): LazySection & { reads: number } {
  const section = {
    byteLength: bytes.byteLength,
    reads: 0,
    readInto(byteOffset: number, target: Uint8Array) {
      section.reads++;
      target.set(bytes.subarray(byteOffset, byteOffset + target.byteLength));
    },
  };
  return section;
}

const corrupt = (message: string) => new RangeError(`corrupt: ${message}`);

describe("blocked tables", () => {
  const values = Float64Array.from({ length: 37 }, (_, index) => index * 1.5 - 3);
  const [checksums, lazy] = blockedSections("t", values, 8);
  /** The lazy table over `section` (the blocks of `values`, 8 elements each), checked against their checksums. */
  const tableOf = (section: Parameters<typeof lazyBlockedArray>[1]) =>
    lazyBlockedArray(
      "t",
      section,
      new Uint32Array(checksums!.bytes.slice().buffer),
      8,
      (length) => new Float64Array(length),
      corrupt,
    );

  it("read the blocks a reader asks for, once each, and nothing else", () => {
    expect(lazy!.lazy).toBe(true);
    const section = sectionOf(lazy!.bytes);
    const table = tableOf(section);
    expect(table.array.length).toBe(37);
    table.ensure(9, 10);
    expect(section.reads).toBe(1);
    expect(table.array[9]).toBe(values[9]);
    expect(table.array[0]).toBe(0);
    table.ensure(8, 17);
    expect(section.reads).toBe(2);
    expect(Array.from(table.array.subarray(8, 17))).toEqual(Array.from(values.subarray(8, 17)));
    // Outside the table, or an empty range: nothing read.
    table.ensure(40, 50);
    table.ensure(-5, 0);
    table.ensure(20, 20);
    expect(section.reads).toBe(2);
    table.ensure(-3, 2);
    table.ensure(35, 99);
    expect(section.reads).toBe(4);
    table.ensureAll();
    expect(section.reads).toBe(5);
    expect(Array.from(table.array)).toEqual(Array.from(values));
  });

  it("a damaged block is an error each time it is asked for, its elements stay zero, the other blocks serve", () => {
    const damaged = lazy!.bytes.slice();
    damaged[8 * 8 * 2 + 3]! ^= 0x40;
    const table = tableOf(sectionOf(damaged));
    expect(() => table.ensure(17, 18)).toThrow("block 2 of section t does not match its checksum");
    expect(Array.from(table.array.subarray(16, 24))).toEqual(new Array(8).fill(0));
    expect(() => table.ensure(16, 17)).toThrow("block 2 of section t");
    table.ensure(0, 16);
    expect(table.array[15]).toBe(values[15]);
    expect(() => table.ensureAll()).toThrow("block 2 of section t");
  });

  it("read consecutive blocks not read yet in one read, each checked against its own checksum", () => {
    const section = sectionOf(lazy!.bytes);
    const table = tableOf(section);
    table.ensure(17, 18);
    expect(section.reads).toBe(1);
    // Blocks 0-1, then 3-4: two reads around block 2, read before.
    table.ensure(0, 37);
    expect(section.reads).toBe(3);
    expect(Array.from(table.array)).toEqual(Array.from(values));
    table.ensureAll();
    expect(section.reads).toBe(3);

    // A damaged block inside a run: the blocks before it serve; it and the ones after it in that read stay zero and
    // unread, and are read again (the damaged one failing again) when asked for.
    const damaged = lazy!.bytes.slice();
    damaged[8 * 8 * 2 + 3]! ^= 0x40;
    const damagedSection = sectionOf(damaged);
    const damagedTable = tableOf(damagedSection);
    expect(() => damagedTable.ensure(0, 37)).toThrow("block 2 of section t does not match its checksum");
    expect(damagedSection.reads).toBe(1);
    expect(Array.from(damagedTable.array.subarray(0, 16))).toEqual(Array.from(values.subarray(0, 16)));
    expect(damagedTable.array.subarray(16).every((value) => value === 0)).toBe(true);
    damagedTable.ensure(0, 16);
    expect(damagedSection.reads).toBe(1);
    damagedTable.ensure(24, 37);
    expect(damagedSection.reads).toBe(2);
    expect(Array.from(damagedTable.array.subarray(24))).toEqual(Array.from(values.subarray(24)));
    expect(() => damagedTable.ensure(16, 24)).toThrow("block 2 of section t");
  });

  it("refuse a section whose block checksums do not match its length, or a partial element", () => {
    const checks = new Uint32Array(checksums!.bytes.slice().buffer);
    const make = (length: number) => new Float64Array(length);
    expect(() => lazyBlockedArray("t", sectionOf(lazy!.bytes), checks.subarray(1), 8, make, corrupt)).toThrow(
      "does not match its block checksums",
    );
    expect(() => lazyBlockedArray("t", sectionOf(lazy!.bytes.subarray(3)), checks, 8, make, corrupt)).toThrow(
      "partial element",
    );
  });

  it("an eager table has nothing left to read", () => {
    const table = eagerBlockedArray(values);
    table.ensure(0, 37);
    table.ensureAll();
    expect(table.array).toBe(values);
  });
});
