import { mkdtemp, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { firstSentence } from "../../src/files/beir.js";
import { compileKnowledgeBase, readKnowledgeBase } from "../../src/files/compile.js";
import { KnowledgeCompileError } from "../../src/files/errors.js";
import { serializeManifest } from "../../src/files/manifest.js";

const fixtures = join(import.meta.dirname, "fixtures");
const fixed = { cwd: fixtures, env: { SOURCE_DATE_EPOCH: "1767225600" } };
const temporaryDirectories: string[] = [];

async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "lexground-compile-"));
  temporaryDirectories.push(directory);
  return directory;
}

afterAll(async () => {
  await Promise.all(temporaryDirectories.map((directory) => rm(directory, { recursive: true, force: true })));
});

async function compileError(run: () => Promise<unknown>): Promise<KnowledgeCompileError> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(KnowledgeCompileError);
    return error as KnowledgeCompileError;
  }
  throw new Error("expected a KnowledgeCompileError");
}

describe("compileKnowledgeBase", () => {
  it("compiles catalog folders into catalogs sorted by id with entries sorted by id", async () => {
    const { manifest, notes, origin } = await compileKnowledgeBase(["kb"], fixed);
    expect(origin).toBe("folder");
    expect(manifest.schemaVersion).toBe("1");
    expect(manifest.generatedAt).toBe("2026-01-01T00:00:00.000Z");
    expect(manifest.contentVersion).toMatch(/^[0-9a-f]{12}$/);
    expect(manifest.catalogs.map((catalog) => catalog.id)).toEqual(["access-policies", "account-settings"]);
    expect(manifest.catalogs[0]!.entries.map((entry) => entry.id)).toEqual([
      "policies.draft-approval",
      "policies.policy-types",
    ]);
    expect(manifest.catalogs[1]!.entries.map((entry) => entry.id)).toEqual([
      "settings.legacy-timeout",
      "settings.multi-step-flow",
      "settings.session-timeout",
      "settings.step-validation",
    ]);
    // The questions file at the root is not an entry file.
    expect(notes).toEqual([
      {
        level: "info",
        code: "ignored-file",
        message: "not inside a catalog folder; ignored",
        file: "kb/questions.json",
      },
    ]);
  });

  it("keeps front matter fields in the manifest key order and takes the Markdown as the body", async () => {
    const { manifest } = await compileKnowledgeBase(["kb"], fixed);
    const entry = manifest.catalogs[1]!.entries.find((item) => item.id === "settings.multi-step-flow")!;
    expect(Object.keys(entry)).toEqual([
      "id",
      "title",
      "summary",
      "domain",
      "integrations",
      "kind",
      "aliases",
      "keywords",
      "relatedEntryIds",
      "body",
    ]);
    expect(entry.aliases).toEqual(["enableMultiStepFlow", "enable multi step flow"]);
    expect(entry.body).toBe(
      "The multi-step flow splits a long form into guided steps.\n\nTurn it on with the `enableMultiStepFlow` configuration key.",
    );
  });

  it("maps every entry and field to its file and line", async () => {
    const { sourceMap } = await compileKnowledgeBase(["kb"], fixed);
    const settings = sourceMap.catalogs[1]!;
    expect(settings.file).toBe("kb/settings/catalog.yaml");
    expect(settings.name).toBe("Account settings");
    const flow = settings.entries[1]!;
    expect(flow.file).toBe("kb/settings/multi-step-flow.md");
    expect(flow.line).toBe(2);
    expect(flow.fields).toMatchObject({
      id: 2,
      title: 3,
      summary: 4,
      aliases: 8,
      relatedEntryIds: 12,
      body: 15,
    });
    const legacy = settings.entries[0]!;
    expect(legacy).toMatchObject({ file: "kb/settings/more.yaml", line: 11 });
    expect(legacy.fields.status).toBe(16);
    const draft = sourceMap.catalogs[0]!.entries[0]!;
    expect(draft).toMatchObject({ file: "kb/policies/drafts.json", line: 3 });
    expect(draft.fields.title).toBe(5);
  });

  it("names a flat folder's catalog after the folder and defaults a Markdown id to the file name", async () => {
    const { manifest, sourceMap } = await compileKnowledgeBase(["flat"], fixed);
    expect(manifest.catalogs).toHaveLength(1);
    expect(manifest.catalogs[0]!.id).toBe("flat");
    expect(manifest.catalogs[0]!.entries.map((entry) => entry.id)).toEqual(["alpha", "beta"]);
    expect(sourceMap.catalogs[0]!.entries[0]!.fields.id).toBeUndefined();
  });

  it("puts individually given files into their folder's catalog", async () => {
    const { manifest, origin } = await compileKnowledgeBase(
      ["kb/settings/more.yaml", "kb/settings/multi-step-flow.md"],
      fixed,
    );
    expect(origin).toBe("files");
    expect(manifest.catalogs.map((catalog) => catalog.id)).toEqual(["account-settings"]);
    expect(manifest.catalogs[0]!.entries).toHaveLength(3);
  });

  it("is byte-identical for the same input, and the content version follows the content", async () => {
    const first = serializeManifest((await compileKnowledgeBase(["kb"], fixed)).manifest);
    const second = serializeManifest((await compileKnowledgeBase(["kb"], fixed)).manifest);
    expect(second).toBe(first);

    const directory = await temporaryDirectory();
    const entry = (summary: string) =>
      `---\nid: a\ntitle: A Thing\nsummary: ${summary}\ndomain: d\nintegrations: []\n---\nBody.\n`;
    await writeFile(join(directory, "a.md"), entry("First summary."));
    const before = await compileKnowledgeBase([directory], { env: {} });
    await writeFile(join(directory, "a.md"), entry("Second summary."));
    const after = await compileKnowledgeBase([directory], { env: {} });
    expect(after.manifest.contentVersion).not.toBe(before.manifest.contentVersion);
  });

  it("derives generatedAt from the newest file mtime (whole seconds) without SOURCE_DATE_EPOCH", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "a.yaml"), "id: a\ntitle: A\nsummary: s\ndomain: d\nintegrations: []\n");
    await writeFile(join(directory, "b.yaml"), "id: b\ntitle: B\nsummary: s\ndomain: d\nintegrations: []\n");
    await utimes(
      join(directory, "a.yaml"),
      new Date("2025-03-01T10:00:00.750Z"),
      new Date("2025-03-01T10:00:00.750Z"),
    );
    await utimes(
      join(directory, "b.yaml"),
      new Date("2025-02-01T10:00:00Z"),
      new Date("2025-02-01T10:00:00Z"),
    );
    const { manifest } = await compileKnowledgeBase([directory], { env: {} });
    expect(manifest.generatedAt).toBe("2025-03-01T10:00:00.000Z");
    const given = await compileKnowledgeBase([directory], { env: {}, generatedAt: "2024-12-24T00:00:00Z" });
    expect(given.manifest.generatedAt).toBe("2024-12-24T00:00:00.000Z");
  });

  it("uses a given content version and rejects one that would break citations", async () => {
    const { manifest } = await compileKnowledgeBase(["flat"], { ...fixed, contentVersion: "2026-07-14.1" });
    expect(manifest.contentVersion).toBe("2026-07-14.1");
    const error = await compileError(() =>
      compileKnowledgeBase(["flat"], { ...fixed, contentVersion: "v1]" }),
    );
    expect(error.code).toBe("bad-content-version");
  });

  it("reports unknown fields with their line and drops them", async () => {
    const directory = await temporaryDirectory();
    await writeFile(
      join(directory, "x.md"),
      "---\nid: x\ntitle: X Thing\nsummary: s\ndomain: d\nintegrations: []\nalias: [oops]\n---\n",
    );
    const { manifest, notes } = await compileKnowledgeBase([directory], { cwd: directory, env: {} });
    expect(Object.keys(manifest.catalogs[0]!.entries[0]!)).not.toContain("alias");
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      code: "unknown-field",
      file: "x.md",
      line: 7,
      entryId: "x",
      field: "alias",
    });
  });
});

describe("compile errors", () => {
  it("malformed YAML names the file and line", async () => {
    const error = await compileError(() => compileKnowledgeBase(["bad-yaml"], fixed));
    expect(error.code).toBe("yaml-syntax");
    expect(error.message).toBe(
      "bad-yaml/broken.md:4: malformed YAML: Nested mappings are not allowed in compact mappings",
    );
    expect(error.line).toBe(4);
    expect(error.hint).toContain("quote values");
  });

  it("a Markdown file without front matter is an error at line 1", async () => {
    const error = await compileError(() => compileKnowledgeBase(["no-front-matter"], fixed));
    expect(error.code).toBe("missing-front-matter");
    expect(error.message).toBe(
      "no-front-matter/plain.md:1: no YAML front matter (the file must start with ---)",
    );
  });

  it("unclosed front matter, malformed JSON and a missing path are typed errors", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "open.md"), "---\nid: open\ntitle: Open\n");
    expect((await compileError(() => compileKnowledgeBase(["open.md"], { cwd: directory }))).message).toBe(
      "open.md:1: front matter is not closed",
    );
    await writeFile(join(directory, "bad.json"), '{\n  "id": "x",\n  "title": \n}\n');
    const json = await compileError(() => compileKnowledgeBase(["bad.json"], { cwd: directory }));
    expect(json.code).toBe("json-syntax");
    expect(json.file).toBe("bad.json");
    const missing = await compileError(() => compileKnowledgeBase(["nowhere"], { cwd: directory }));
    expect(missing.message).toBe("nowhere: no such file or directory");
    expect(missing.code).toBe("not-found");
  });

  it("an empty folder, an unsupported file and duplicate catalog ids are typed errors", async () => {
    const directory = await temporaryDirectory();
    const empty = await compileError(() => compileKnowledgeBase(["."], { cwd: directory }));
    expect(empty.code).toBe("no-entries");
    await writeFile(join(directory, "notes.txt"), "hello");
    expect((await compileError(() => compileKnowledgeBase(["notes.txt"], { cwd: directory }))).code).toBe(
      "unsupported-file",
    );
    const root = await temporaryDirectory();
    for (const name of ["one", "two"]) {
      await mkdirp(join(root, name));
      await writeFile(join(root, name, "catalog.yaml"), "id: same\n");
      await writeFile(
        join(root, name, `${name}.yaml`),
        `id: ${name}\ntitle: T\nsummary: s\ndomain: d\nintegrations: []\n`,
      );
    }
    const duplicate = await compileError(() => compileKnowledgeBase(["."], { cwd: root }));
    expect(duplicate.code).toBe("duplicate-catalog-id");
    expect(duplicate.message).toBe('two/catalog.yaml:1: catalog id "same" is also used by one/catalog.yaml');
  });
});

async function mkdirp(path: string) {
  const { mkdir } = await import("node:fs/promises");
  await mkdir(path, { recursive: true });
}

describe("readKnowledgeBase", () => {
  it("loads a BEIR corpus: first sentence as summary, id as a missing title, domain corpus", async () => {
    const { manifest, sourceMap, origin } = await readKnowledgeBase("beir", fixed);
    expect(origin).toBe("beir");
    expect(manifest.catalogs.map((catalog) => catalog.id)).toEqual(["beir"]);
    const entries = manifest.catalogs[0]!.entries;
    // Code-unit order: "d1" < "d10" < "d2".
    expect(entries.map((entry) => entry.id)).toEqual(["d1", "d10", "d2"]);
    expect(entries[0]).toEqual({
      id: "d1",
      title: "Wing aerodynamics",
      summary: "Wings in a slipstream gain lift.",
      domain: "corpus",
      integrations: [],
      body: "Wings in a slipstream gain lift. More text follows here.",
    });
    expect(entries[2]!.title).toBe("d2");
    expect(entries[2]!.summary).toBe("Boundary layers thicken downstream!");
    expect(entries[1]!.summary).toBe("Heat moves from hot to cold");
    expect(sourceMap.catalogs[0]!.entries.map((entry) => entry.line)).toEqual([1, 3, 2]);
  });

  it("round-trips a built manifest file and locates its entries when asked", async () => {
    const directory = await temporaryDirectory();
    const built = await compileKnowledgeBase(["kb"], fixed);
    await writeFile(join(directory, "manifest.json"), serializeManifest(built.manifest));
    const loaded = await readKnowledgeBase("manifest.json", { cwd: directory, locate: true });
    expect(loaded.origin).toBe("manifest");
    expect(loaded.manifest).toEqual(built.manifest);
    expect(loaded.sources[0]).toMatchObject({
      id: "access-policies",
      version: built.manifest.contentVersion,
    });
    const first = loaded.sourceMap.catalogs[0]!.entries[0]!;
    expect(first.file).toBe("manifest.json");
    expect(first.line).toBe(9);
    expect(first.fields.id).toBe(10);
    expect(first.fields.title).toBe(11);
  });

  it("rejects a JSON file that is not a manifest shape with a typed error", async () => {
    const directory = await temporaryDirectory();
    await writeFile(
      join(directory, "m.json"),
      JSON.stringify({ contentVersion: "1", catalogs: [{ id: "c" }] }),
    );
    const error = await compileError(() => readKnowledgeBase("m.json", { cwd: directory }));
    expect(error.message).toBe("m.json: catalogs[0].entries must be an array");
    await expect(readKnowledgeBase({ catalogs: "x" } as never)).rejects.toThrow(KnowledgeCompileError);
  });
});

describe("firstSentence", () => {
  it("stops at the first sentence end followed by whitespace, and caps run-ons", () => {
    expect(firstSentence("Version 2.5 is out. Next.")).toBe("Version 2.5 is out.");
    expect(firstSentence("  no end  ")).toBe("no end");
    const long = firstSentence("word ".repeat(500));
    expect(long.length).toBeLessThanOrEqual(601);
    expect(long.endsWith("…")).toBe(true);
  });
});
