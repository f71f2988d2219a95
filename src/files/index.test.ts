import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { KnowledgeGroundingEngine } from "../index.js";
import {
  KnowledgeCompileError,
  type KnowledgeReloadResult,
  loadKnowledgeBase,
  watchKnowledgeBase,
} from "./index.js";

const exampleKnowledgeBase = join(import.meta.dirname, "../../examples/knowledge-base");
const invalidFixture = join(import.meta.dirname, "../../test/cli/fixtures/invalid");
const temporaryDirectories: string[] = [];

afterEach(async () => {
  await Promise.all(
    temporaryDirectories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })),
  );
});

async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), "lexground-files-"));
  temporaryDirectories.push(directory);
  return directory;
}

function entry(id: string, title: string, summary = `About ${title}.`): string {
  return `---\nid: ${id}\ntitle: ${title}\nsummary: ${summary}\ndomain: docs\nintegrations: []\n---\n${title} body.\n`;
}

/** Collects reload results and lets a test wait for the next one that matches. */
function reloadRecorder() {
  const results: KnowledgeReloadResult[] = [];
  const waiters: {
    match: (result: KnowledgeReloadResult) => boolean;
    resolve: (r: KnowledgeReloadResult) => void;
  }[] = [];
  return {
    results,
    onReload(result: KnowledgeReloadResult) {
      results.push(result);
      for (const waiter of waiters.splice(0)) {
        if (waiter.match(result)) waiter.resolve(result);
        else waiters.push(waiter);
      }
    },
    next(match: (result: KnowledgeReloadResult) => boolean = () => true): Promise<KnowledgeReloadResult> {
      return new Promise((resolve) => waiters.push({ match, resolve }));
    },
  };
}

async function contextFor(engine: KnowledgeGroundingEngine, query: string): Promise<string> {
  const outcome = await engine.ground({ query });
  return outcome.ephemeralContext?.content ?? "";
}

/** Writes like an editor that saves atomically: a hidden temporary file renamed over the target. */
async function save(path: string, text: string): Promise<void> {
  const temporary = join(dirname(path), `.${basename(path)}.tmp`);
  await writeFile(temporary, text);
  await rename(temporary, path);
}

function watchHandles(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === "FSEventWrap").length;
}

describe("loadKnowledgeBase (lexground/files)", () => {
  it("reads and validates a folder: engine sources, no errors", async () => {
    const loaded = await loadKnowledgeBase(exampleKnowledgeBase);
    expect(loaded.ok).toBe(true);
    expect(loaded.origin).toBe("folder");
    expect(loaded.sources.length).toBeGreaterThan(1);
    expect(loaded.issues.filter((issue) => issue.level === "error")).toEqual([]);
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: loaded.sources });
    await engine.ready();
    expect(engine.getStatus().entryCount).toBe(
      loaded.sources.reduce((total, source) => total + source.entries.length, 0),
    );
  });

  it("reports every validation issue at its file and line instead of throwing", async () => {
    const loaded = await loadKnowledgeBase(invalidFixture);
    expect(loaded.ok).toBe(false);
    const missingTitle = loaded.issues.find(
      (issue) => issue.level === "error" && issue.entryId === "invalid.missing-title",
    );
    expect(missingTitle?.file).toMatch(/missing-title\.md$/);
    expect(missingTitle?.line).toBeGreaterThan(0);
    const badKind = loaded.issues.find(
      (issue) => issue.entryId === "invalid.bad-kind" && issue.field === "kind",
    );
    expect(badKind?.file).toMatch(/bad-kind\.md$/);
  });

  it("reports every file that cannot be compiled as a located issue, with the other files' entries", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "broken.md"), "---\nid: a\ntitle: [unclosed\n---\nBody\n");
    await writeFile(join(directory, "no-front-matter.md"), "Just prose, no front matter.\n");
    await writeFile(join(directory, "bad.json"), '{ "id": "b", }\n');
    await writeFile(join(directory, "good.md"), entry("docs.good", "Good entry"));
    const loaded = await loadKnowledgeBase(directory);
    expect(loaded.ok).toBe(false);
    const errors = loaded.issues.filter((issue) => issue.level === "error");
    expect(errors.map((issue) => issue.file?.replace(/^.*\//, "")).sort()).toEqual([
      "bad.json",
      "broken.md",
      "no-front-matter.md",
    ]);
    for (const error of errors) {
      expect(error.line, error.file).toBeGreaterThan(0);
      expect(error.code, error.file).toMatch(/^[a-z-]+$/);
    }
    expect(loaded.sources.flatMap((source) => source.entries.map((item) => item.id))).toEqual(["docs.good"]);
  });

  it("a folder whose only file cannot be compiled is one issue and no sources, not a throw", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "broken.yaml"), "id: a\ntitle: [unclosed\n");
    const loaded = await loadKnowledgeBase(directory);
    expect(loaded.ok).toBe(false);
    expect(loaded.sources.flatMap((source) => source.entries)).toEqual([]);
    expect(loaded.issues).toEqual([
      expect.objectContaining({
        level: "error",
        code: "yaml-syntax",
        file: expect.stringMatching(/broken\.yaml$/),
      }),
    ]);
  });

  it("throws a located KnowledgeCompileError with collectFileErrors: false, or when there is nothing to read", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "broken.md"), "---\nid: a\ntitle: [unclosed\n---\nBody\n");
    const error = await loadKnowledgeBase(directory, { collectFileErrors: false }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(KnowledgeCompileError);
    expect((error as KnowledgeCompileError).file).toMatch(/broken\.md$/);
    await expect(loadKnowledgeBase(join(directory, "missing"))).rejects.toMatchObject({ code: "not-found" });
    const empty = await temporaryDirectory();
    await expect(loadKnowledgeBase(empty)).rejects.toMatchObject({ code: "no-entries" });
    await writeFile(join(empty, "kb.json"), '{ "catalogs": [ }\n');
    await expect(loadKnowledgeBase(join(empty, "kb.json"))).rejects.toMatchObject({ code: "json-syntax" });
  });
});

describe("watchKnowledgeBase (lexground/files)", () => {
  it("serves an edited file's new content, keeps the old snapshot on unreadable or invalid edits, and closes", async () => {
    const directory = await temporaryDirectory();
    const file = join(directory, "refunds.md");
    await writeFile(file, entry("docs.refund-policy", "Refund policy"));
    await writeFile(join(directory, "shipping.md"), entry("docs.shipping-times", "Shipping times"));
    const { sources } = await loadKnowledgeBase(directory);
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    await engine.ready();
    expect(await contextFor(engine, "refund policy")).toContain("Refund policy");

    const handlesBefore = watchHandles();
    const recorder = reloadRecorder();
    const watcher = await watchKnowledgeBase(directory, engine, {
      debounceMs: 50,
      onReload: recorder.onReload,
    });
    expect(watcher.directories).toEqual([directory]);
    expect(watchHandles()).toBe(handlesBefore + 1);

    // 1. An edit is served once the debounced reload has rebuilt the engine.
    let reloaded = recorder.next((candidate) => candidate.ok);
    await save(file, entry("docs.refund-policy", "Refund window", "Refunds within thirty days."));
    let result = await reloaded;
    expect(result).toMatchObject({ ok: true, issues: [] });
    expect(result.status?.entryCount).toBe(2);
    expect(await contextFor(engine, "refund window")).toContain("Refunds within thirty days.");

    // 2. A file that cannot be read: the engine is not touched, the error is reported at the file.
    reloaded = recorder.next((candidate) => candidate.error !== undefined);
    await save(file, "---\nid: docs.refund-policy\ntitle: [unclosed\n---\n");
    result = await reloaded;
    expect(result.ok).toBe(false);
    expect(result.status).toBeNull();
    expect(result.error).toBeInstanceOf(KnowledgeCompileError);
    expect(result.issues).toEqual([
      expect.objectContaining({
        level: "error",
        code: "yaml-syntax",
        file: expect.stringMatching(/refunds\.md$/),
      }),
    ]);
    expect(await contextFor(engine, "refund window")).toContain("Refunds within thirty days.");

    // 3. Readable but invalid entries: the engine keeps its snapshot and the issue is located.
    reloaded = recorder.next();
    await writeFile(
      file,
      "---\nid: docs.refund-policy\nsummary: No title.\ndomain: docs\nintegrations: []\n---\n",
    );
    result = await reloaded;
    expect(result.ok).toBe(false);
    expect(result.status?.lastError).toMatch(/validation failed/);
    expect(result.issues).toContainEqual(
      expect.objectContaining({
        level: "error",
        entryId: "docs.refund-policy",
        file: expect.stringMatching(/refunds\.md$/),
      }),
    );
    expect(engine.getStatus().ready).toBe(true);
    expect(await contextFor(engine, "refund window")).toContain("Refunds within thirty days.");

    // 4. A new subfolder is watched, and a file written into it is served.
    reloaded = recorder.next((candidate) => candidate.status?.entryCount === 3);
    await save(file, entry("docs.refund-policy", "Refund window", "Refunds within thirty days."));
    await mkdir(join(directory, "returns"));
    await writeFile(join(directory, "returns", "labels.md"), entry("docs.return-labels", "Return labels"));
    result = await reloaded;
    expect(result.ok).toBe(true);
    expect(watcher.directories).toContain(join(directory, "returns"));
    expect(await contextFor(engine, "return labels")).toContain("Return labels");

    // 5. close() releases every watcher and stops reloading.
    await watcher.close();
    expect(watchHandles()).toBe(handlesBefore);
    const count = recorder.results.length;
    await writeFile(file, entry("docs.refund-policy", "Refund policy again"));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(recorder.results.length).toBe(count);
    await watcher.close();
  });

  it("with a fixed content version, applies a changed file as an update of just its entries", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "refunds.md"), entry("docs.refund-policy", "Refund policy"));
    await writeFile(join(directory, "shipping.md"), entry("docs.shipping-times", "Shipping times"));
    const { sources } = await loadKnowledgeBase(directory, { contentVersion: "v1" });
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    await engine.ready();
    const recorder = reloadRecorder();
    const watcher = await watchKnowledgeBase(directory, engine, {
      debounceMs: 50,
      contentVersion: "v1",
      sources,
      onReload: recorder.onReload,
    });
    let reloaded = recorder.next((candidate) => candidate.ok);
    await save(
      join(directory, "refunds.md"),
      entry("docs.refund-policy", "Refund window", "Within thirty days."),
    );
    let result = await reloaded;
    expect(result).toMatchObject({ ok: true, applied: "update", issues: [] });
    expect(engine.getStatus().snapshotOrigin).toBe("update");
    expect(await contextFor(engine, "refund window")).toContain("Within thirty days.");
    // A removed file removes its entries; an invalid edit is refused and located at its file.
    reloaded = recorder.next();
    await rm(join(directory, "shipping.md"));
    result = await reloaded;
    expect(result).toMatchObject({ ok: true, applied: "update" });
    expect(engine.getStatus().entryCount).toBe(1);
    reloaded = recorder.next();
    await writeFile(
      join(directory, "refunds.md"),
      "---\nid: docs.refund-policy\nsummary: No title.\ndomain: docs\nintegrations: []\n---\n",
    );
    result = await reloaded;
    expect(result.ok).toBe(false);
    expect(result.issues).toContainEqual(
      expect.objectContaining({ level: "error", file: expect.stringMatching(/refunds\.md$/) }),
    );
    expect(await contextFor(engine, "refund window")).toContain("Within thirty days.");
    await watcher.close();
  });

  it("debounces a burst of writes into one reload", async () => {
    const directory = await temporaryDirectory();
    await writeFile(join(directory, "a.md"), entry("docs.entry-a", "Entry alpha"));
    const { sources } = await loadKnowledgeBase(directory);
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    await engine.ready();
    const recorder = reloadRecorder();
    const watcher = await watchKnowledgeBase(directory, engine, {
      debounceMs: 1000,
      onReload: recorder.onReload,
    });
    try {
      const reloaded = recorder.next();
      for (const name of ["b", "c", "d", "e"]) {
        await writeFile(join(directory, `${name}.md`), entry(`docs.entry-${name}`, `Entry ${name}`));
      }
      const result = await reloaded;
      expect(result.status?.entryCount).toBe(5);
      expect(recorder.results).toHaveLength(1);
    } finally {
      await watcher.close();
    }
  });

  it("watches a single file through its folder, ignoring other files there", async () => {
    const directory = await temporaryDirectory();
    const manifestFolder = join(directory, "kb");
    await mkdir(manifestFolder);
    await writeFile(join(manifestFolder, "one.md"), entry("docs.entry-one", "Entry one"));
    const file = join(manifestFolder, "one.md");
    const rebuilt: number[] = [];
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: (await loadKnowledgeBase(file)).sources,
    });
    await engine.ready();
    const recorder = reloadRecorder();
    const watcher = await watchKnowledgeBase(
      file,
      async (sources) => {
        rebuilt.push(sources.length);
        return engine.rebuild(sources);
      },
      { debounceMs: 20, onReload: recorder.onReload },
    );
    try {
      expect(watcher.directories).toEqual([manifestFolder]);
      await writeFile(join(manifestFolder, "unrelated.txt"), "noise");
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(recorder.results).toEqual([]);
      const reloaded = recorder.next();
      await save(file, entry("docs.entry-one", "Entry one renamed"));
      expect((await reloaded).ok).toBe(true);
      expect(rebuilt).toEqual([1]);
      expect(await contextFor(engine, "entry one renamed")).toContain("Entry one renamed");
    } finally {
      await watcher.close();
    }
  });

  it("rejects a missing input, a bad target and a bad debounce with typed errors", async () => {
    const directory = await temporaryDirectory();
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [] });
    const handlesBefore = watchHandles();
    await expect(watchKnowledgeBase(join(directory, "missing"), engine)).rejects.toMatchObject({
      name: "KnowledgeCompileError",
      code: "not-found",
    });
    await expect(watchKnowledgeBase(directory, {} as never)).rejects.toThrow(TypeError);
    await expect(watchKnowledgeBase(directory, engine, { debounceMs: -1 })).rejects.toThrow(RangeError);
    expect(watchHandles()).toBe(handlesBefore);
  });
});
