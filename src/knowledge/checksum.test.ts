import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import {
  allBelowWebAssembly,
  checksum32,
  crc32Portable,
  crc32WebAssembly,
  KERNEL_MODULE_HEX,
  kernelModuleBytes,
  largestWebAssembly,
} from "./checksum.js";

describe("checksum32", () => {
  it("is the same for aligned and unaligned views of the same bytes (pinned values)", () => {
    const bytes = new TextEncoder().encode("lexground index artifact checksum test vector");
    const unaligned = new Uint8Array(bytes.length + 1);
    unaligned.set(bytes, 1);
    expect(checksum32(unaligned.subarray(1))).toBe(checksum32(bytes));
    expect(checksum32(new Uint8Array(0))).toBe(checksum32(new Uint8Array(0)));
    expect(checksum32(bytes)).toMatchInlineSnapshot(`2197635637`);
  });

  it("is CRC-32 (IEEE): the standard check value, and the portable loop equals zlib's at every length", () => {
    expect(checksum32(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
    expect(crc32Portable(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
    const bytes = Uint8Array.from({ length: 300 }, (_, index) => (index * 131 + 7) & 0xff);
    for (let length = 0; length <= bytes.length; length++) {
      expect(crc32Portable(bytes.subarray(0, length))).toBe(checksum32(bytes.subarray(0, length)));
      expect(crc32Portable(bytes.subarray(length))).toBe(checksum32(bytes.subarray(length)));
    }
  });

  it("any change of one byte, a truncation or an extension changes the checksum (property)", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 300 }),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (bytes, at, delta) => {
          const position = at % bytes.length;
          const changed = bytes.slice();
          changed[position] = (changed[position]! + delta) & 0xff;
          const sum = checksum32(bytes);
          expect(checksum32(changed)).not.toBe(sum);
          expect(checksum32(bytes.subarray(0, bytes.length - 1))).not.toBe(sum);
          const extended = new Uint8Array(bytes.length + 1);
          extended.set(bytes);
          expect(checksum32(extended)).not.toBe(sum);
        },
      ),
      { seed: propertySeed("checksum32"), numRuns: propertyRuns(500) },
    );
  });

  it("compiles the module its named opcodes assemble (the constant a process uses is those bytes)", () => {
    expect(KERNEL_MODULE_HEX).toBe(Buffer.from(kernelModuleBytes()).toString("hex"));
  });

  it("the WebAssembly kernel equals the portable loop at every length up to 40 and from every start", () => {
    const bytes = Uint8Array.from({ length: 48 }, (_, index) => (index * 2654435761) >>> 24);
    for (let start = 0; start < 8; start++)
      for (let length = 0; start + length <= 40; length++) {
        const view = bytes.subarray(start, start + length);
        expect(crc32WebAssembly(view)).toBe(crc32Portable(view));
      }
  });

  it("the WebAssembly kernel equals the portable loop at every length around its chunks and tails", () => {
    const bytes = Uint8Array.from({ length: 3 * 65536 + 11 }, (_, index) => (index * 2654435761) >>> 24);
    const lengths = [
      0,
      1,
      3,
      4,
      5,
      7,
      8,
      9,
      15,
      63,
      64,
      65,
      300,
      4095,
      4096,
      4097,
      65535,
      65536,
      65537,
      131072,
      bytes.length,
    ];
    for (const length of lengths) {
      for (const start of [0, 1, 3]) {
        const view = bytes.subarray(start, start + length);
        expect(crc32WebAssembly(view)).toBe(crc32Portable(view));
        expect(checksum32(view)).toBe(crc32Portable(view));
      }
    }
    expect(crc32WebAssembly(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
  });

  it("the WebAssembly kernel equals the portable loop on any bytes (property)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 2000 }), (bytes) => {
        expect(crc32WebAssembly(bytes)).toBe(crc32Portable(bytes));
      }),
      { seed: propertySeed("crc32WebAssembly"), numRuns: propertyRuns(300) },
    );
  });
});

/** The JavaScript loop `allBelow` runs for short ranges, as the reference. */
function allBelowLoop(values: Int32Array, from: number, to: number, count: number): boolean {
  for (let index = from; index < to; index++) if (values[index]! >>> 0 >= count) return false;
  return true;
}

describe("allBelowWebAssembly", () => {
  it("equals the loop on any values, ranges and counts, negative values included (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -5, max: 1200 }), { maxLength: 600 }),
        fc.nat(700),
        fc.nat(700),
        fc.integer({ min: 0, max: 1300 }),
        (list, first, second, count) => {
          const values = Int32Array.from(list);
          const from = Math.min(first, second, values.length);
          const to = Math.min(Math.max(first, second), values.length);
          expect(allBelowWebAssembly(values, from, to, count)).toBe(allBelowLoop(values, from, to, count));
        },
      ),
      { seed: propertySeed("allBelowWebAssembly"), numRuns: propertyRuns(300) },
    );
  });

  it("finds one value out of range anywhere in a range of several chunks, and reads nothing outside the range", () => {
    // 16,384 values per chunk of the kernel's memory.
    const values = new Int32Array(3 * 16_384 + 5);
    for (let index = 0; index < values.length; index++) values[index] = index % 1000;
    const from = 3;
    const to = values.length - 2;
    expect(allBelowWebAssembly(values, from, to, 1000)).toBe(true);
    for (const position of [from, 16_383, 16_384, 16_385, 32_768, to - 1]) {
      for (const bad of [1000, -1, 2_000_000_000]) {
        const changed = values.slice();
        changed[position] = bad;
        expect(allBelowWebAssembly(changed, from, to, 1000)).toBe(false);
      }
    }
    const outside = values.slice();
    outside[from - 1] = -1;
    outside[to] = 5000;
    expect(allBelowWebAssembly(outside, from, to, 1000)).toBe(true);
    // A view at an offset into its buffer.
    expect(allBelowWebAssembly(values.subarray(7), 0, 100, 1000)).toBe(true);
    expect(allBelowWebAssembly(values.subarray(7), 0, 100, 99)).toBe(false);
  });
});

/** `listUpperBound`'s loop, as the reference. */
function largestLoop(values: Float64Array, from: number, to: number): number {
  let bound = 0;
  for (let position = from; position < to; position++) {
    const value = values[position]!;
    if (value > bound) bound = value;
    else if (!(value >= 0)) return Number.POSITIVE_INFINITY;
  }
  return bound;
}

describe("largestWebAssembly", () => {
  it("equals the loop on any doubles and ranges: negative zero, subnormals, infinities and NaN included (property)", () => {
    const special = fc.constantFrom(
      0,
      -0,
      Number.MIN_VALUE,
      1e-310,
      Number.MAX_VALUE,
      Infinity,
      -Infinity,
      NaN,
      -1e-9,
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.double({ min: 0, max: 1e6, noNaN: true }), special), { maxLength: 400 }),
        fc.nat(450),
        fc.nat(450),
        (list, first, second) => {
          const values = Float64Array.from(list);
          const from = Math.min(first, second, values.length);
          const to = Math.min(Math.max(first, second), values.length);
          expect(Object.is(largestWebAssembly(values, from, to), largestLoop(values, from, to))).toBe(true);
        },
      ),
      { seed: propertySeed("largestWebAssembly"), numRuns: propertyRuns(300) },
    );
  });

  it("finds the largest value or a negative one anywhere in a range of several chunks, reading nothing outside it", () => {
    // 8,192 doubles per chunk of the kernel's memory.
    const values = Float64Array.from({ length: 3 * 8192 + 5 }, (_, index) => (index % 977) / 7);
    const from = 3;
    const to = values.length - 2;
    const largest = largestLoop(values, from, to);
    expect(largestWebAssembly(values, from, to)).toBe(largest);
    for (const position of [from, 8191, 8192, 8193, 16_384, to - 1]) {
      const higher = values.slice();
      higher[position] = 1000.5;
      expect(largestWebAssembly(higher, from, to)).toBe(1000.5);
      const negative = values.slice();
      negative[position] = -0.25;
      expect(largestWebAssembly(negative, from, to)).toBe(Number.POSITIVE_INFINITY);
    }
    const outside = values.slice();
    outside[from - 1] = 5000;
    outside[to] = -1;
    expect(largestWebAssembly(outside, from, to)).toBe(largest);
    expect(largestWebAssembly(values.subarray(11), 0, 300)).toBe(largestLoop(values, 11, 311));
  });
});
