import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { KNOWLEDGE_ENTRY_FIELDS, MAX_ALIASES_PER_ENTRY, MAX_BODY_CHARS } from "./defaults.js";
import { manifestToSources, normalizeAndValidate } from "./resolve.js";

const base = { id: "e", title: "Title", summary: "Summary", domain: "d", integrations: [] as string[] };
const validate = (entries: unknown[], source: Record<string, unknown> = {}) =>
  normalizeAndValidate([{ id: "s", version: "1", ...source, entries }], { manifestVersion: "0" });
const issueAt = (result: ReturnType<typeof validate>, path: string) =>
  result.validation.issues.find((issue) => issue.path === path);

describe("normalizeAndValidate never throws", () => {
  it("on any JavaScript value", () => {
    fc.assert(
      fc.property(
        fc.anything({ withNullPrototype: true, withBoxedValues: true, withMap: true, withSet: true }),
        (value) => {
          const result = normalizeAndValidate(value as never, { manifestVersion: "0" });
          expect(typeof result.validation.ok).toBe("boolean");
          expect(Array.isArray(result.entries)).toBe(true);
        },
      ),
      { seed: propertySeed("normalizeAndValidate(anything)"), numRuns: propertyRuns(500) },
    );
  });

  it("on any value in place of an entry or a field", () => {
    fc.assert(
      fc.property(fc.constantFrom(...KNOWLEDGE_ENTRY_FIELDS), fc.anything(), (field, value) => {
        const result = validate([{ ...base, [field]: value }, value]);
        for (const issue of result.validation.issues) {
          expect(issue.path).toMatch(/^sources\[0\](\.|$)/);
          expect(issue.message.length).toBeGreaterThan(0);
        }
      }),
      { seed: propertySeed("normalizeAndValidate(field = anything)"), numRuns: propertyRuns(500) },
    );
  });

  it("on throwing getters and revoked proxies", () => {
    const hostile = Object.defineProperty({ ...base }, "title", {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    });
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    for (const input of [[{ id: "s", entries: [hostile] }], [proxy], proxy]) {
      const result = normalizeAndValidate(input as never, { manifestVersion: "0" });
      expect(result.validation.ok).toBe(false);
    }
  });
});

describe("bad input gets an issue naming the place", () => {
  it("wrong field types are issues at their path", () => {
    const result = validate([
      { ...base, id: 42 },
      { ...base, id: "null-body", body: null },
      { ...base, id: "string-aliases", aliases: "one, two" },
      { ...base, id: "number-title", title: 7 },
      null,
      { ...base, id: "bad-keyword", keywords: ["ok", { nested: true }] },
    ]);
    expect(result.validation.ok).toBe(false);
    expect(issueAt(result, "sources[0].entries[0].id")?.code).toBe("bad-field-type");
    expect(issueAt(result, "sources[0].entries[1].body")).toMatchObject({
      code: "bad-field-type",
      entryId: "null-body",
    });
    expect(issueAt(result, "sources[0].entries[2].aliases")?.message).toContain(
      "must be an array of strings, got string",
    );
    expect(issueAt(result, "sources[0].entries[3].title")?.message).toContain("must be a string, got number");
    expect(issueAt(result, "sources[0].entries[4]")?.code).toBe("bad-field-type");
    expect(issueAt(result, "sources[0].entries[5].keywords[1]")?.code).toBe("bad-field-type");
  });

  it("NaN or non-string versions and odd sources", () => {
    const result = normalizeAndValidate(
      [{ id: "s", version: Number.NaN, entries: [base] }, "not a source", { id: 5, entries: "nope" }],
      { manifestVersion: "0" },
    );
    expect(issueAt(result, "sources[0].version")?.message).toContain("got NaN");
    expect(issueAt(result, "sources[1]")?.code).toBe("bad-field-type");
    expect(issueAt(result, "sources[2].id")?.code).toBe("bad-field-type");
    expect(issueAt(result, "sources[2].entries")?.code).toBe("bad-field-type");
  });

  it("unknown fields are warnings, not errors (hosts keep their own metadata)", () => {
    const result = validate([{ ...base, tags: ["x"], updatedAt: "2026-01-01" }]);
    expect(result.validation.ok).toBe(true);
    expect(result.validation.issues.map((issue) => [issue.code, issue.path])).toEqual([
      ["unknown-field", "sources[0].entries[0].tags"],
      ["unknown-field", "sources[0].entries[0].updatedAt"],
    ]);
  });

  it("missing or unknown status, kind, domain, integrations", () => {
    const result = validate([
      { ...base, id: "a", status: "archived" },
      { ...base, id: "b", kind: "faq" },
      { ...base, id: "c", domain: "   " },
      { id: "d", title: "T", summary: "S", domain: "x" },
    ]);
    expect(result.validation.ok).toBe(false);
    expect(issueAt(result, "sources[0].entries[0].status")).toMatchObject({
      code: "bad-status",
      entryId: "a",
    });
    expect(issueAt(result, "sources[0].entries[1].kind")).toMatchObject({ code: "bad-kind", entryId: "b" });
    expect(issueAt(result, "sources[0].entries[2].domain")).toMatchObject({
      code: "missing-domain",
      entryId: "c",
    });
    expect(issueAt(result, "sources[0].entries[3].integrations")).toMatchObject({
      code: "missing-integrations",
    });
  });

  it("null kind and status take the defaults (NeuroLink's `??`)", () => {
    const result = validate([{ ...base, kind: null, status: null }]);
    expect(result.validation.ok).toBe(true);
    expect(result.entries[0]).toMatchObject({ kind: "text", status: "active" });
  });
});

describe("duplicate and unsafe ids", () => {
  it("exact and Unicode-normalization duplicates are errors naming the id; case variants are warnings", () => {
    const result = validate([
      { ...base, id: "café" },
      { ...base, id: "cafe\u0301" },
      { ...base, id: "café" },
      { ...base, id: "CAFÉ" },
    ]);
    expect(result.validation.ok).toBe(false);
    expect(issueAt(result, "sources[0].entries[1].id")?.message).toContain("only in Unicode normalization");
    expect(issueAt(result, "sources[0].entries[2].id")).toMatchObject({
      code: "duplicate-entry-id",
      entryId: "café",
    });
    expect(issueAt(result, "sources[0].entries[3].id")).toMatchObject({
      level: "warning",
      code: "ambiguous-entry-id",
    });
    expect(result.entries.map((entry) => entry.id)).toEqual(["café", "CAFÉ"]);
  });

  it("accepts every id and version NeuroLink accepts, warning where the marker encodes characters", () => {
    // NeuroLink refuses only falsy ids (SPEC section 10); these registries used to be refused whole.
    for (const id of [
      "payments settings",
      "Ünïcode id",
      "a[1]",
      "a]b",
      "a\nb",
      "a\u2028b",
      "   ",
      "a\uD800",
    ]) {
      const result = validate([{ ...base, id }]);
      expect(result.validation.ok, JSON.stringify(id)).toBe(true);
      expect(result.entries[0]?.id).toBe(id);
      expect(issueAt(result, "sources[0].entries[0].id")).toMatchObject({
        level: "warning",
        code: "encoded-in-citation",
        entryId: id,
      });
    }
    for (const version of ["", "v1 beta", "1.0@rc", "1]", "v\n1"]) {
      const result = validate([base], { version });
      expect(result.validation.ok, JSON.stringify(version)).toBe(true);
      expect(result.entries[0]?.version).toBe(version);
      const issue = issueAt(result, "sources[0].version");
      if (version === "") expect(issue).toBeUndefined();
      else expect(issue).toMatchObject({ level: "warning", code: "encoded-in-citation", sourceId: "s" });
    }
    for (const id of ["Ünïcode", "settings.multi-step-flow", 'quote"and@at', "日本"]) {
      expect(validate([{ ...base, id }]).validation.issues).toEqual([]);
    }
    expect(issueAt(validate([{ ...base, id: "" }]), "sources[0].entries[0].id")?.code).toBe(
      "missing-entry-id",
    );
  });
});

describe("duplicate aliases (deduplicated on purpose, with one warning)", () => {
  it("warns once per entry and alias, naming the first owner, however often the entry lists it", () => {
    const result = validate([
      { ...base, id: "first", aliases: ["Instant Payout", "instant payout"] },
      { ...base, id: "second", aliases: ["instant-payout", "INSTANT PAYOUT", "other"] },
    ]);
    const warnings = result.validation.issues.filter((issue) => issue.code === "duplicate-alias");
    expect(warnings).toEqual([
      expect.objectContaining({
        level: "warning",
        entryId: "second",
        path: "sources[0].entries[1].aliases[0]",
        message: expect.stringContaining('"first"'),
      }),
    ]);
  });
});

describe("limits on entries and field sizes", () => {
  it("too many aliases or an oversized body are rejected with limit-exceeded", () => {
    const result = validate([
      {
        ...base,
        id: "many",
        aliases: Array.from({ length: MAX_ALIASES_PER_ENTRY + 1 }, (_, index) => `alias ${index}`),
      },
      { ...base, id: "huge", body: "x".repeat(MAX_BODY_CHARS + 1) },
    ]);
    expect(issueAt(result, "sources[0].entries[0].aliases")?.code).toBe("limit-exceeded");
    expect(issueAt(result, "sources[0].entries[1].body")?.code).toBe("limit-exceeded");
  });

  it("100k aliases on one entry are refused quickly rather than indexed", () => {
    const result = validate([
      { ...base, aliases: Array.from({ length: 100_000 }, (_, index) => `a${index}`) },
    ]);
    expect(result.validation.ok).toBe(false);
  });
});

describe("aliases and relations", () => {
  it("reports empty and shared aliases and broken relations with paths", () => {
    const result = validate([
      {
        ...base,
        id: "a",
        aliases: ["Shared Alias", "!!!"],
        relatedEntryIds: ["b", "gone"],
        parentEntryId: "nope",
      },
      { ...base, id: "b", aliases: ["shared-alias", "shared alias"] },
    ]);
    expect(result.validation.ok).toBe(true);
    expect(issueAt(result, "sources[0].entries[0].aliases[1]")?.code).toBe("empty-alias");
    expect(issueAt(result, "sources[0].entries[1].aliases[0]")?.message).toContain('also an alias of "a"');
    expect(issueAt(result, "sources[0].entries[1].aliases[1]")).toBeUndefined();
    expect(issueAt(result, "sources[0].entries[0].relatedEntryIds[1]")?.code).toBe("broken-relation");
    expect(issueAt(result, "sources[0].entries[0].parentEntryId")?.code).toBe("broken-parent");
  });

  it("normalized entries are frozen copies", () => {
    const aliases = ["one"];
    const input = { ...base, aliases };
    const result = validate([input]);
    aliases.push("two");
    input.title = "Changed";
    expect(result.entries[0]!.aliases).toEqual(["one"]);
    expect(result.entries[0]!.title).toBe("Title");
    expect(Object.isFrozen(result.entries[0])).toBe(true);
    expect(Object.isFrozen(result.entries[0]!.aliases)).toBe(true);
  });
});

describe("manifestToSources", () => {
  it("tolerates junk", () => {
    expect(manifestToSources(null as never)).toEqual([]);
    expect(manifestToSources({ catalogs: "x" } as never)).toEqual([]);
    const sources = manifestToSources({
      schemaVersion: "1",
      contentVersion: "v",
      generatedAt: "",
      catalogs: [null as never],
    });
    expect(normalizeAndValidate(sources, { manifestVersion: "0" }).validation.ok).toBe(false);
  });
});
