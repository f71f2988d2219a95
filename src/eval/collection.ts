/**
 * Loading an evaluation collection: a knowledge base (manifest, folder of entries, or BEIR folder) with its
 * queries and judgments. A BEIR folder supplies its own `queries.jsonl` and `qrels/<split>.tsv`; a folder with a
 * `questions.json` (like the example knowledge base) supplies that.
 *
 * @module
 */

import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { readKnowledgeBase } from "../files/compile.js";
import type { KnowledgeCompileOptions, LoadedKnowledgeBase } from "../files/types.js";
import { hasErrorMarker } from "../knowledge/errors.js";
import { normalizeAndValidate } from "../knowledge/resolve.js";
import type { KnowledgeValidationIssue, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { EvalDataError, type EvalQrels, type EvalQuery, readQrels, readQueries } from "./data.js";

/** A knowledge base with queries and judgments, ready for {@link evaluateConfigurations}. */
export type EvalCollection = {
  knowledgeBase: LoadedKnowledgeBase;
  entries: NormalizedKnowledgeEntry[];
  queries: EvalQuery[];
  qrels: EvalQrels;
  /** Where queries and judgments came from (display paths). */
  queriesFile: string;
  qrelsFile: string | null;
  /** True for BEIR folders: results drop the query's own id (the BEIR convention). */
  beir: boolean;
};

/** Options of {@link loadEvalCollection}. */
export type EvalCollectionOptions = {
  /** Queries file; default: the BEIR folder's `queries.jsonl`, or `questions.json` in the knowledge base folder. */
  queries?: string;
  /** Qrels file; default: the BEIR folder's `qrels/<split>.tsv` (question files carry their own). */
  qrels?: string;
  /** BEIR split. Default `test`. */
  split?: string;
  cwd?: string;
  compile?: KnowledgeCompileOptions;
};

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
const EVAL_KNOWLEDGE_BASE_MARKER = Symbol.for("lexground.EvalKnowledgeBaseError");

/** The knowledge base failed validation. */
export class EvalKnowledgeBaseError extends Error {
  override readonly name = "EvalKnowledgeBaseError";
  /** Stable machine-readable code. */
  readonly code = "EVAL_KNOWLEDGE_BASE_INVALID";
  readonly [EVAL_KNOWLEDGE_BASE_MARKER] = true;
  constructor(readonly issues: KnowledgeValidationIssue[]) {
    const first = issues.find((issue) => issue.level === "error");
    super(`the knowledge base has validation errors; first: ${first?.message ?? "unknown"}`);
  }

  /** True for an `EvalKnowledgeBaseError` from any copy of the package. */
  static isInstance(error: unknown): error is EvalKnowledgeBaseError {
    return hasErrorMarker(error, EVAL_KNOWLEDGE_BASE_MARKER);
  }
}

async function isFile(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isFile() === true;
}

/** Validated entries of a loaded knowledge base; throws {@link EvalKnowledgeBaseError} on errors. */
export function entriesOf(knowledgeBase: LoadedKnowledgeBase): NormalizedKnowledgeEntry[] {
  const { entries, validation } = normalizeAndValidate(knowledgeBase.sources, {
    manifestVersion: knowledgeBase.manifest.contentVersion,
  });
  if (!validation.ok) throw new EvalKnowledgeBaseError(validation.issues);
  return entries;
}

/** Loads a knowledge base and its queries and judgments. */
export async function loadEvalCollection(
  kb: string,
  options: EvalCollectionOptions = {},
): Promise<EvalCollection> {
  const cwd = options.cwd ?? process.cwd();
  const split = options.split ?? "test";
  const kbPath = resolve(cwd, kb);
  const knowledgeBase = await readKnowledgeBase(kbPath, { cwd, ...options.compile });
  const beir = knowledgeBase.origin === "beir";

  let queriesPath: string;
  if (options.queries !== undefined) queriesPath = resolve(cwd, options.queries);
  else if (beir) queriesPath = join(kbPath, "queries.jsonl");
  else if (await isFile(join(kbPath, "questions.json"))) queriesPath = join(kbPath, "questions.json");
  else {
    throw new EvalDataError(kb, "no queries given and none found next to the knowledge base", {
      hint: "pass --queries <questions.json|queries.jsonl>",
    });
  }
  const loaded = await readQueries(queriesPath, display(queriesPath, cwd));

  let qrels: EvalQrels;
  let qrelsFile: string | null = null;
  if (options.qrels !== undefined) {
    const path = resolve(cwd, options.qrels);
    qrelsFile = display(path, cwd);
    qrels = await readQrels(path, qrelsFile);
  } else if (loaded.qrels) {
    qrels = loaded.qrels;
  } else if (beir) {
    const path = join(kbPath, "qrels", `${split}.tsv`);
    qrelsFile = display(path, cwd);
    qrels = await readQrels(path, qrelsFile);
  } else {
    throw new EvalDataError(display(queriesPath, cwd), "these queries carry no judgments", {
      hint: "pass --qrels <file> (BEIR TSV or TREC format)",
    });
  }
  return {
    knowledgeBase,
    entries: entriesOf(knowledgeBase),
    queries: loaded.queries,
    qrels,
    queriesFile: display(queriesPath, cwd),
    qrelsFile,
    beir,
  };
}

function display(path: string, cwd: string): string {
  const absoluteCwd = resolve(cwd);
  return path.startsWith(`${absoluteCwd}/`) ? path.slice(absoluteCwd.length + 1) : path;
}
