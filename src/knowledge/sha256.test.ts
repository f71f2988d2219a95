import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { createSha256, PureSha256, usesNativeSha256 } from "./sha256.js";

const nodeHex = (parts: readonly (string | Uint8Array)[]): string => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("hex");
};
const pureHex = (parts: readonly (string | Uint8Array)[]): string => {
  const hash = new PureSha256();
  for (const part of parts) hash.update(part);
  return hash.digestHex();
};

/** Strings of arbitrary UTF-16 code units: lone high and low surrogates, pairs, ASCII, and control characters. */
const codeUnitString = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0, max: 0x7f }),
      fc.integer({ min: 0xd800, max: 0xdfff }),
      fc.integer({ min: 0, max: 0xffff }),
    ),
    { maxLength: 300 },
  )
  .map((units) => String.fromCharCode(...units));
const part = fc.oneof(
  codeUnitString,
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.uint8Array({ maxLength: 300 }),
);

describe("SHA-256", () => {
  it("matches the FIPS 180-4 test vectors", () => {
    expect(pureHex([""])).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(pureHex(["abc"])).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(pureHex(["abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"])).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
    expect(pureHex(["a".repeat(1_000_000)])).toBe(
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
    );
  });

  it("equals node:crypto on every length around the block and padding boundaries", () => {
    const bytes = Uint8Array.from({ length: 300 }, (_, index) => (index * 131 + 7) & 255);
    for (let length = 0; length <= bytes.length; length++) {
      expect(pureHex([bytes.subarray(0, length)])).toBe(nodeHex([bytes.subarray(0, length)]));
    }
    // A string longer than a third of the encoding scratch space takes the other path.
    const long = "é\uD800😀x".repeat(12_000);
    expect(pureHex([long])).toBe(nodeHex([long]));
  });

  it("equals node:crypto on random strings (lone surrogates included) and bytes, split into random updates", () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 12 }), (parts) => {
        expect(pureHex(parts)).toBe(nodeHex(parts));
        expect(createSha256().update(parts.join("")).digestHex()).toBe(
          createSha256({ pure: true }).update(parts.join("")).digestHex(),
        );
      }),
      { seed: propertySeed("sha256 vs node:crypto"), numRuns: propertyRuns(400) },
    );
  });

  it("digest() gives the same 32 bytes as digestHex(), natively and in JavaScript", () => {
    for (const pure of [true, false]) {
      const bytes = createSha256({ pure }).update("lexground").digest();
      expect(bytes).toBeInstanceOf(Uint8Array);
      expect(Buffer.from(bytes).toString("hex")).toBe(nodeHex(["lexground"]));
    }
  });

  it("uses Node's native SHA-256 in Node (found without a static node: import)", () => {
    expect(usesNativeSha256()).toBe(true);
  });

  it("refuses to be updated or read after its digest", () => {
    const hash = new PureSha256().update("x");
    hash.digest();
    expect(() => hash.update("y")).toThrow(/after digest/);
    expect(() => hash.digest()).toThrow(/twice/);
  });
});
