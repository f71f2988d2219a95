import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { checksum32 } from "./checksum.js";

describe("checksum32", () => {
  it("is the same for aligned and unaligned views of the same bytes (pinned values)", () => {
    const bytes = new TextEncoder().encode("lexground index artifact checksum test vector");
    const unaligned = new Uint8Array(bytes.length + 1);
    unaligned.set(bytes, 1);
    expect(checksum32(unaligned.subarray(1))).toBe(checksum32(bytes));
    expect(checksum32(new Uint8Array(0))).toBe(checksum32(new Uint8Array(0)));
    expect(checksum32(bytes)).toMatchInlineSnapshot(`3177977538`);
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
});
