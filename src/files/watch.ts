/**
 * Watching a knowledge folder: when its files change, the knowledge base is read again, debounced, and the engine
 * updated: with an engine (which has `update`) and stable source versions, only the entries that changed are
 * upserted and the ones that disappeared removed, in one atomic update; otherwise the engine is rebuilt. While files
 * cannot be read or the new entries are invalid, the previous snapshot keeps serving.
 *
 * Every directory under a watched folder gets its own non-recursive `fs.watch`: recursive watching is native on
 * macOS and Windows only, and the directory list is refreshed after every reload so new subfolders are watched too.
 *
 * @module
 */
import { type Dirent, type FSWatcher, watch } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { basename, dirname, resolve, sep } from "node:path";
import type { KnowledgeEngineStatus, KnowledgeSource } from "../types/knowledge.js";
import { readKnowledgeBase } from "./compile.js";
import { KnowledgeCompileError } from "./errors.js";
import { type KnowledgeFileIssue, locateIssues, notesToIssues, sortIssues } from "./issues.js";
import { diffSources } from "./sourceDiff.js";
import type { KnowledgeCompileOptions } from "./types.js";

/** Default quiet time after the last file event before the knowledge base is read again. */
export const DEFAULT_WATCH_DEBOUNCE_MS = 250;

/**
 * What the watcher rebuilds: a {@link KnowledgeGroundingEngine} (or anything with its `rebuild`, and optionally its
 * `update`, which then receives only the entries that changed), or a function such as
 * `(sources) => neurolink.rebuildKnowledge(sources)`.
 */
export type KnowledgeRebuildTarget =
  | {
      rebuild(sources: KnowledgeSource[]): Promise<KnowledgeEngineStatus>;
      update?(changes: {
        upsert?: KnowledgeSource[];
        remove?: readonly string[];
      }): Promise<KnowledgeEngineStatus & { live: boolean; reason?: string }>;
    }
  | ((sources: KnowledgeSource[]) => Promise<KnowledgeEngineStatus>);

/** Options of {@link watchKnowledgeBase}. */
export type KnowledgeWatchOptions = Omit<KnowledgeCompileOptions, "onProgress"> & {
  /** Quiet time after the last file event before reloading, in milliseconds. Default 250. */
  debounceMs?: number;
  /** Whether the open watchers keep the process alive (as `fs.watch`'s `persistent`). Default true. */
  persistent?: boolean;
  /** Called after every reload attempt, successful or not. Exceptions it throws are ignored. */
  onReload?: (result: KnowledgeReloadResult) => void;
  /**
   * The sources the target serves now (what {@link loadKnowledgeBase} returned), so that the first change is
   * applied incrementally too. Without it, the first reload rebuilds and later ones are incremental.
   */
  sources?: readonly KnowledgeSource[];
};

/** The outcome of one reload. */
export type KnowledgeReloadResult = {
  /** A snapshot of the new files is serving. When false, the previous snapshot (if any) still is. */
  ok: boolean;
  /**
   * The compiler's notes and the new entries' validation issues, located at `file:line`; when the files could not
   * be read, the one error that stopped the read.
   */
  issues: KnowledgeFileIssue[];
  /** The engine's status after the rebuild; null when the files could not be read (the engine was not touched). */
  status: KnowledgeEngineStatus | null;
  /**
   * How the target was changed: `"update"` (only the changed entries, through the engine's `update`), `"rebuild"`
   * (everything), or `"none"` (the entries did not change). Absent when the files could not be read.
   */
  applied?: "update" | "rebuild" | "none";
  /** Why the files could not be read, when they could not. */
  error?: KnowledgeCompileError;
};

/** A running watch. */
export type KnowledgeBaseWatcher = {
  /** Reads the files and rebuilds now (also cancels a pending debounced reload). */
  reload(): Promise<KnowledgeReloadResult>;
  /** Stops watching: closes every file-system watcher and waits for a reload in progress. Idempotent. */
  close(): Promise<void>;
  /** Directories currently watched (absolute paths), for diagnostics. */
  readonly directories: readonly string[];
};

/** A file given directly belongs to the catalog its folder's `catalog.yaml` names, so that file matters too. */
const CATALOG_FILE_NAMES: ReadonlySet<string> = new Set(["catalog.yaml", "catalog.yml"]);

/** A directory to watch, and for file inputs the only names in it that matter. */
type WatchRoot = { directory: string; recursive: boolean; names?: Set<string> };

/** Editor noise: dot-files (swap files, `.#locks`) and backup files ending in `~`. */
function isIgnoredName(name: string): boolean {
  return name.startsWith(".") || name.endsWith("~");
}

/** Every directory under `directory` (itself included), skipping those the compiler skips. */
async function listDirectories(directory: string, into: Set<string>): Promise<void> {
  into.add(directory);
  let items: Dirent[];
  try {
    items = await readdir(directory, { withFileTypes: true });
  } catch {
    return; // Removed meanwhile: the reload reports it.
  }
  for (const item of items) {
    if (!item.isDirectory() || item.name.startsWith(".") || item.name === "node_modules") continue;
    await listDirectories(resolve(directory, item.name), into);
  }
}

function errorIssue(error: KnowledgeCompileError): KnowledgeFileIssue {
  return {
    level: "error",
    code: error.code,
    message: error.hint ? `${error.description} (${error.hint})` : error.description,
    ...(error.file !== undefined ? { file: error.file } : {}),
    ...(error.line !== undefined ? { line: error.line } : {}),
  };
}

/** The target's operations: `rebuild` always, `update` when the target is an engine that has it. */
type TargetOperations = {
  rebuild: (sources: KnowledgeSource[]) => Promise<KnowledgeEngineStatus>;
  update: Extract<KnowledgeRebuildTarget, { rebuild: unknown }>["update"] | undefined;
};

function targetOperations(target: KnowledgeRebuildTarget): TargetOperations {
  const rebuild =
    typeof target === "function"
      ? target
      : target !== null && typeof target === "object" && typeof target.rebuild === "function"
        ? (sources: KnowledgeSource[]) => target.rebuild(sources)
        : undefined;
  if (!rebuild) {
    throw new TypeError("watchKnowledgeBase: target must be an engine (with rebuild) or a rebuild function");
  }
  const update =
    typeof target === "object" && typeof target.update === "function"
      ? target.update.bind(target)
      : undefined;
  return { rebuild, update };
}

/** The directories to watch for the inputs; throws `not-found` for an input that does not exist. */
async function watchRoots(inputs: readonly string[], cwd: string): Promise<WatchRoot[]> {
  const roots: WatchRoot[] = [];
  for (const path of inputs) {
    const absolute = resolve(cwd, path);
    const info = await stat(absolute).catch(() => undefined);
    if (!info) {
      throw new KnowledgeCompileError("not-found", "no such file or directory", {
        file: path,
        hint: "check the path; it is resolved against the current directory",
      });
    }
    // A file is watched through its folder: editors save by writing a new file and renaming it over the old one,
    // which ends a watch on the file itself.
    if (info.isDirectory()) roots.push({ directory: absolute, recursive: true });
    else roots.push({ directory: dirname(absolute), recursive: false, names: new Set([basename(absolute)]) });
  }
  return roots;
}

/**
 * One reload's work: reads the files, then applies them to the target (the changed entries through `update` when
 * the target has it and `served` is known, else a rebuild), and locates the issues. `sources` is what the target
 * serves afterwards when the reload succeeded (the next reload is compared with it), otherwise undefined;
 * `abandoned` when the watch was closed while the files were read (the target was not touched).
 */
async function readAndApply(
  inputs: readonly string[],
  readOptions: Omit<KnowledgeCompileOptions, "onProgress">,
  { rebuild, update }: TargetOperations,
  served: readonly KnowledgeSource[] | undefined,
  isClosed: () => boolean,
): Promise<{ result: KnowledgeReloadResult; sources?: readonly KnowledgeSource[]; abandoned?: true }> {
  try {
    const loaded = await readKnowledgeBase(inputs, readOptions);
    if (isClosed()) return { result: { ok: false, issues: [], status: null }, abandoned: true };
    const changes = update && served ? diffSources(served, loaded.sources) : null;
    let status: KnowledgeEngineStatus;
    let applied: KnowledgeReloadResult["applied"] = "rebuild";
    let issuePaths = (path: string | undefined) => path;
    if (changes && changes.upsert.length === 0 && changes.remove.length === 0) {
      applied = "none";
      status = { ...(await update!({})), validationIssues: [] };
    } else if (changes) {
      const outcome = await update!({ upsert: changes.upsert, remove: changes.remove });
      if (outcome.reason === "index-not-ready") status = await rebuild(loaded.sources);
      else {
        applied = "update";
        status = outcome;
        issuePaths = changes.originalPath;
      }
    } else status = await rebuild(loaded.sources);
    const validation = locateIssues(
      status.validationIssues.map((found) => {
        const path = issuePaths(found.path);
        return path === undefined ? found : { ...found, path };
      }),
      loaded,
    );
    const ok = status.lastError === null && !validation.some((issue) => issue.level === "error");
    const result: KnowledgeReloadResult = {
      ok,
      issues: sortIssues([...notesToIssues(loaded.notes), ...validation]),
      status,
      applied,
    };
    return ok ? { result, sources: loaded.sources } : { result };
  } catch (caught) {
    const error = KnowledgeCompileError.isInstance(caught)
      ? caught
      : new KnowledgeCompileError("unreadable", caught instanceof Error ? caught.message : String(caught));
    return { result: { ok: false, issues: [errorIssue(error)], status: null, error } };
  }
}

/**
 * Watches a knowledge folder (or entry files, or a manifest file) and updates `target` when it changes: events
 * are debounced by `debounceMs`, then the files are read again. When `target` is an engine and the sources keep
 * their ids and versions (pass a fixed `contentVersion`: the default one is a hash of all the content, so any edit
 * changes every entry's citation), the entries that changed are compared with the last read (or `sources`) and
 * applied with `update` (`applied: "update"`, a few milliseconds at 100,000 entries); otherwise `rebuild(sources)`
 * is called (`applied: "rebuild"`). While files cannot
 * be read (malformed YAML, a missing file), the engine is not touched; when the new entries are invalid, the engine
 * keeps its previous snapshot (see `KnowledgeGroundingEngine.rebuild`). Either way `onReload` receives the issues.
 *
 * It does not read the files when it starts: load them first with {@link loadKnowledgeBase}, then watch. Resolves
 * once the watchers are installed; throws {@link KnowledgeCompileError} (`not-found`) when an input does not exist.
 *
 * @example
 * ```ts
 * const { sources } = await loadKnowledgeBase("knowledge");
 * const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
 * const watcher = await watchKnowledgeBase("knowledge", engine, {
 *   onReload: ({ ok, issues }) => { if (!ok) console.warn(issues); },
 * });
 * // ... on shutdown:
 * await watcher.close();
 * ```
 */
export async function watchKnowledgeBase(
  input: string | readonly string[],
  target: KnowledgeRebuildTarget,
  options: KnowledgeWatchOptions = {},
): Promise<KnowledgeBaseWatcher> {
  const {
    debounceMs = DEFAULT_WATCH_DEBOUNCE_MS,
    persistent = true,
    onReload,
    sources: initialSources,
    ...readOptions
  } = options;
  if (!Number.isFinite(debounceMs) || debounceMs < 0) {
    throw new RangeError(`watchKnowledgeBase: debounceMs must be a non-negative number (got ${debounceMs})`);
  }
  const { rebuild, update } = targetOperations(target);
  /** The sources the target serves, as last read (what the next read is compared with). */
  let served: readonly KnowledgeSource[] | undefined = initialSources;
  const inputs = typeof input === "string" ? [input] : [...input];
  const cwd = readOptions.cwd ?? process.cwd();

  const roots = await watchRoots(inputs, cwd);

  const watchers = new Map<string, FSWatcher>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<KnowledgeReloadResult> | undefined;
  let again = false;
  let closed = false;

  const schedule = () => {
    if (closed) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (running) again = true;
      else void reload();
    }, debounceMs);
    if (!persistent) timer.unref();
  };

  const relevant = (directory: string, name: string | null): boolean => {
    if (name === null) return true; // Some platforms do not say which file changed.
    if (isIgnoredName(basename(name))) return false;
    return roots.some((root) =>
      root.names
        ? directory === root.directory && (root.names.has(name) || CATALOG_FILE_NAMES.has(name))
        : directory === root.directory || directory.startsWith(`${root.directory}${sep}`),
    );
  };

  const watchDirectory = (directory: string) => {
    if (closed || watchers.has(directory)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(directory, { persistent }, (_event, name) => {
        if (relevant(directory, typeof name === "string" ? name : null)) schedule();
      });
    } catch {
      return; // Removed between listing and watching: the parent's event schedules the reload.
    }
    // A watched directory that is removed (or becomes unreadable) errors on some platforms: drop it and reload.
    watcher.on("error", () => {
      watcher.close();
      watchers.delete(directory);
      schedule();
    });
    watchers.set(directory, watcher);
  };

  /** Brings the watcher set in line with the directories that exist now; true when new ones were added. */
  const refreshDirectories = async (): Promise<boolean> => {
    const wanted = new Set<string>();
    for (const root of roots) {
      if (root.recursive) await listDirectories(root.directory, wanted);
      else wanted.add(root.directory);
    }
    if (closed) return false;
    for (const [directory, watcher] of watchers) {
      if (!wanted.has(directory)) {
        watcher.close();
        watchers.delete(directory);
      }
    }
    let added = false;
    for (const directory of wanted) {
      if (!watchers.has(directory)) {
        watchDirectory(directory);
        added ||= watchers.has(directory);
      }
    }
    return added;
  };

  const reloadOnce = async (): Promise<KnowledgeReloadResult> => {
    const { result, sources, abandoned } = await readAndApply(
      inputs,
      readOptions,
      { rebuild, update },
      served,
      () => closed,
    );
    if (abandoned) return result;
    if (sources) served = sources;
    // A folder created since the last listing may have received files before its watcher existed: read again.
    if (await refreshDirectories()) again = true;
    try {
      onReload?.(result);
    } catch {
      // A listener's failure must not stop the watch.
    }
    return result;
  };

  const reload = (): Promise<KnowledgeReloadResult> => {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let result = await reloadOnce();
      while (again && !closed) {
        again = false;
        result = await reloadOnce();
      }
      return result;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  await refreshDirectories();

  return {
    reload: () =>
      closed
        ? Promise.resolve({ ok: false, issues: [], status: null } satisfies KnowledgeReloadResult)
        : reload(),
    async close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
      await running?.catch(() => undefined);
    },
    get directories() {
      return [...watchers.keys()];
    },
  };
}
