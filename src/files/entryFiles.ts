/**
 * Entry files: a Markdown file with YAML front matter (one entry), a YAML or JSON file (one entry, a list, or
 * `{entries: [...]}`), and `catalog.yaml`; each entry shaped with the line of every field.
 */
import { basename, dirname, extname } from "node:path";
import { isMap, isScalar, isSeq, LineCounter, type Node as YamlNode } from "yaml";
import { KNOWLEDGE_ENTRY_FIELDS } from "../knowledge/defaults.js";
import { KnowledgeCompileError } from "./errors.js";
import { displayPath, MAX_ENTRY_FILE_BYTES, readSource } from "./fileText.js";
import { parseJsonStrict } from "./json.js";
import type { KnowledgeCompileNote, KnowledgeEntryLocation } from "./types.js";
import { lineOf, parseYaml, yamlValue } from "./yaml.js";

/** Entry fields (in the order they are written to a manifest). Anything else in an entry file is reported. */
const ENTRY_FIELDS: ReadonlySet<string> = new Set(KNOWLEDGE_ENTRY_FIELDS);

export type EntryNodeContext = {
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
export function shapeEntry(
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

export function compileMarkdownText(text: string, path: string, file: string, notes: KnowledgeCompileNote[]) {
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

export function compileDataText(text: string, path: string, file: string, notes: KnowledgeCompileNote[]) {
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

export async function readCatalogFile(path: string, cwd: string, notes: KnowledgeCompileNote[]) {
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
