/**
 * Which files make up which catalog: the walk over folders (deterministic, stopping at nested catalog folders)
 * and the gathering of inputs into catalogs with their entry files.
 */
import { readdir } from "node:fs/promises";
import { basename, dirname, extname, join, resolve } from "node:path";
import { readCatalogFile } from "./entryFiles.js";
import { KnowledgeCompileError } from "./errors.js";
import { displayPath, statOrThrow } from "./fileText.js";
import type { KnowledgeCompileNote, PendingCatalog } from "./types.js";

export const MARKDOWN_EXTENSIONS = new Set([".md", ".markdown"]);
const DATA_EXTENSIONS = new Set([".yaml", ".yml", ".json"]);
const CATALOG_FILE_NAMES = ["catalog.yaml", "catalog.yml"];

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

/**
 * The catalogs the inputs name, each with its entry files, in walk order. A folder with a catalog.yaml is one
 * catalog (and so is each such folder below it), a plain folder of entry files is one catalog named after it, and
 * a single entry file joins the catalog of its folder. With `collectFileErrors`, a file that cannot be used is
 * noted and skipped instead of stopping the compile.
 */
export class CatalogGathering {
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
