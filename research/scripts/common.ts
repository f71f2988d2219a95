/**
 * Shared helpers of the measurement scripts (`npm run eval:datasets`, the stemmer comparison, the grid search):
 * where the shared collections live and how to print a Markdown table.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type EvalCollection, loadEvalCollection } from "../../src/eval/collection.js";

/** The repository root (two levels above this file's folder). */
export const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * The shared BEIR collections, read in place (never copied): `$LEXGROUND_DATASETS`, else `../shared/datasets`
 * relative to the repository.
 */
export function datasetsRoot(): string {
  const root = process.env.LEXGROUND_DATASETS ?? join(REPOSITORY_ROOT, "..", "shared", "datasets");
  if (!existsSync(root)) {
    throw new Error(
      `datasets not found at ${root}; set LEXGROUND_DATASETS to the folder holding scifact/ etc.`,
    );
  }
  return root;
}

/** Loads a shared collection's split. */
export async function loadDataset(name: string, split: string): Promise<EvalCollection> {
  return loadEvalCollection(join(datasetsRoot(), name), { split });
}

/** A Markdown table. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`];
  for (const row of rows) lines.push(`| ${row.join(" | ")} |`);
  return lines.join("\n");
}

/** A metric value with four decimals. */
export function figure(value: number): string {
  return value.toFixed(4);
}

/** Whether this module is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && resolve(entry) === fileURLToPath(moduleUrl);
}
