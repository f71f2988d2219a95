/**
 * Issues for authors: the engine's validation issues located at `file:line` through the compiler's source map,
 * the compiler's own notes, and lints for what the engine tolerates but retrieval suffers from.
 *
 * @module
 */
import { normalizeAndValidate, normalizeText } from "../index.js";
import type { KnowledgeEntryInput, KnowledgeValidationIssue } from "../types/knowledge.js";
import type { KnowledgeCompileNote, LoadedKnowledgeBase } from "./types.js";

/**
 * A problem in a knowledge base, located in its files when they are known (what `lexground validate` prints): a
 * compiler note's fields (`file` is the display path, `field` the top-level entry field the issue is about) plus
 * where the engine put it.
 */
export type KnowledgeFileIssue = KnowledgeCompileNote & {
  sourceId?: string;
  /** The engine's path, e.g. `sources[0].entries[3].aliases[1]`. */
  path?: string;
};

/**
 * What is wrong with a loaded knowledge base, for its authors: the compiler's notes and the engine's validation
 * issues located at `file:line`, then any `extra` issues (lints), sorted. `ok` is the engine's verdict: false when
 * validation found an error.
 */
export function knowledgeBaseIssues(
  knowledgeBase: LoadedKnowledgeBase,
  extra: readonly KnowledgeFileIssue[] = [],
): { ok: boolean; issues: KnowledgeFileIssue[] } {
  const { validation } = normalizeAndValidate(knowledgeBase.sources, {
    manifestVersion: knowledgeBase.manifest.contentVersion,
  });
  const issues = sortIssues([
    ...notesToIssues(knowledgeBase.notes),
    ...locateIssues(validation.issues, knowledgeBase),
    ...extra,
  ]);
  return { ok: validation.ok, issues };
}

const ENTRY_PATH = /^sources\[(\d+)\](?:\.entries\[(\d+)\](?:\.([A-Za-z]+))?)?/;

/** Adds file, line and field to the engine's issues using the knowledge base's source map. */
export function locateIssues(
  issues: readonly KnowledgeValidationIssue[],
  knowledgeBase: LoadedKnowledgeBase,
): KnowledgeFileIssue[] {
  const { sourceMap } = knowledgeBase;
  const firstLocationOfId = new Map<string, { file: string; line: number }>();
  for (const catalog of sourceMap.catalogs) {
    const manifestCatalog = knowledgeBase.manifest.catalogs.find((candidate) => candidate.id === catalog.id);
    catalog.entries.forEach((location, index) => {
      const id = (manifestCatalog?.entries[index] as { id?: unknown } | undefined)?.id;
      if (typeof id === "string" && !firstLocationOfId.has(id)) firstLocationOfId.set(id, location);
    });
  }
  return issues.map((issue) => {
    const reported: KnowledgeFileIssue = { level: issue.level, code: issue.code, message: issue.message };
    if (issue.entryId !== undefined) reported.entryId = issue.entryId;
    if (issue.sourceId !== undefined) reported.sourceId = issue.sourceId;
    if (issue.path !== undefined) reported.path = issue.path;
    const match = issue.path ? ENTRY_PATH.exec(issue.path) : null;
    if (match) {
      const catalog = sourceMap.catalogs[Number(match[1])];
      const entry = match[2] !== undefined ? catalog?.entries[Number(match[2])] : undefined;
      const field = match[3];
      if (field) reported.field = field;
      if (entry) {
        if (entry.file) reported.file = entry.file;
        const line = field ? (entry.fields[field as keyof typeof entry.fields] ?? entry.line) : entry.line;
        if (line > 0) reported.line = line;
      } else if (catalog?.file) {
        reported.file = catalog.file;
      }
    } else if (issue.entryId !== undefined && firstLocationOfId.has(issue.entryId)) {
      const location = firstLocationOfId.get(issue.entryId)!;
      reported.file = location.file;
      if (location.line > 0) reported.line = location.line;
    }
    return reported;
  });
}

/** Turns the compiler's notes into report issues. */
export function notesToIssues(notes: readonly KnowledgeCompileNote[]): KnowledgeFileIssue[] {
  return notes.map((note) => ({
    level: note.level,
    code: note.code,
    message: note.message,
    ...(note.file !== undefined ? { file: note.file } : {}),
    ...(note.line !== undefined ? { line: note.line } : {}),
    ...(note.entryId !== undefined ? { entryId: note.entryId } : {}),
    ...(note.field !== undefined ? { field: note.field } : {}),
    ...(note.column !== undefined ? { column: note.column } : {}),
    ...(note.hint !== undefined ? { hint: note.hint } : {}),
  }));
}

type LintEntry = {
  id: string;
  title: string;
  aliases: string[];
  idKey: string;
  titleKey: string;
  catalogIndex: number;
  entryIndex: number;
};

function isActive(entry: KnowledgeEntryInput): boolean {
  return entry.status === undefined || entry.status === null || entry.status === "active";
}

/**
 * Author lints over active entries (only they are ever retrieved):
 * - `title-collision`: two entries share a normalized title, so a query naming it boosts both (+100 each);
 * - `id-title-collision`: an entry's title is another entry's id phrase;
 * - `alias-shadowed`: an alias equals another entry's title or id, so that entry gets the larger exact boost;
 * - `one-word-title` / `one-word-id`: the title (or id) is one word, so every query containing the word matches it
 *   exactly.
 */
export function lintKnowledgeBase(knowledgeBase: LoadedKnowledgeBase): KnowledgeFileIssue[] {
  const entries: LintEntry[] = [];
  knowledgeBase.manifest.catalogs.forEach((catalog, catalogIndex) => {
    catalog.entries.forEach((entry, entryIndex) => {
      if (entry === null || typeof entry !== "object" || !isActive(entry)) return;
      if (typeof entry.id !== "string" || typeof entry.title !== "string") return;
      entries.push({
        id: entry.id,
        title: entry.title,
        aliases: Array.isArray(entry.aliases)
          ? entry.aliases.filter((alias) => typeof alias === "string")
          : [],
        idKey: normalizeText(entry.id),
        titleKey: normalizeText(entry.title),
        catalogIndex,
        entryIndex,
      });
    });
  });
  const issues: KnowledgeFileIssue[] = [];
  const locate = (
    entry: LintEntry,
    field: "title" | "aliases" | "id",
  ): Pick<KnowledgeFileIssue, "file" | "line"> => {
    const location = knowledgeBase.sourceMap.catalogs[entry.catalogIndex]?.entries[entry.entryIndex];
    if (!location) return {};
    const line = location.fields[field] ?? location.line;
    return { ...(location.file ? { file: location.file } : {}), ...(line > 0 ? { line } : {}) };
  };
  const push = (entry: LintEntry, field: "title" | "aliases" | "id", code: string, message: string) => {
    issues.push({
      level: "warning",
      code,
      message,
      ...locate(entry, field),
      entryId: entry.id,
      sourceId: knowledgeBase.manifest.catalogs[entry.catalogIndex]!.id,
      field,
      path: `sources[${entry.catalogIndex}].entries[${entry.entryIndex}].${field}`,
    });
  };

  const titleOwners = new Map<string, LintEntry>();
  const idOwners = new Map<string, LintEntry>();
  for (const entry of entries) {
    if (entry.idKey && !idOwners.has(entry.idKey)) idOwners.set(entry.idKey, entry);
  }
  for (const entry of entries) {
    if (!entry.titleKey) continue;
    const sameTitle = titleOwners.get(entry.titleKey);
    if (sameTitle && sameTitle.id !== entry.id) {
      push(
        entry,
        "title",
        "title-collision",
        `title "${entry.title}" is also the title of ${sameTitle.id}: a query containing it gives both the exact boost`,
      );
    } else if (!sameTitle) {
      titleOwners.set(entry.titleKey, entry);
    }
    const idOwner = idOwners.get(entry.titleKey);
    if (idOwner && idOwner.id !== entry.id) {
      push(
        entry,
        "title",
        "id-title-collision",
        `title "${entry.title}" reads the same as the id of ${idOwner.id}: a query containing it gives both the exact boost`,
      );
    }
    // A purely numeric id (a document number) only matches queries that quote it, which is what a reader means.
    if (
      entry.idKey &&
      !entry.idKey.includes(" ") &&
      entry.idKey !== entry.titleKey &&
      /\p{L}/u.test(entry.idKey)
    ) {
      push(
        entry,
        "id",
        "one-word-id",
        `id "${entry.id}" is one word: every query containing "${entry.idKey}" matches it exactly; use a dotted id such as area.${entry.id}`,
      );
    }
    if (!entry.titleKey.includes(" ")) {
      push(
        entry,
        "title",
        "one-word-title",
        `title "${entry.title}" is one word: every query containing "${entry.titleKey}" matches it exactly (+exact boost, high confidence); use a more specific title`,
      );
    }
  }
  for (const entry of entries) {
    const reported = new Set<string>();
    for (const alias of entry.aliases) {
      const key = normalizeText(alias);
      if (!key || reported.has(key)) continue;
      const titleOwner = titleOwners.get(key);
      const idOwner = idOwners.get(key);
      const owner =
        titleOwner && titleOwner.id !== entry.id
          ? titleOwner
          : idOwner && idOwner.id !== entry.id
            ? idOwner
            : undefined;
      if (!owner) continue;
      reported.add(key);
      const what = owner === titleOwner ? "title" : "id";
      push(
        entry,
        "aliases",
        "alias-shadowed",
        `alias "${alias}" is the ${what} of ${owner.id}: a query containing it ranks ${owner.id} higher (exact boost beats alias boost)`,
      );
    }
  }
  return issues;
}

const LEVEL_ORDER = { error: 0, warning: 1, info: 2 } as const;

/** Orders issues by file, line, then severity, so reports read top to bottom like the files. */
export function sortIssues(issues: KnowledgeFileIssue[]): KnowledgeFileIssue[] {
  return [...issues].sort((left, right) => {
    const leftFile = left.file ?? "\uffff";
    const rightFile = right.file ?? "\uffff";
    if (leftFile !== rightFile) return leftFile < rightFile ? -1 : 1;
    const lineDifference = (left.line ?? 0) - (right.line ?? 0);
    if (lineDifference !== 0) return lineDifference;
    return LEVEL_ORDER[left.level] - LEVEL_ORDER[right.level];
  });
}
