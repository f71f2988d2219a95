import type { KnowledgeManifest } from "../types/knowledge.js";
import { readKnowledgeBase } from "./compile.js";
import { type KnowledgeFileIssue, knowledgeBaseIssues } from "./issues.js";
import type { KnowledgeCompileOptions, LoadedKnowledgeBase } from "./types.js";

export { KnowledgeCompileError, type KnowledgeCompileErrorCode } from "./errors.js";
export { MAX_ENTRY_FILE_BYTES, MAX_MANIFEST_FILE_BYTES } from "./fileText.js";
export { type KnowledgeFileIssue, lintKnowledgeBase } from "./issues.js";
export { serializeManifest } from "./manifest.js";
export type {
  KnowledgeCatalogLocation,
  KnowledgeCompileNote,
  KnowledgeCompileOptions,
  KnowledgeCompileProgress,
  KnowledgeEntryLocation,
  KnowledgeSourceMap,
  LoadedKnowledgeBase,
} from "./types.js";
export {
  DEFAULT_WATCH_DEBOUNCE_MS,
  type KnowledgeBaseWatcher,
  type KnowledgeRebuildTarget,
  type KnowledgeReloadResult,
  type KnowledgeWatchOptions,
  watchKnowledgeBase,
} from "./watch.js";

/** A knowledge base read from files and validated: engine sources plus every issue, located at `file:line`. */
export type KnowledgeBaseLoadResult = LoadedKnowledgeBase & {
  /**
   * No errors: every file was compiled and the entries are valid, so `sources` can be served (an engine given them
   * builds a snapshot). False when a file could not be compiled (its entries are missing from `sources`) or when
   * validation found an error.
   */
  ok: boolean;
  /**
   * Every problem found, sorted by file and line: files that could not be compiled (malformed YAML or JSON, a
   * Markdown file without front matter, a bad `catalog.yaml`, a file over the size limit; level `"error"`, with
   * the compile error's `code` and `hint`), the compiler's notes (ignored files, unknown fields, damaged encodings)
   * and the engine's validation issues (errors and warnings), located at the file and line that caused them.
   */
  issues: KnowledgeFileIssue[];
};

/**
 * Reads and validates a knowledge base: a folder of authored entries, entry files, a manifest JSON file, a BEIR
 * folder (holding `corpus.jsonl`), or a manifest object. The result's `sources` go straight into
 * `new KnowledgeGroundingEngine({ enabled: true, sources })`; `issues` says what is wrong, where.
 *
 * Every problem of a folder or of entry files is an issue, all of them in one call (what `lexground validate`
 * reports): a file that cannot be compiled is an `"error"` issue at its `file:line` and the other files are still
 * read, so `ok` is false and `sources` lacks that file's entries. Pass `collectFileErrors: false` to throw at the
 * first such file instead. Throws {@link KnowledgeCompileError} (with `code`, `file` and `line`) only when there is
 * nothing to read: a missing path (`not-found`), a folder without entry files (`no-entries`), or a manifest JSON
 * file or BEIR corpus that cannot be parsed (the one file is the whole knowledge base).
 */
export async function loadKnowledgeBase(
  input: string | readonly string[] | KnowledgeManifest,
  options: KnowledgeCompileOptions = {},
): Promise<KnowledgeBaseLoadResult> {
  const loaded = await readKnowledgeBase(input, {
    ...options,
    collectFileErrors: options.collectFileErrors !== false,
  });
  const { ok, issues } = knowledgeBaseIssues(loaded);
  const fileErrors = loaded.notes.some((note) => note.level === "error");
  return { ...loaded, ok: ok && !fileErrors, issues };
}
