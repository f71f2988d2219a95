/**
 * The knowledge compiler: turns a folder of authored files (Markdown with YAML front matter, YAML or JSON entry
 * files, grouped into catalogs) into a deterministic {@link KnowledgeManifest}, and keeps a source map so every
 * later validation issue can point at `file:line`.
 *
 * Layout rules, in order:
 * - A folder holding `catalog.yaml` (or `catalog.yml`, keys `id` and optional `name`) is one catalog; every entry
 *   file below it belongs to it, except those under a nested catalog folder.
 * - A folder without `catalog.yaml` whose subfolders contain catalog folders is a collection of catalogs; loose
 *   files outside any catalog folder (for example a `questions.json`) are ignored and reported as notes.
 * - Any other folder is one catalog named after the folder.
 * - A file given directly belongs to its parent folder's catalog (`catalog.yaml` there, or the folder's name).
 *
 * Entry files: `*.md` / `*.markdown` (one entry; YAML front matter between `---` lines, the Markdown after it is
 * the body, the id defaults to the file name), and `*.yaml` / `*.yml` / `*.json` (one entry, a list of entries, or
 * `{entries: [...]}`). `README.md` files and dot-files are skipped.
 *
 * This file reads the entry files of the gathered catalogs and assembles the manifest; the parts are
 * `catalogs.ts` (which files), `entryFiles.ts` (one file's entries), `yaml.ts` and `json.ts` (parsing with
 * positions), `fileText.ts` (reading bytes as text), `manifest.ts` (assembly, checks, source map), `beir.ts`
 * (BEIR corpora) and `types.ts` (options and results).
 *
 * @module
 */
import { stat } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import { manifestToSources } from "../index.js";
import type { KnowledgeManifest } from "../types/knowledge.js";
import { loadBeirCorpus } from "./beir.js";
import { CatalogGathering, MARKDOWN_EXTENSIONS } from "./catalogs.js";
import { compileDataText, compileMarkdownText } from "./entryFiles.js";
import { KnowledgeCompileError } from "./errors.js";
import {
  displayPath,
  MAX_ENTRY_FILE_BYTES,
  MAX_MANIFEST_FILE_BYTES,
  readSource,
  statOrThrow,
  withEncodingHint,
} from "./fileText.js";
import { parseJsonStrict } from "./json.js";
import { assemble, checkManifestShape, locateManifest, unlocatedSourceMap } from "./manifest.js";
import type {
  KnowledgeCompileNote,
  KnowledgeCompileOptions,
  KnowledgeEntryLocation,
  LoadedKnowledgeBase,
  PendingCatalog,
} from "./types.js";

/** Entry files read at once: enough to overlap file-system latency, few enough to stay far below fd limits. */
const READ_CONCURRENCY = 16;

/** One entry file to read, and the catalog its entries join. */
type FileJob = { catalog: PendingCatalog; path: string };

/** What reading one entry file gave: its entries, notes and modification time, or the error that stopped it. */
type FileOutcome =
  | {
      entries: { entry: unknown; location: KnowledgeEntryLocation }[];
      notes: KnowledgeCompileNote[];
      mtimeMs: number;
    }
  | { error: unknown };

/** The files to read, each once (the first catalog that lists a file keeps it), in walk order. */
function fileJobs(catalogs: Iterable<PendingCatalog>): FileJob[] {
  const seenFiles = new Set<string>();
  const jobs: FileJob[] = [];
  for (const catalog of catalogs) {
    const files = catalog.files;
    catalog.files = [];
    for (const path of files) {
      if (seenFiles.has(path)) continue;
      seenFiles.add(path);
      catalog.files.push(path);
      jobs.push({ catalog, path });
    }
  }
  return jobs;
}

/** Reads and parses the files concurrently (I/O dominates); outcomes are in job order whatever the timing. */
async function readEntryFiles(
  jobs: readonly FileJob[],
  cwd: string,
  onProgress: KnowledgeCompileOptions["onProgress"],
): Promise<FileOutcome[]> {
  const outcomes: FileOutcome[] = new Array(jobs.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      const { path } = jobs[index]!;
      const file = displayPath(path, cwd);
      const fileNotes: KnowledgeCompileNote[] = [];
      try {
        const { text, mtimeMs } = await readSource(path, file, MAX_ENTRY_FILE_BYTES, fileNotes);
        const extension = extname(path).toLowerCase();
        const entries = MARKDOWN_EXTENSIONS.has(extension)
          ? compileMarkdownText(text, path, file, fileNotes)
          : compileDataText(text, path, file, fileNotes);
        outcomes[index] = { entries, notes: fileNotes, mtimeMs };
      } catch (error) {
        outcomes[index] = { error: withEncodingHint(error, fileNotes) };
      }
      done++;
      onProgress?.({ phase: "read", done, total: jobs.length });
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, jobs.length) }, worker));
  return outcomes;
}

/**
 * Compiles folders and entry files into a manifest. Throws {@link KnowledgeCompileError} for anything that
 * prevents compiling (missing file, malformed YAML, front matter missing); entry content problems are left to
 * validation so that all of them can be reported at once.
 */
export async function compileKnowledgeBase(
  inputs: readonly string[],
  options: KnowledgeCompileOptions = {},
): Promise<LoadedKnowledgeBase> {
  const cwd = options.cwd ?? process.cwd();
  if (inputs.length === 0) {
    throw new KnowledgeCompileError("no-entries", "no input folder or file given", {
      hint: "pass a folder of Markdown entries, e.g. examples/knowledge-base",
    });
  }
  const gathering = new CatalogGathering(cwd, options.collectFileErrors === true);
  for (const input of inputs) await gathering.addInput(input);
  const { catalogsById, notes } = gathering;

  const jobs = fileJobs(catalogsById.values());
  const outcomes = await readEntryFiles(jobs, cwd, options.onProgress);
  // Merged in walk order, so that entries, notes and the first reported error do not depend on timing.
  let newestMtimeMs = 0;
  let order = 0;
  outcomes.forEach((outcome, index) => {
    if ("error" in outcome) {
      if (gathering.collected(outcome.error)) return;
      throw outcome.error;
    }
    newestMtimeMs = Math.max(newestMtimeMs, outcome.mtimeMs);
    notes.push(...outcome.notes);
    for (const item of outcome.entries) jobs[index]!.catalog.entries.push({ ...item, order: order++ });
  });
  for (const catalog of catalogsById.values()) {
    if (catalog.catalogFile) {
      const info = await stat(resolve(cwd, catalog.catalogFile)).catch(() => undefined);
      if (info) newestMtimeMs = Math.max(newestMtimeMs, info.mtimeMs);
    }
  }
  // Collected errors already say why there are no entries.
  if (order === 0 && !notes.some((note) => note.level === "error")) {
    throw new KnowledgeCompileError("no-entries", "no entries found", {
      file: inputs.map((input) => displayPath(resolve(cwd, input), cwd)).join(", "),
      hint: "entries are .md files with front matter or .yaml/.yml/.json files; catalog folders hold a catalog.yaml",
    });
  }
  const { manifest, sourceMap } = assemble([...catalogsById.values()], options, newestMtimeMs);
  return {
    manifest,
    sources: manifestToSources(manifest),
    sourceMap,
    notes,
    origin: gathering.onlyFiles ? "files" : "folder",
  };
}

/**
 * Reads a knowledge base from whatever the user points at: a manifest object, a manifest JSON file, a BEIR folder
 * (holding `corpus.jsonl`), a folder of authored entries, or entry files. It does not validate the entries; the
 * public `loadKnowledgeBase` (in `./index.ts`) does.
 */
export async function readKnowledgeBase(
  pathOrManifest: string | readonly string[] | KnowledgeManifest,
  options: KnowledgeCompileOptions = {},
): Promise<LoadedKnowledgeBase> {
  if (typeof pathOrManifest === "object" && !Array.isArray(pathOrManifest)) {
    const manifest = checkManifestShape(pathOrManifest, undefined);
    return {
      manifest,
      sources: manifestToSources(manifest),
      sourceMap: unlocatedSourceMap(manifest, "(manifest)"),
      notes: [],
      origin: "object",
    };
  }
  const inputs =
    typeof pathOrManifest === "string" ? [pathOrManifest] : (pathOrManifest as readonly string[]);
  const cwd = options.cwd ?? process.cwd();
  if (inputs.length === 1) {
    const absolute = resolve(cwd, inputs[0]!);
    const shown = displayPath(absolute, cwd);
    const info = await statOrThrow(absolute, shown);
    if (info.isDirectory()) {
      const corpus = await stat(join(absolute, "corpus.jsonl")).catch(() => undefined);
      if (corpus?.isFile()) return loadBeirCorpus(absolute, options);
    } else if (extname(absolute).toLowerCase() === ".json") {
      const notes: KnowledgeCompileNote[] = [];
      const { text } = await readSource(absolute, shown, MAX_MANIFEST_FILE_BYTES, notes);
      let value: unknown;
      try {
        value = parseJsonStrict(text, shown);
      } catch (error) {
        throw withEncodingHint(error, notes);
      }
      const manifestLike =
        value !== null && typeof value === "object" && !Array.isArray(value) && "catalogs" in value;
      if (manifestLike || options.requireManifestJson) {
        const manifest = checkManifestShape(value, shown);
        return {
          manifest,
          sources: manifestToSources(manifest),
          sourceMap: options.locate
            ? locateManifest(text, shown, manifest)
            : unlocatedSourceMap(manifest, shown),
          notes,
          origin: "manifest",
        };
      }
    }
  }
  return compileKnowledgeBase(inputs, options);
}
