/**
 * The manifest: assembled from the gathered catalogs (deterministic order, content version, generation time),
 * checked when read from JSON, located line by line, and written back.
 */
import { createHash } from "node:crypto";
import { isMap, isSeq, type Node as YamlNode } from "yaml";
import { compareCodeUnits } from "../knowledge/knowledgeIndex.js";
import type { KnowledgeEntryInput, KnowledgeManifest, KnowledgeManifestCatalog } from "../types/knowledge.js";
import { type EntryNodeContext, shapeEntry } from "./entryFiles.js";
import { KnowledgeCompileError } from "./errors.js";
import type {
  KnowledgeCatalogLocation,
  KnowledgeCompileNote,
  KnowledgeCompileOptions,
  KnowledgeSourceMap,
  PendingCatalog,
} from "./types.js";
import { parseYaml } from "./yaml.js";

/** Schema version written into every compiled manifest. */
export const MANIFEST_SCHEMA_VERSION = "1";
/** Citation markers are `[KB:id@version]`, so a version must not contain characters that would break them. */
const CONTENT_VERSION_PATTERN = /^[^\s[\]@]+$/;

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
export function assemble(
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

export function checkManifestShape(value: unknown, file: string | undefined): KnowledgeManifest {
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
export function locateManifest(text: string, file: string, manifest: KnowledgeManifest): KnowledgeSourceMap {
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

export function unlocatedSourceMap(manifest: KnowledgeManifest, file: string): KnowledgeSourceMap {
  return {
    catalogs: manifest.catalogs.map((catalog) => ({
      id: String(catalog.id),
      entries: catalog.entries.map(() => ({ file, line: 0, fields: {} })),
    })),
  };
}

/** The manifest as written by `lexground build`: two-space JSON with a trailing newline. */
export function serializeManifest(manifest: KnowledgeManifest): string {
  return `${JSON.stringify(manifest, null, 2)}\n`;
}
