/**
 * What the knowledge compiler takes and gives: its options, the manifest's source map (where each entry came
 * from), the notes it writes, and the loaded knowledge base.
 */
import type { KNOWLEDGE_ENTRY_FIELDS } from "../knowledge/defaults.js";
import type { KnowledgeManifest, KnowledgeSource } from "../types/knowledge.js";
import type { compileKnowledgeBase, readKnowledgeBase } from "./compile.js";

/** A field of an authored entry. */
export type EntryFieldName = (typeof KNOWLEDGE_ENTRY_FIELDS)[number];

/** Where one entry came from: its file, the line it starts on, and the line of each field that was written. */
export type KnowledgeEntryLocation = {
  /** Display path (relative to the working directory when inside it, with `/` separators). */
  file: string;
  /** 1-based line where the entry starts (the front matter's first key, or the list item). */
  line: number;
  /** 1-based line of each authored field; a Markdown body maps to the line after the front matter. */
  fields: Partial<Record<EntryFieldName, number>>;
};

/** Locations of one catalog's entries, index-aligned with the manifest catalog's `entries`. */
export type KnowledgeCatalogLocation = {
  id: string;
  /** Display path of the `catalog.yaml` that named the catalog, if any. */
  file?: string;
  /** Human-readable name from `catalog.yaml`, if any (not part of the manifest). */
  name?: string;
  entries: KnowledgeEntryLocation[];
};

/** Source map of a compiled manifest: `catalogs[i].entries[j]` locates `manifest.catalogs[i].entries[j]`. */
export type KnowledgeSourceMap = {
  catalogs: KnowledgeCatalogLocation[];
};

/**
 * Something the compiler noticed and dropped or ignored. Level `"error"` appears only with
 * {@link KnowledgeCompileOptions.collectFileErrors}: a file that could not be compiled (its code is the
 * {@link KnowledgeCompileErrorCode} it would have thrown) and contributed no entries.
 */
export type KnowledgeCompileNote = {
  level: "error" | "warning" | "info";
  /** `unknown-field`, `ignored-file`, `body-conflict`, `unknown-catalog-field`, or a compile error's code. */
  code: string;
  message: string;
  file?: string;
  line?: number;
  entryId?: string;
  field?: string;
  /** 1-based column on `line` (JSON syntax errors). */
  column?: number;
  /** What the author can do about it, when the compiler knows. */
  hint?: string;
};

/** Progress of a long compile, reported per file (or per 1000 corpus lines). */
export type KnowledgeCompileProgress = {
  phase: "read" | "corpus";
  done: number;
  /** Known total, or undefined while streaming a corpus. */
  total?: number;
};

/** Options of {@link compileKnowledgeBase} and {@link readKnowledgeBase}. */
export type KnowledgeCompileOptions = {
  /** Directory relative paths are resolved against (and displayed relative to). Default `process.cwd()`. */
  cwd?: string;
  /** Content version to write; default: the first 12 hex characters of the SHA-256 of the canonical content. */
  contentVersion?: string;
  /** ISO timestamp to write; default: `SOURCE_DATE_EPOCH` from `env`, else the newest input file's mtime. */
  generatedAt?: string;
  /** Environment consulted for `SOURCE_DATE_EPOCH`. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Called as files are read; used by the CLI's progress line. */
  onProgress?: (progress: KnowledgeCompileProgress) => void;
  /** For manifest files: also compute line numbers (costs a second parse). Default false. */
  locate?: boolean;
  /**
   * Folders and entry files: a file that cannot be compiled (malformed YAML or JSON, a Markdown file without front
   * matter, a bad `catalog.yaml`, a file over the size limit) becomes an `"error"` note at its `file:line` and the
   * other files are still read, instead of the first one throwing. The result then lacks that file's entries: use
   * it to report, not to serve. Default false here; `loadKnowledgeBase` (`lexground/files`) and `lexground validate`
   * set it, to report every problem in one run.
   */
  collectFileErrors?: boolean;
  /**
   * A single `.json` file must be a manifest (what the CLI's `--kb` takes): one without `catalogs` is a
   * `bad-manifest` error saying it is not a knowledge manifest, instead of being compiled as an entry file.
   */
  requireManifestJson?: boolean;
};

/** The outcome of compiling or loading a knowledge base. */
export type LoadedKnowledgeBase = {
  manifest: KnowledgeManifest;
  /** The manifest's catalogs as engine sources (`version` = `contentVersion`). */
  sources: KnowledgeSource[];
  sourceMap: KnowledgeSourceMap;
  notes: KnowledgeCompileNote[];
  /** What the input was. */
  origin: "folder" | "files" | "manifest" | "beir" | "object" | "artifact";
};

export type PendingEntry = { entry: unknown; location: KnowledgeEntryLocation; order: number };

export type PendingCatalog = {
  id: string;
  name?: string;
  catalogFile?: string;
  directory: string;
  files: string[];
  entries: PendingEntry[];
};
