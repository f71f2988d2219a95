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
 * @module
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { type FileHandle, open, readdir, stat } from "node:fs/promises";
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { createInterface } from "node:readline";
import {
  type Document,
  isAlias,
  isCollection,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  visit,
  type Node as YamlNode,
} from "yaml";
import { manifestToSources } from "../index.js";
import { KNOWLEDGE_ENTRY_FIELDS } from "../knowledge/defaults.js";
import { compareCodeUnits } from "../knowledge/knowledgeIndex.js";
import type {
  KnowledgeEntryInput,
  KnowledgeManifest,
  KnowledgeManifestCatalog,
  KnowledgeSource,
} from "../types/knowledge.js";
import { KnowledgeCompileError } from "./errors.js";
import { locateJsonSyntaxError } from "./json.js";

/** Schema version written into every compiled manifest. */
export const MANIFEST_SCHEMA_VERSION = "1";

/** A field of an authored entry. */
export type EntryFieldName = (typeof KNOWLEDGE_ENTRY_FIELDS)[number];

/** Entry fields (in the order they are written to a manifest). Anything else in an entry file is reported. */
const ENTRY_FIELDS: ReadonlySet<string> = new Set(KNOWLEDGE_ENTRY_FIELDS);
const MARKDOWN_EXTENSIONS = new Set([".md", ".markdown"]);
const DATA_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);
const CATALOG_FILE_NAMES = ["catalog.yaml", "catalog.yml"];
/** Citation markers are `[KB:id@version]`, so a version must not contain characters that would break them. */
const CONTENT_VERSION_PATTERN = /^[^\s[\]@]+$/;
/** Entry files read at once: enough to overlap file-system latency, few enough to stay far below fd limits. */
const READ_CONCURRENCY = 16;
/** A BEIR summary is the first sentence of the text, capped so one run-on "sentence" stays a summary. */
const BEIR_SUMMARY_MAX_CHARS = 600;

/**
 * Largest entry or catalog file read (Markdown, YAML, JSON): 64 MiB. A Markdown entry at the body limit
 * (1,000,000 characters) is at most 4 MB; a larger file is refused from its size alone, before it is read.
 */
export const MAX_ENTRY_FILE_BYTES = 64 * 1024 * 1024;
/** Largest manifest JSON read (`--kb kb.json`): 256 MiB, refused from its size alone, before it is read. */
export const MAX_MANIFEST_FILE_BYTES = 256 * 1024 * 1024;
/**
 * Most YAML anchors and aliases in one file. The YAML library resolves each alias by scanning the anchors and
 * aliases before it, a quadratic cost: 1,000 take about 40 ms, 10,000 about 4 s.
 */
export const MAX_YAML_ANCHORS_AND_ALIASES = 1_000;
/**
 * Most nodes a YAML document may have once its aliases are expanded: this many, or ten times its written nodes
 * if that is more. Anything beyond is an alias bomb ("billion laughs"): a few lines that expand to billions of
 * values in the manifest.
 */
export const MAX_YAML_EXPANDED_NODES = 1_000_000;
/**
 * Codes of the compiler's notes that say a file's content is probably damaged (not valid UTF-8, binary). Every
 * command prints them, not only `validate`, because the text read from such a file is not what its author wrote.
 */
export const CONTENT_WARNING_CODES: ReadonlySet<string> = new Set(["invalid-utf8", "binary-content"]);
/** First read of a file whose size is unknown (not a regular file). */
const READ_CHUNK_BYTES = 64 * 1024;
/** Strict UTF-8 decoding; the byte order mark is kept, as `readFile(path, "utf8")` keeps it. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

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

type PendingEntry = { entry: unknown; location: KnowledgeEntryLocation; order: number };
type PendingCatalog = {
  id: string;
  name?: string;
  catalogFile?: string;
  directory: string;
  files: string[];
  entries: PendingEntry[];
};

/** Display form of a path: relative to `cwd` when inside it, `/`-separated. */
function displayPath(absolute: string, cwd: string): string {
  const relativePath = relative(cwd, absolute);
  const shown =
    relativePath && !relativePath.startsWith("..") && !isAbsolute(relativePath) ? relativePath : absolute;
  return shown.split(sep).join("/");
}

function isEntryFileName(name: string): boolean {
  if (name.startsWith(".")) return false;
  const lower = name.toLowerCase();
  if (CATALOG_FILE_NAMES.includes(lower)) return false;
  if (lower === "readme.md" || lower === "readme.markdown") return false;
  const extension = extname(lower);
  return MARKDOWN_EXTENSIONS.has(extension) || DATA_EXTENSIONS.has(extension);
}

async function findCatalogFile(directory: string): Promise<string | undefined> {
  const names = await readdir(directory).catch(() => [] as string[]);
  for (const candidate of CATALOG_FILE_NAMES)
    if (names.includes(candidate)) return join(directory, candidate);
  return undefined;
}

/** Sorted directory listing (code-unit order) so every walk, and therefore every output, is deterministic. */
async function listDirectory(directory: string) {
  const items = await readdir(directory, { withFileTypes: true });
  return items
    .filter((item) => !item.name.startsWith(".") && item.name !== "node_modules")
    .sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
}

type WalkResult = { catalogDirectories: string[]; looseFiles: string[] };

/** Walks `directory`, stopping at nested catalog folders (which are returned instead of descended into). */
async function walk(directory: string, isRoot: boolean): Promise<WalkResult> {
  const result: WalkResult = { catalogDirectories: [], looseFiles: [] };
  if (!isRoot && (await findCatalogFile(directory))) {
    result.catalogDirectories.push(directory);
    return result;
  }
  for (const item of await listDirectory(directory)) {
    const path = join(directory, item.name);
    if (item.isDirectory()) {
      const nested = await walk(path, false);
      result.catalogDirectories.push(...nested.catalogDirectories);
      result.looseFiles.push(...nested.looseFiles);
    } else if ((item.isFile() || item.isSymbolicLink()) && isEntryFileName(item.name)) {
      result.looseFiles.push(path);
    }
  }
  return result;
}

function lineOf(lineCounter: LineCounter, offset: number | undefined, lineOffset: number): number {
  return lineCounter.linePos(offset ?? 0).line + lineOffset;
}

/** Parses YAML (or JSON, which is YAML) keeping positions; malformed input is a typed error at its line. */
function parseYaml(text: string, file: string, lineOffset: number) {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const [firstError] = document.errors;
  if (firstError) {
    throw new KnowledgeCompileError("yaml-syntax", `malformed YAML: ${firstError.message}`, {
      file,
      line: lineOf(lineCounter, firstError.pos[0], lineOffset),
      hint: "fix the YAML syntax (indentation, quoting, unique keys); quote values that contain ': ' or start with '['",
    });
  }
  return { document, lineCounter };
}

/** Written and alias-expanded node counts of a YAML document, and the alias where expansion passes `limit`. */
type YamlExpansion = {
  anchorsAndAliases: number;
  written: number;
  aliasPastLimit?: YamlNode;
  cycle?: YamlNode;
  /** An alias with no anchor of its name before it. */
  unresolved?: YamlNode;
};

/**
 * Counts a document's nodes as written and as expanded (every alias replaced by a copy of its anchor's node), in
 * document order, stopping at the first alias that names no anchor before it, that takes the expanded count past
 * the limit, or that refers to a node containing it (a cycle, whose expansion never ends). Linear in the written
 * document.
 */
function measureYaml(document: Document): YamlExpansion {
  let written = 0;
  let anchorsAndAliases = 0;
  visit(document, {
    Node: (_key, node) => {
      written++;
      if (isAlias(node) || node.anchor) anchorsAndAliases++;
    },
  });
  const measured: YamlExpansion = { anchorsAndAliases, written };
  if (anchorsAndAliases === 0 || anchorsAndAliases > MAX_YAML_ANCHORS_AND_ALIASES) return measured;
  const limit = Math.max(MAX_YAML_EXPANDED_NODES, 10 * written);
  // An alias refers to the last node before it with that anchor (the YAML library resolves it the same way).
  const anchored = new Map<string, YamlNode>();
  const sizes = new Map<YamlNode, number>();
  const open = new Set<YamlNode>();
  let expanded = 0;
  const stop = new Error("stop");
  const count = (item: unknown): number => {
    if (isPair(item)) return count(item.key) + count(item.value);
    if (!isNode(item)) return 0;
    if (isAlias(item)) {
      const target = anchored.get(item.source);
      if (target === undefined) {
        measured.unresolved = item;
        throw stop;
      }
      if (open.has(target)) {
        measured.cycle = item;
        throw stop;
      }
      const size = sizes.get(target) ?? 1;
      expanded += size - 1;
      if (expanded + written > limit) {
        measured.aliasPastLimit = item;
        throw stop;
      }
      return size;
    }
    if (item.anchor) anchored.set(item.anchor, item);
    let size = 1;
    if (isCollection(item)) {
      open.add(item);
      for (const child of item.items) size += count(child);
      open.delete(item);
    }
    sizes.set(item, size);
    return size;
  };
  try {
    count(document.contents);
  } catch (error) {
    if (error !== stop) throw error;
  }
  return measured;
}

/**
 * The JavaScript value of a parsed YAML document. Alias bombs, cyclic aliases and too many anchors are refused
 * with an error at the offending line (the YAML library's own alias limit, a bare ReferenceError naming no file,
 * is replaced by this exact count, which also accepts an ordinary alias used in hundreds of entries).
 */
function yamlValue(document: Document, lineCounter: LineCounter, file: string, lineOffset: number): unknown {
  const aliasError = (description: string, node: YamlNode | undefined, hint: string) =>
    new KnowledgeCompileError("yaml-aliases", description, {
      file,
      ...(node?.range ? { line: lineOf(lineCounter, node.range[0], lineOffset) } : {}),
      hint,
    });
  let measured: YamlExpansion;
  try {
    measured = measureYaml(document);
  } catch (error) {
    // Only a nesting too deep for the stack gets here.
    throw new KnowledgeCompileError(
      "yaml-syntax",
      `cannot read the YAML value: ${error instanceof Error ? error.message : String(error)}`,
      { file, hint: "nest lists and mappings less deeply" },
    );
  }
  if (measured.anchorsAndAliases > MAX_YAML_ANCHORS_AND_ALIASES) {
    let first: YamlNode | undefined;
    visit(document, {
      Node: (_key, node) => {
        if (isAlias(node) || node.anchor) {
          first = node;
          return visit.BREAK;
        }
        return undefined;
      },
    });
    throw aliasError(
      `${measured.anchorsAndAliases} YAML anchors and aliases; the limit is ${MAX_YAML_ANCHORS_AND_ALIASES} per file`,
      first,
      "write the values out instead of using &anchors and *aliases, or split the file",
    );
  }
  if (measured.unresolved) {
    throw aliasError(
      `YAML alias *${isAlias(measured.unresolved) ? measured.unresolved.source : ""} has no anchor of that name before it`,
      measured.unresolved,
      "define the anchor (&name) before its first alias (*name), or quote a value that starts with '*'",
    );
  }
  if (measured.cycle) {
    throw aliasError(
      `YAML alias *${isAlias(measured.cycle) ? measured.cycle.source : ""} refers to a node that contains it, so it never ends`,
      measured.cycle,
      "an alias may only repeat a node defined before it, outside it",
    );
  }
  if (measured.aliasPastLimit) {
    throw aliasError(
      `YAML aliases expand past ${Math.max(MAX_YAML_EXPANDED_NODES, 10 * measured.written).toLocaleString("en-US")} values at this alias (an alias bomb, "billion laughs")`,
      measured.aliasPastLimit,
      "aliases that repeat other aliases multiply; write the values out",
    );
  }
  try {
    // The expansion is bounded above, so the library's own alias counter (100 uses of an anchor) is not needed.
    return document.toJS({ maxAliasCount: -1 });
  } catch (error) {
    throw new KnowledgeCompileError(
      "yaml-syntax",
      `cannot read the YAML value: ${error instanceof Error ? error.message : String(error)}`,
      { file },
    );
  }
}

function parseJsonStrict(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw jsonSyntaxError(text, error, file);
  }
}

/** A `json-syntax` error at the line and column where `text` stops being JSON. */
export function jsonSyntaxError(
  text: string,
  error: unknown,
  file: string,
  hint = "fix the JSON syntax there: a missing comma or quote, a trailing comma, a comment, an unquoted key",
): KnowledgeCompileError {
  const { line, column, reason } = locateJsonSyntaxError(text, error);
  return new KnowledgeCompileError("json-syntax", `malformed JSON: ${reason}`, { file, line, column, hint });
}

type EntryNodeContext = {
  file: string;
  lineCounter: LineCounter;
  lineOffset: number;
  notes: KnowledgeCompileNote[];
};

/**
 * Keeps the known fields of one authored entry in the manifest's key order and records the line of each. Values
 * are passed through untouched: type checking is the engine's validation, which reports issues with paths that
 * the source map turns into `file:line`.
 */
function shapeEntry(
  value: unknown,
  node: YamlNode | null | undefined,
  context: EntryNodeContext,
  defaults: { id?: string; body?: string; bodyLine?: number },
): { entry: unknown; location: KnowledgeEntryLocation } {
  const startLine = node?.range ? lineOf(context.lineCounter, node.range[0], context.lineOffset) : 1;
  const location: KnowledgeEntryLocation = { file: context.file, line: startLine, fields: {} };
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { entry: value, location };
  }
  const record = value as Record<string, unknown>;
  const keyLines = new Map<string, number>();
  if (node && isMap(node)) {
    for (const pair of node.items) {
      if (isScalar(pair.key) && pair.key.range) {
        keyLines.set(
          String(pair.key.value),
          lineOf(context.lineCounter, pair.key.range[0], context.lineOffset),
        );
      }
    }
  }
  const entryId = typeof record.id === "string" ? record.id : defaults.id;
  for (const key of Object.keys(record)) {
    if (!ENTRY_FIELDS.has(key)) {
      context.notes.push({
        level: "warning",
        code: "unknown-field",
        message: `unknown field "${key}" is ignored (known fields: ${KNOWLEDGE_ENTRY_FIELDS.join(", ")})`,
        file: context.file,
        ...(keyLines.has(key) ? { line: keyLines.get(key)! } : {}),
        ...(entryId !== undefined ? { entryId } : {}),
        field: key,
      });
    }
  }
  const shaped: Record<string, unknown> = {};
  for (const field of KNOWLEDGE_ENTRY_FIELDS) {
    let fieldValue = Object.hasOwn(record, field) ? record[field] : undefined;
    let fieldLine = keyLines.get(field);
    if (field === "id" && fieldValue === undefined && defaults.id !== undefined) fieldValue = defaults.id;
    if (field === "body" && defaults.body !== undefined && defaults.body !== "") {
      if (fieldValue !== undefined && fieldValue !== defaults.body) {
        context.notes.push({
          level: "warning",
          code: "body-conflict",
          message: "both a front-matter body and a Markdown body are present; the Markdown body is used",
          file: context.file,
          ...(fieldLine !== undefined ? { line: fieldLine } : {}),
          ...(entryId !== undefined ? { entryId } : {}),
          field: "body",
        });
      }
      fieldValue = defaults.body;
      fieldLine = defaults.bodyLine;
    }
    if (fieldValue === undefined) continue;
    shaped[field] = fieldValue;
    if (fieldLine !== undefined) location.fields[field] = fieldLine;
  }
  return { entry: shaped, location };
}

/** Splits a Markdown file into front matter (with its first line number) and body (with its first line number). */
function splitFrontMatter(text: string, file: string) {
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines[0]?.trimEnd() !== "---") {
    throw new KnowledgeCompileError(
      "missing-front-matter",
      "no YAML front matter (the file must start with ---)",
      {
        file,
        line: 1,
        hint: "start the file with a '---' line, the entry's fields (id, title, summary, domain, integrations), and a closing '---' line",
      },
    );
  }
  let closing = -1;
  for (let index = 1; index < lines.length; index++) {
    const trimmed = lines[index]!.trimEnd();
    if (trimmed === "---" || trimmed === "...") {
      closing = index;
      break;
    }
  }
  if (closing < 0) {
    throw new KnowledgeCompileError("unclosed-front-matter", "front matter is not closed", {
      file,
      line: 1,
      hint: "add a '---' line after the last front-matter field",
    });
  }
  const frontMatter = lines.slice(1, closing).join("\n");
  const bodyLines = lines.slice(closing + 1);
  let firstBodyLine = 0;
  while (firstBodyLine < bodyLines.length && bodyLines[firstBodyLine]!.trim() === "") firstBodyLine++;
  const body = bodyLines.slice(firstBodyLine).join("\n").trimEnd();
  // Line numbers are 1-based: the front matter's first line is line 2; the body starts after the closing line.
  return { frontMatter, frontMatterLineOffset: 1, body, bodyLine: closing + 2 + firstBodyLine };
}

function readError(error: unknown, file: string): KnowledgeCompileError {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") {
    return new KnowledgeCompileError("not-found", "no such file or directory", {
      file,
      hint: "check the path; it is resolved against the current directory",
    });
  }
  return new KnowledgeCompileError("unreadable", `cannot read: ${code ?? String(error)}`, { file });
}

function tooLarge(file: string, bytes: number, limit: number): KnowledgeCompileError {
  const mebibytes = (count: number) =>
    `${(count / (1024 * 1024)).toFixed(count % (1024 * 1024) === 0 ? 0 : 1)} MiB`;
  return new KnowledgeCompileError(
    "file-too-large",
    `${bytes} bytes (${mebibytes(bytes)}); the limit is ${mebibytes(limit)}, so it was not read`,
    { file, hint: "split it into smaller files, or check that it is the file you meant" },
  );
}

/** Reads at most `limit` bytes from an open file; more is an error (a file that grew, a device without end). */
async function readBounded(handle: FileHandle, knownSize: number | undefined, limit: number, file: string) {
  const chunks: Buffer[] = [];
  let total = 0;
  let next = knownSize !== undefined ? knownSize + 1 : READ_CHUNK_BYTES;
  for (;;) {
    const buffer = Buffer.allocUnsafe(Math.min(next, limit + 1 - total));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
    if (total > limit) throw tooLarge(file, total, limit);
    next = READ_CHUNK_BYTES;
  }
  return Buffer.concat(chunks, total);
}

function lineAtByte(bytes: Uint8Array, offset: number): number {
  let line = 1;
  for (let index = 0; index < offset; index++) if (bytes[index] === 0x0a) line++;
  return line;
}

/** Offset of the first byte that is not valid UTF-8, given the bytes and their lenient decoding. */
function firstInvalidUtf8Byte(bytes: Uint8Array, text: string): number {
  let offset = 0;
  for (const character of text) {
    const codePoint = character.codePointAt(0)!;
    // Before the first invalid byte every code point came from its own bytes, so offsets are exact up to there.
    if (
      codePoint === 0xfffd &&
      !(bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd)
    ) {
      return offset;
    }
    offset += codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
  }
  return 0;
}

/**
 * Decodes a file's bytes as UTF-8. Invalid UTF-8 (replaced by U+FFFD, as before) and NUL bytes (a binary file)
 * are reported as warnings naming the file and line; the text is still used, so the run continues.
 */
function decodeSource(bytes: Buffer, file: string, notes: KnowledgeCompileNote[]): string {
  let text: string;
  try {
    text = STRICT_UTF8.decode(bytes);
  } catch {
    text = bytes.toString("utf8");
    notes.push({
      level: "warning",
      code: "invalid-utf8",
      message: "not valid UTF-8 (saved in another encoding?); the invalid bytes were read as U+FFFD",
      file,
      line: lineAtByte(bytes, firstInvalidUtf8Byte(bytes, text)),
    });
  }
  const nul = bytes.indexOf(0);
  if (nul >= 0) {
    notes.push({
      level: "warning",
      code: "binary-content",
      message: "contains NUL bytes: binary data, not text (a UTF-16 file, an image, a compressed file?)",
      file,
      line: lineAtByte(bytes, nul),
    });
  }
  return text;
}

/**
 * Text and modification time through one open file handle. The size is checked (fstat) before anything is read,
 * and the read stops at `limit` bytes whatever the file claims; encoding problems become warnings in `notes`.
 */
async function readSource(
  path: string,
  file: string,
  limit: number,
  notes: KnowledgeCompileNote[],
): Promise<{ text: string; mtimeMs: number }> {
  let handle: FileHandle | undefined;
  let bytes: Buffer;
  let mtimeMs: number;
  try {
    handle = await open(path, "r");
    const info = await handle.stat();
    if (info.isFile() && info.size > limit) throw tooLarge(file, info.size, limit);
    bytes = await readBounded(handle, info.isFile() ? info.size : undefined, limit, file);
    mtimeMs = info.mtimeMs;
  } catch (error) {
    throw KnowledgeCompileError.isInstance(error) ? error : readError(error, file);
  } finally {
    await handle?.close();
  }
  return { text: decodeSource(bytes, file, notes), mtimeMs };
}

/** An encoding warning's text, added to the hint of an error in the same file (which discards the notes). */
function withEncodingHint(error: unknown, notes: readonly KnowledgeCompileNote[]): unknown {
  const encoding = notes.filter((note) => CONTENT_WARNING_CODES.has(note.code));
  if (!KnowledgeCompileError.isInstance(error) || encoding.length === 0) return error;
  const also = encoding.map((note) => `line ${note.line}: ${note.message}`).join("; ");
  return error.withHint(`${error.hint ? `${error.hint}. ` : ""}The file may not be text: ${also}`);
}

function compileMarkdownText(text: string, path: string, file: string, notes: KnowledgeCompileNote[]) {
  const { frontMatter, frontMatterLineOffset, body, bodyLine } = splitFrontMatter(text, file);
  const { document, lineCounter } = parseYaml(frontMatter, file, frontMatterLineOffset);
  const value =
    document.contents === null ? {} : yamlValue(document, lineCounter, file, frontMatterLineOffset);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new KnowledgeCompileError(
      "bad-front-matter",
      "front matter must be a mapping of fields (key: value)",
      {
        file,
        line: 2,
        hint: "write one 'field: value' per line between the '---' lines",
      },
    );
  }
  const defaultId = basename(path, extname(path));
  const shaped = shapeEntry(
    value,
    document.contents,
    { file, lineCounter, lineOffset: frontMatterLineOffset, notes },
    { id: defaultId, body, bodyLine },
  );
  if (shaped.location.line === 1) shaped.location.line = 2;
  return [shaped];
}

function compileDataText(text: string, path: string, file: string, notes: KnowledgeCompileNote[]) {
  const isJson = extname(path).toLowerCase() === ".json";
  let value: unknown;
  let root: YamlNode | null = null;
  let lineCounter = new LineCounter();
  if (isJson) {
    value = parseJsonStrict(text, file);
    // JSON is YAML, so a second, position-keeping parse gives line numbers; if it disagrees, lines are dropped.
    try {
      const parsed = parseYaml(text, file, 0);
      root = parsed.document.contents;
      lineCounter = parsed.lineCounter;
    } catch {
      root = null;
    }
  } else {
    const parsed = parseYaml(text, file, 0);
    value = yamlValue(parsed.document, parsed.lineCounter, file, 0);
    root = parsed.document.contents;
    lineCounter = parsed.lineCounter;
  }
  const context: EntryNodeContext = { file, lineCounter, lineOffset: 0, notes };
  let items: unknown[];
  let itemNodes: (YamlNode | null | undefined)[];
  if (Array.isArray(value)) {
    items = value;
    itemNodes = isSeq(root) ? (root.items as (YamlNode | null)[]) : [];
  } else if (value !== null && typeof value === "object" && "entries" in value) {
    const entries = (value as { entries: unknown }).entries;
    const entriesNode = isMap(root) ? root.get("entries", true) : undefined;
    if (!Array.isArray(entries)) {
      throw new KnowledgeCompileError("bad-entry-file", '"entries" must be a list of entries', {
        file,
        ...(entriesNode?.range ? { line: lineOf(lineCounter, entriesNode.range[0], 0) } : {}),
        hint: "write entries as a YAML list ('- id: ...') or a JSON array",
      });
    }
    items = entries;
    itemNodes = isSeq(entriesNode) ? (entriesNode.items as (YamlNode | null)[]) : [];
  } else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    items = [value];
    itemNodes = [root];
  } else {
    throw new KnowledgeCompileError(
      "bad-entry-file",
      "expected an entry, a list of entries or {entries: [...]}",
      {
        file,
        line: 1,
        hint: "an entry file holds one mapping with id, title, summary, domain, integrations (or a list of them)",
      },
    );
  }
  return items.map((item, index) => shapeEntry(item, itemNodes[index], context, {}));
}

async function readCatalogFile(path: string, cwd: string, notes: KnowledgeCompileNote[]) {
  const file = displayPath(path, cwd);
  const { text } = await readSource(path, file, MAX_ENTRY_FILE_BYTES, notes);
  const { document, lineCounter } = parseYaml(text, file, 0);
  const value: unknown = yamlValue(document, lineCounter, file, 0);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new KnowledgeCompileError("bad-catalog-file", "catalog file must be a mapping with an id", {
      file,
      line: 1,
      hint: "write 'id: <catalog-id>' and optionally 'name: <display name>'",
    });
  }
  const record = value as Record<string, unknown>;
  const keyLine = (key: string) => {
    const node = isMap(document.contents)
      ? document.contents.items.find((pair) => isScalar(pair.key) && pair.key.value === key)
      : undefined;
    return isScalar(node?.key) && node.key.range ? lineOf(lineCounter, node.key.range[0], 0) : 1;
  };
  for (const key of Object.keys(record)) {
    if (key !== "id" && key !== "name") {
      notes.push({
        level: "warning",
        code: "unknown-catalog-field",
        message: `unknown catalog field "${key}" is ignored (known fields: id, name)`,
        file,
        line: keyLine(key),
        field: key,
      });
    }
  }
  if (record.id !== undefined && (typeof record.id !== "string" || record.id.trim() === "")) {
    throw new KnowledgeCompileError("bad-catalog-file", "catalog id must be a non-empty string", {
      file,
      line: keyLine("id"),
      hint: "write 'id: <catalog-id>', e.g. 'id: billing'",
    });
  }
  if (record.name !== undefined && typeof record.name !== "string") {
    throw new KnowledgeCompileError("bad-catalog-file", "catalog name must be a string", {
      file,
      line: keyLine("name"),
    });
  }
  return {
    id: typeof record.id === "string" ? record.id : basename(dirname(path)),
    ...(typeof record.name === "string" ? { name: record.name } : {}),
  };
}

function entrySortKey(entry: unknown): string {
  if (entry !== null && typeof entry === "object" && "id" in entry) {
    const id = (entry as { id: unknown }).id;
    return typeof id === "string" ? id : String(id);
  }
  return "";
}

/** SHA-256 of the canonical (already key-ordered) content: the default `contentVersion`. */
export function deriveContentVersion(catalogs: KnowledgeManifestCatalog[]): string {
  const canonical = JSON.stringify({ schemaVersion: MANIFEST_SCHEMA_VERSION, catalogs });
  return createHash("sha256").update(canonical).digest("hex").slice(0, 12);
}

function checkContentVersion(version: string): string {
  if (!CONTENT_VERSION_PATTERN.test(version)) {
    throw new KnowledgeCompileError(
      "bad-content-version",
      `content version "${version}" must be non-empty without spaces, '[', ']' or '@'`,
      { hint: "citations are rendered as [KB:id@version]; use e.g. 2026-07-14.1" },
    );
  }
  return version;
}

function resolveGeneratedAt(options: KnowledgeCompileOptions, newestMtimeMs: number): string {
  if (options.generatedAt !== undefined) {
    const parsed = new Date(options.generatedAt);
    if (Number.isNaN(parsed.getTime())) {
      throw new KnowledgeCompileError(
        "bad-generated-at",
        `generatedAt "${options.generatedAt}" is not a date`,
        {
          hint: "give an ISO 8601 timestamp such as 2026-07-14T09:30:00Z",
        },
      );
    }
    return parsed.toISOString();
  }
  const epoch = (options.env ?? process.env).SOURCE_DATE_EPOCH;
  if (epoch !== undefined && epoch !== "") {
    if (!/^\d+$/.test(epoch)) {
      throw new KnowledgeCompileError(
        "bad-generated-at",
        `SOURCE_DATE_EPOCH "${epoch}" is not whole seconds`,
        {
          hint: "set SOURCE_DATE_EPOCH to a Unix timestamp in seconds, e.g. $(git log -1 --format=%ct)",
        },
      );
    }
    return new Date(Number(epoch) * 1000).toISOString();
  }
  // Whole seconds: sub-second mtimes differ between file systems and would make outputs differ for no reason.
  return new Date(Math.floor(newestMtimeMs / 1000) * 1000).toISOString();
}

/** Builds the manifest (catalogs by id, entries by id, stable keys) and the index-aligned source map. */
function assemble(
  catalogs: PendingCatalog[],
  options: KnowledgeCompileOptions,
  newestMtimeMs: number,
): { manifest: KnowledgeManifest; sourceMap: KnowledgeSourceMap } {
  const ordered = [...catalogs].sort((left, right) => compareCodeUnits(left.id, right.id));
  const manifestCatalogs: KnowledgeManifestCatalog[] = [];
  const mapCatalogs: KnowledgeCatalogLocation[] = [];
  for (const catalog of ordered) {
    const entries = [...catalog.entries].sort(
      (left, right) =>
        compareCodeUnits(entrySortKey(left.entry), entrySortKey(right.entry)) ||
        compareCodeUnits(left.location.file, right.location.file) ||
        left.order - right.order,
    );
    manifestCatalogs.push({
      id: catalog.id,
      entries: entries.map((item) => item.entry as KnowledgeEntryInput),
    });
    mapCatalogs.push({
      id: catalog.id,
      ...(catalog.catalogFile ? { file: catalog.catalogFile } : {}),
      ...(catalog.name !== undefined ? { name: catalog.name } : {}),
      entries: entries.map((item) => item.location),
    });
  }
  const contentVersion =
    options.contentVersion !== undefined
      ? checkContentVersion(options.contentVersion)
      : deriveContentVersion(manifestCatalogs);
  const manifest: KnowledgeManifest = {
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    contentVersion,
    generatedAt: resolveGeneratedAt(options, newestMtimeMs),
    catalogs: manifestCatalogs,
  };
  return { manifest, sourceMap: { catalogs: mapCatalogs } };
}

async function statOrThrow(path: string, file: string) {
  try {
    return await stat(path);
  } catch {
    throw new KnowledgeCompileError("not-found", "no such file or directory", {
      file,
      hint: "check the path; it is resolved against the current directory",
    });
  }
}

/**
 * The catalogs the inputs name, each with its entry files, in walk order. A folder with a catalog.yaml is one
 * catalog (and so is each such folder below it), a plain folder of entry files is one catalog named after it, and
 * a single entry file joins the catalog of its folder. With `collectFileErrors`, a file that cannot be used is
 * noted and skipped instead of stopping the compile.
 */
class CatalogGathering {
  readonly catalogsById = new Map<string, PendingCatalog>();
  readonly notes: KnowledgeCompileNote[] = [];
  /** False once an input is a folder (the knowledge base's origin is then "folder"). */
  onlyFiles = true;

  constructor(
    private readonly cwd: string,
    private readonly collect: boolean,
  ) {}

  /** With `collectFileErrors`, notes a file's compile error and returns true; otherwise returns false. */
  collected(error: unknown): boolean {
    if (!this.collect || !KnowledgeCompileError.isInstance(error)) return false;
    this.notes.push(compileErrorNote(error));
    return true;
  }

  /** Adds one input: a folder (walked) or an entry file. */
  async addInput(input: string): Promise<void> {
    const absolute = resolve(this.cwd, input);
    const shown = displayPath(absolute, this.cwd);
    const info = await statOrThrow(absolute, shown);
    if (info.isDirectory()) {
      this.onlyFiles = false;
      await this.addFolder(absolute);
      return;
    }
    const extension = extname(absolute).toLowerCase();
    if (!MARKDOWN_EXTENSIONS.has(extension) && !DATA_EXTENSIONS.has(extension)) {
      const unsupported = new KnowledgeCompileError(
        "unsupported-file",
        `unsupported file type "${extension || "(none)"}"`,
        {
          file: shown,
          hint: "entry files are .md/.markdown (front matter) or .yaml/.yml/.json",
        },
      );
      if (this.collected(unsupported)) return;
      throw unsupported;
    }
    const directory = dirname(absolute);
    const catalog = await this.catalogFor(directory, await findCatalogFile(directory));
    catalog.files.push(absolute);
  }

  private async addFolder(absolute: string): Promise<void> {
    if (await findCatalogFile(absolute)) {
      await this.addCatalogDirectory(absolute);
      return;
    }
    const walked = await walk(absolute, true);
    if (walked.catalogDirectories.length === 0) {
      const catalog = await this.catalogFor(absolute, undefined);
      catalog.files.push(...walked.looseFiles);
      return;
    }
    for (const directory of walked.catalogDirectories) await this.addCatalogDirectory(directory);
    for (const loose of walked.looseFiles) {
      // A loose file at the root (a questions file, notes) is expected; one in a subfolder is more likely an
      // entry whose folder lacks its catalog.yaml.
      const atRoot = dirname(loose) === absolute;
      this.notes.push({
        level: atRoot ? "info" : "warning",
        code: "ignored-file",
        message: atRoot
          ? "not inside a catalog folder; ignored"
          : "not inside a catalog folder (no catalog.yaml in its folder or above it); ignored",
        file: displayPath(loose, this.cwd),
      });
    }
  }

  private async addCatalogDirectory(directory: string): Promise<void> {
    const catalog = await this.catalogFor(directory, await findCatalogFile(directory));
    const walked = await walk(directory, true);
    for (const file of walked.looseFiles) catalog.files.push(file);
    for (const nested of walked.catalogDirectories) await this.addCatalogDirectory(nested);
  }

  private async readHeader(directory: string, catalogFile: string | undefined) {
    if (!catalogFile) return { id: basename(directory) };
    try {
      return await readCatalogFile(catalogFile, this.cwd, this.notes);
    } catch (error) {
      // The folder's entries are still read, as a catalog named after the folder.
      if (this.collected(error)) return { id: basename(directory) };
      throw error;
    }
  }

  /** The catalog of a folder, created on first use; two folders claiming one id is a `duplicate-catalog-id`. */
  private async catalogFor(directory: string, catalogFile: string | undefined): Promise<PendingCatalog> {
    const cwd = this.cwd;
    const header = await this.readHeader(directory, catalogFile);
    const shownCatalogFile = catalogFile ? displayPath(catalogFile, cwd) : undefined;
    const existing = this.catalogsById.get(header.id);
    if (existing) {
      if (existing.directory !== directory && (existing.catalogFile || shownCatalogFile)) {
        const duplicate = new KnowledgeCompileError(
          "duplicate-catalog-id",
          `catalog id "${header.id}" is also used by ${existing.catalogFile ?? displayPath(existing.directory, cwd)}`,
          {
            file: shownCatalogFile ?? displayPath(directory, cwd),
            line: 1,
            hint: "give every catalog folder its own id in catalog.yaml",
          },
        );
        // Collected, the two folders' entries share the catalog (their ids are still checked for duplicates).
        if (!this.collected(duplicate)) throw duplicate;
      }
      return existing;
    }
    const created: PendingCatalog = {
      id: header.id,
      ...("name" in header && header.name !== undefined ? { name: header.name } : {}),
      ...(shownCatalogFile ? { catalogFile: shownCatalogFile } : {}),
      directory,
      files: [],
      entries: [],
    };
    this.catalogsById.set(header.id, created);
    return created;
  }
}

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

/** A compile error as a note: same code, message, place and hint. */
function compileErrorNote(error: KnowledgeCompileError): KnowledgeCompileNote {
  return {
    level: "error",
    code: error.code,
    message: error.description,
    ...(error.file !== undefined ? { file: error.file } : {}),
    ...(error.line !== undefined ? { line: error.line } : {}),
    ...(error.column !== undefined ? { column: error.column } : {}),
    ...(error.hint !== undefined ? { hint: error.hint } : {}),
  };
}

/** First sentence of `text` (up to `.`, `!` or `?` followed by whitespace), capped in length. */
export function firstSentence(text: string): string {
  const trimmed = text.trim();
  const match = /[.!?](?=\s)/.exec(trimmed);
  const sentence = match ? trimmed.slice(0, match.index + 1) : trimmed;
  if (sentence.length <= BEIR_SUMMARY_MAX_CHARS) return sentence;
  const cut = sentence.slice(0, BEIR_SUMMARY_MAX_CHARS);
  const lastSpace = cut.lastIndexOf(" ");
  return `${lastSpace > 0 ? cut.slice(0, lastSpace) : cut}…`;
}

/**
 * Loads a BEIR collection's `corpus.jsonl` as one catalog named after the folder: `_id` → id, `title` → title
 * (the id when empty), the first sentence of `text` → summary, `text` → body, domain `corpus`, no integrations.
 */
export async function loadBeirCorpus(
  directory: string,
  options: KnowledgeCompileOptions = {},
): Promise<LoadedKnowledgeBase> {
  const cwd = options.cwd ?? process.cwd();
  const corpusPath = join(directory, "corpus.jsonl");
  const file = displayPath(corpusPath, cwd);
  const info = await statOrThrow(corpusPath, file);
  const pending: PendingEntry[] = [];
  const lines = createInterface({
    input: createReadStream(corpusPath, "utf8"),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let lineNumber = 0;
  for await (const line of lines) {
    lineNumber++;
    if (line.trim() === "") continue;
    let document: unknown;
    try {
      document = JSON.parse(line);
    } catch (error) {
      lines.close();
      throw new KnowledgeCompileError("bad-corpus", `malformed JSON line: ${(error as Error).message}`, {
        file,
        line: lineNumber,
        hint: "corpus.jsonl holds one JSON object per line with _id, title and text",
      });
    }
    const record = (document ?? {}) as { _id?: unknown; title?: unknown; text?: unknown };
    if (typeof record._id !== "string" && typeof record._id !== "number") {
      lines.close();
      throw new KnowledgeCompileError("bad-corpus", 'line has no "_id"', { file, line: lineNumber });
    }
    const id = String(record._id);
    const text = typeof record.text === "string" ? record.text : "";
    const title = typeof record.title === "string" && record.title.trim() !== "" ? record.title.trim() : id;
    const summary = firstSentence(text) || title;
    pending.push({
      entry: { id, title, summary, domain: "corpus", integrations: [], body: text },
      location: { file, line: lineNumber, fields: {} },
      order: pending.length,
    });
    if (pending.length % 1000 === 0) options.onProgress?.({ phase: "corpus", done: pending.length });
  }
  options.onProgress?.({ phase: "corpus", done: pending.length, total: pending.length });
  if (pending.length === 0) {
    throw new KnowledgeCompileError("no-entries", "corpus.jsonl has no documents", { file });
  }
  const { manifest, sourceMap } = assemble(
    [{ id: basename(resolve(directory)), directory, files: [corpusPath], entries: pending }],
    options,
    info.mtimeMs,
  );
  return { manifest, sources: manifestToSources(manifest), sourceMap, notes: [], origin: "beir" };
}

function checkManifestShape(value: unknown, file: string | undefined): KnowledgeManifest {
  const fail = (description: string): never => {
    throw new KnowledgeCompileError("bad-manifest", description, {
      ...(file ? { file } : {}),
      hint: "a manifest is {schemaVersion, contentVersion, generatedAt, catalogs: [{id, entries: [...]}]}; build one with 'lexground build <folder> -o kb.json', or pass the folder of entry files itself",
    });
  };
  if (Array.isArray(value))
    fail("not a knowledge manifest: a JSON array (a list of entries?), not an object");
  if (value === null || typeof value !== "object") fail("not a knowledge manifest (expected an object)");
  const record = value as Record<string, unknown>;
  if (!("catalogs" in record)) {
    fail(
      `not a knowledge manifest: no "catalogs" key${"entries" in record || "id" in record ? " (it looks like an entry file)" : ""}`,
    );
  }
  if (!Array.isArray(record.catalogs)) fail('not a knowledge manifest: "catalogs" must be an array');
  if (typeof record.contentVersion !== "string" || record.contentVersion === "") {
    fail('not a knowledge manifest: "contentVersion" must be a non-empty string');
  }
  (record.catalogs as unknown[]).forEach((catalog, index) => {
    if (catalog === null || typeof catalog !== "object" || Array.isArray(catalog)) {
      fail(`catalogs[${index}] must be an object with id and entries`);
    }
    if (!Array.isArray((catalog as { entries?: unknown }).entries))
      fail(`catalogs[${index}].entries must be an array`);
  });
  return value as KnowledgeManifest;
}

/** Line numbers of a manifest JSON file's entries, from a position-keeping parse of the same text. */
function locateManifest(text: string, file: string, manifest: KnowledgeManifest): KnowledgeSourceMap {
  const { document, lineCounter } = parseYaml(text, file, 0);
  const notes: KnowledgeCompileNote[] = [];
  const context: EntryNodeContext = { file, lineCounter, lineOffset: 0, notes };
  const catalogsNode = isMap(document.contents) ? document.contents.get("catalogs", true) : undefined;
  return {
    catalogs: manifest.catalogs.map((catalog, catalogIndex) => {
      const catalogNode = isSeq(catalogsNode) ? catalogsNode.items[catalogIndex] : undefined;
      const entriesNode = isMap(catalogNode) ? catalogNode.get("entries", true) : undefined;
      return {
        id: String(catalog.id),
        entries: catalog.entries.map((entry, entryIndex) => {
          const node = isSeq(entriesNode) ? (entriesNode.items[entryIndex] as YamlNode) : undefined;
          return shapeEntry(entry, node, context, {}).location;
        }),
      };
    }),
  };
}

function unlocatedSourceMap(manifest: KnowledgeManifest, file: string): KnowledgeSourceMap {
  return {
    catalogs: manifest.catalogs.map((catalog) => ({
      id: String(catalog.id),
      entries: catalog.entries.map(() => ({ file, line: 0, fields: {} })),
    })),
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

/** The manifest as written by `lexground build`: two-space JSON with a trailing newline. */
export function serializeManifest(manifest: KnowledgeManifest): string {
  return `${JSON.stringify(manifest, null, 2)}\n`;
}
