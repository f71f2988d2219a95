/**
 * Host input read exactly once (issue 11, item 12) and unreadable input named at its place (item 7): a getter that
 * answers differently on each read cannot slip a value past a limit, and a throwing getter or a revoked proxy
 * becomes an `unreadable-input` issue at the path of the field, not a thrown TypeError or a vague `sources` issue.
 */
import { afterEach, describe, expect, it } from "vitest";
import { KNOWLEDGE_ENTRY_FIELDS, MAX_BODY_CHARS, MAX_FIELD_CHARS } from "./defaults.js";
import { snapshotSourceArrays } from "./hostValues.js";
import { clearKnowledgeIndexCache, getOrBuildKnowledgeIndexSnapshot } from "./indexCache.js";
import { normalizeAndValidate } from "./resolve.js";

afterEach(() => clearKnowledgeIndexCache());

const ENTRY_FIELDS = KNOWLEDGE_ENTRY_FIELDS;

const plain: Record<string, unknown> = {
  id: "e",
  title: "Title",
  summary: "Summary",
  domain: "d",
  integrations: ["shop"],
  kind: "text",
  status: "active",
  body: "short body",
  aliases: ["alias one"],
  keywords: ["keyword"],
  relatedEntryIds: [],
  parentEntryId: "e",
};

/**
 * An entry whose every field is a getter counting its reads. The first read gives the plain value; later reads
 * give `later(field)` (by default an oversized string), as a hostile or buggy host object could.
 */
function countingEntry(later: (field: string) => unknown = () => "x".repeat(5_000_000)): {
  entry: Record<string, unknown>;
  reads: Record<string, number>;
} {
  const reads: Record<string, number> = {};
  const entry: Record<string, unknown> = {};
  for (const field of ENTRY_FIELDS) {
    reads[field] = 0;
    Object.defineProperty(entry, field, {
      enumerable: true,
      get() {
        reads[field]!++;
        return reads[field] === 1 ? plain[field] : later(field);
      },
    });
  }
  return { entry, reads };
}

/** A source whose `id`, `version` and `entries` are counting getters. */
function countingSource(entries: unknown[]): {
  source: Record<string, unknown>;
  reads: Record<string, number>;
} {
  const values: Record<string, unknown> = { id: "s", version: "1", entries };
  const reads: Record<string, number> = { id: 0, version: 0, entries: 0 };
  const source: Record<string, unknown> = {};
  for (const field of Object.keys(values)) {
    Object.defineProperty(source, field, {
      enumerable: true,
      get() {
        reads[field]!++;
        return reads[field] === 1 ? values[field] : [{ id: "forged" }];
      },
    });
  }
  return { source, reads };
}

describe("each field of host input is read exactly once", () => {
  it("normalizeAndValidate reads every entry field once; a body that grows on the second read is not taken", () => {
    const { entry, reads } = countingEntry();
    const result = normalizeAndValidate([{ id: "s", version: "1", entries: [entry] }], {
      manifestVersion: "0",
    });
    expect(result.validation.issues).toEqual([]);
    for (const field of ENTRY_FIELDS) expect(reads[field], field).toBe(1);
    const normalized = result.entries[0]!;
    expect(normalized.body).toBe("short body");
    expect(normalized.title).toBe("Title");
    expect(normalized.aliases).toEqual(["alias one"]);
    expect(normalized.integrations).toEqual(["shop"]);
    expect(normalized.parentEntryId).toBe("e");
  });

  it("a getter that is short when validated and 5 MB later never reaches the index (through the cache build)", async () => {
    const { entry, reads } = countingEntry();
    const { source, reads: sourceReads } = countingSource([entry]);
    const result = await getOrBuildKnowledgeIndexSnapshot([source]);
    expect(result.validation.ok).toBe(true);
    for (const field of ENTRY_FIELDS) expect(reads[field], field).toBe(1);
    expect(sourceReads).toEqual({ id: 1, version: 1, entries: 1 });
    const indexed = result.snapshot!.entriesById.get("e")!;
    expect(indexed.body.length).toBeLessThanOrEqual(MAX_BODY_CHARS);
    expect(indexed.body).toBe("short body");
  });

  it("array items are read once: an alias that is valid when checked cannot become oversized when copied", () => {
    let aliasReads = 0;
    const aliases: string[] = [];
    Object.defineProperty(aliases, 0, {
      enumerable: true,
      get() {
        aliasReads++;
        return aliasReads === 1 ? "alias" : "y".repeat(MAX_FIELD_CHARS * 10);
      },
    });
    let integrationReads = 0;
    const integrations = new Proxy(["shop"], {
      get(target, key, receiver) {
        if (key === "0") {
          integrationReads++;
          return integrationReads === 1 ? "shop" : 42;
        }
        return Reflect.get(target, key, receiver);
      },
    });
    const result = normalizeAndValidate(
      [{ id: "s", version: "1", entries: [{ ...plain, aliases, integrations }] }],
      { manifestVersion: "0" },
    );
    expect(result.validation.ok).toBe(true);
    expect(aliasReads).toBe(1);
    expect(integrationReads).toBe(1);
    expect(result.entries[0]!.aliases).toEqual(["alias"]);
    expect(result.entries[0]!.integrations).toEqual(["shop"]);
  });

  it("an integration longer than the documented field limit is limit-exceeded", () => {
    const result = normalizeAndValidate(
      [{ id: "s", entries: [{ ...plain, integrations: ["i".repeat(MAX_FIELD_CHARS + 1)] }] }],
      { manifestVersion: "0" },
    );
    expect(result.validation.issues).toContainEqual(
      expect.objectContaining({ code: "limit-exceeded", path: "sources[0].entries[0].integrations[0]" }),
    );
  });

  it("snapshotSourceArrays reads each source field once and copies the entry list", () => {
    const entries = [plain];
    const { source, reads } = countingSource(entries);
    const copy = snapshotSourceArrays([source]) as Array<Record<string, unknown>>;
    expect(reads).toEqual({ id: 1, version: 1, entries: 1 });
    expect(copy[0]).toEqual({ id: "s", version: "1", entries: [plain] });
    expect(copy[0]!.entries).not.toBe(entries);
  });
});

describe("unreadable host input is an issue at its place", () => {
  const throwing = (field: string): Record<string, unknown> =>
    Object.defineProperty({ ...plain, id: `bad-${field}` }, field, {
      enumerable: true,
      get() {
        throw new TypeError(`no ${field}`);
      },
    });

  it.each(ENTRY_FIELDS.filter((field) => field !== "id"))(
    "a throwing %s getter is unreadable-input at that field; the other entries are still validated",
    (field) => {
      const result = normalizeAndValidate(
        [{ id: "s", entries: [throwing(field), { ...plain, id: "fine", parentEntryId: undefined }] }],
        { manifestVersion: "0" },
      );
      expect(result.validation.ok).toBe(false);
      expect(result.validation.issues).toContainEqual(
        expect.objectContaining({
          level: "error",
          code: "unreadable-input",
          path: `sources[0].entries[0].${field}`,
          entryId: `bad-${field}`,
        }),
      );
      expect(result.entries.map((entry) => entry.id)).toContain("fine");
    },
  );

  it("a throwing id getter is unreadable-input at the id; the entry is skipped", () => {
    const result = normalizeAndValidate([{ id: "s", entries: [throwing("id"), { ...plain, id: "fine" }] }], {
      manifestVersion: "0",
    });
    expect(result.validation.issues).toContainEqual(
      expect.objectContaining({ code: "unreadable-input", path: "sources[0].entries[0].id" }),
    );
    expect(result.entries.map((entry) => entry.id)).toEqual(["fine"]);
  });

  it("revoked proxies as the source list, a source, an entry list, an entry and a field", () => {
    const revoked = (): object => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    };
    const cases: Array<[unknown, string]> = [
      [revoked(), "sources"],
      [[revoked()], "sources[0]"],
      [[{ id: "s", entries: revoked() }], "sources[0].entries"],
      [[{ id: "s", entries: [revoked()] }], "sources[0].entries[0]"],
      [[{ id: "s", entries: [{ ...plain, aliases: revoked() }] }], "sources[0].entries[0].aliases"],
    ];
    for (const [sources, path] of cases) {
      for (const input of [sources, snapshotSourceArrays(sources)]) {
        const result = normalizeAndValidate(input, { manifestVersion: "0" });
        expect(result.validation.ok, path).toBe(false);
        expect(result.validation.issues, path).toContainEqual(
          expect.objectContaining({ code: "unreadable-input", path }),
        );
      }
    }
  });

  it("a revoked proxy as the value of a string field is a type error at that field", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    for (const field of ["title", "kind", "body", "parentEntryId"]) {
      const result = normalizeAndValidate([{ id: "s", entries: [{ ...plain, [field]: proxy }] }], {
        manifestVersion: "0",
      });
      const issue = result.validation.issues.find((each) => each.path === `sources[0].entries[0].${field}`);
      expect(issue?.message, field).toContain("revoked proxy");
    }
  });

  it("a throwing source id, version or entries getter is named at its path", () => {
    for (const field of ["id", "version", "entries"]) {
      const source = Object.defineProperty({ id: "s", version: "1", entries: [plain] }, field, {
        enumerable: true,
        get() {
          throw new Error("boom");
        },
      });
      const result = normalizeAndValidate(snapshotSourceArrays([source]), { manifestVersion: "0" });
      expect(result.validation.issues).toContainEqual(
        expect.objectContaining({ code: "unreadable-input", path: `sources[0].${field}` }),
      );
    }
  });
});
