import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { encodeCitationPart, formatKnowledgeCitation, parseKnowledgeCitation } from "./citation.js";

describe("citation markers: format and parse", () => {
  it("writes ordinary ids and versions verbatim, as NeuroLink does", () => {
    expect(formatKnowledgeCitation({ id: "settings.multi-step-flow", version: "1" })).toBe(
      "[KB:settings.multi-step-flow@1]",
    );
    expect(formatKnowledgeCitation({ id: "Ünïcode", version: "2026-07-14.1" })).toBe(
      "[KB:Ünïcode@2026-07-14.1]",
    );
    expect(formatKnowledgeCitation({ id: "report@v2", version: "3f2a" })).toBe("[KB:report@v2@3f2a]");
  });

  it("percent-encodes exactly the characters that would make a marker ambiguous", () => {
    expect(formatKnowledgeCitation({ id: "payments settings", version: "1.0@rc" })).toBe(
      "[KB:payments%20settings@1.0%40rc]",
    );
    expect(formatKnowledgeCitation({ id: "a[1]", version: "" })).toBe("[KB:a%5B1%5D@]");
    expect(encodeCitationPart("50%\n<&", "id")).toBe("50%25%0A%3C%26");
    expect(encodeCitationPart("［＆﹪≮", "id")).toBe("%EF%BC%BB%EF%BC%86%EF%B9%AA%E2%89%AE");
    expect(encodeCitationPart("a\u200Db\u00A0c\u2028", "id")).toBe("a%E2%80%8Db%C2%A0c%E2%80%A8");
    expect(encodeCitationPart("x\uD800", "version")).toBe("x%uD800");
    expect(encodeCitationPart("@＠", "id")).toBe("@＠");
    expect(encodeCitationPart("@＠", "version")).toBe("%40%EF%BC%A0");
  });

  it("parses a marker back to the original id and version, and refuses anything else", () => {
    expect(parseKnowledgeCitation("[KB:payments%20settings@1.0%40rc]")).toEqual({
      id: "payments settings",
      version: "1.0@rc",
    });
    expect(parseKnowledgeCitation("[KB:k@n@v@2]")).toEqual({ id: "k@n@v", version: "2" });
    expect(parseKnowledgeCitation("[KB:a%uD800@]")).toEqual({ id: "a\uD800", version: "" });
    for (const bad of [
      "KB:a@1",
      "[KB:a@1] ",
      "[KB:a1]",
      "[KB:@1]",
      "[KB:a%2@1]",
      "[KB:a%FF@1]",
      "[KB:a b@1]",
      "[KB:a]b@1]",
    ]) {
      expect(parseKnowledgeCitation(bad), bad).toBeNull();
    }
    expect(parseKnowledgeCitation(42 as unknown as string)).toBeNull();
  });

  it("round-trips every id and version, with no whitespace, bracket, < or & left in the marker", () => {
    const text = fc.string({ unit: "binary", maxLength: 20 });
    const awkward = fc
      .array(
        fc.oneof(text, fc.constantFrom("%", "%41", "%uD800", "@", "[", "]", "\uD800", "＆", " ", "\n")),
        {
          maxLength: 5,
        },
      )
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(
        fc.oneof(text, awkward).filter((id) => id !== ""),
        fc.oneof(text, awkward),
        (id, version) => {
          const marker = formatKnowledgeCitation({ id, version });
          expect(parseKnowledgeCitation(marker)).toEqual({ id, version });
          const inside = marker.slice(4, -1);
          expect(inside).not.toMatch(/[\s[\]<&\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
          expect(inside.isWellFormed()).toBe(true);
          expect(inside.normalize("NFKC")).not.toMatch(/[[\]<&\s]/);
          expect(inside.slice(inside.lastIndexOf("@") + 1)).not.toContain("@");
        },
      ),
      { seed: propertySeed("citation format/parse"), numRuns: propertyRuns(1000) },
    );
  });

  it("keeps plain ids (letters, digits and . - _ : / @ of any script) byte-identical", () => {
    const plain = fc
      .array(fc.constantFrom(..."abcXYZ019.-_:/@", "é", "日", "ß", "İ", "ＡＢＣ", "👩‍💻"), {
        minLength: 1,
        maxLength: 12,
      })
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(
        plain,
        plain.filter((version) => !version.includes("@")),
        (rawId, rawVersion) => {
          // The zero-width joiner inside the emoji is a format character, which is encoded.
          const id = rawId.replaceAll("\u200D", "");
          const version = rawVersion.replaceAll("\u200D", "");
          expect(formatKnowledgeCitation({ id, version })).toBe(`[KB:${id}@${version}]`);
        },
      ),
      { seed: propertySeed("citation parity"), numRuns: propertyRuns(500) },
    );
  });
});
