/**
 * Evaluation inputs: queries and relevance judgments ("qrels") in the formats `lexground eval` accepts.
 *
 * - BEIR queries: `queries.jsonl`, one `{"_id", "text"}` object per line.
 * - Question files: a JSON array of `{"question", "expected": [entry ids], "integrations"?: [...], "passage"?: "..."}`
 *   (the example knowledge base's `questions.json`); the expected ids are the relevant documents (grade 1),
 *   `integrations` are enabled for that question, and `passage` is the judged answer text (a verbatim excerpt of an
 *   expected entry's body) that should reach the block. Question ids are `q1`, `q2`, … in file order.
 * - Qrels: BEIR TSV (`query-id\tcorpus-id\tscore`, header optional) or TREC (`qid 0 docid grade`, whitespace
 *   separated). A query's judgments are its document → grade map; grade > 0 is relevant.
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import { locateJsonSyntaxError } from "../files/json.js";
import { hasErrorMarker } from "../knowledge/errors.js";

/** One evaluation query. */
export type EvalQuery = {
  id: string;
  text: string;
  /** Integrations enabled for this query (question files only). Default none. */
  integrations?: string[];
  /** The judged passage: text that answers the query and should reach the block (question files only). */
  passage?: string;
};

/** Judgments: query id → (document id → grade). */
export type EvalQrels = Map<string, Map<string, number>>;

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
const EVAL_DATA_MARKER = Symbol.for("lexground.EvalDataError");

/** A query or qrels file could not be read; `file` and `line` locate the problem. */
export class EvalDataError extends Error {
  override readonly name = "EvalDataError";
  /** Stable machine-readable code. */
  readonly code = "EVAL_DATA_INVALID";
  readonly [EVAL_DATA_MARKER] = true;
  readonly file: string;
  readonly line: number | undefined;
  readonly hint: string | undefined;
  constructor(file: string, description: string, options: { line?: number; hint?: string } = {}) {
    super(`${file}${options.line ? `:${options.line}` : ""}: ${description}`);
    this.file = file;
    this.line = options.line;
    this.hint = options.hint;
  }

  /** True for an `EvalDataError` from any copy of the package. */
  static isInstance(error: unknown): error is EvalDataError {
    return hasErrorMarker(error, EVAL_DATA_MARKER);
  }
}

async function readText(path: string, shown: string): Promise<string> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new EvalDataError(shown, code === "ENOENT" ? "file not found" : `unreadable (${code ?? "error"})`);
  }
}

/** Queries read from a file, with judgments when the file carries them (question files). */
export type LoadedQueries = {
  queries: EvalQuery[];
  /** Present for question files: the expected ids as grade-1 judgments. */
  qrels?: EvalQrels;
  format: "beir" | "questions";
};

/** Parses BEIR `queries.jsonl` text. */
export function parseBeirQueries(text: string, shown: string): EvalQuery[] {
  const queries: EvalQuery[] = [];
  const seen = new Set<string>();
  const lines = text.split(/\r?\n/);
  lines.forEach((line, index) => {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      const { column, reason } = locateJsonSyntaxError(line, error);
      throw new EvalDataError(shown, `malformed JSON line at column ${column}: ${reason}`, {
        line: index + 1,
        hint: 'queries.jsonl holds one {"_id", "text"} object per line',
      });
    }
    const record = (value ?? {}) as { _id?: unknown; text?: unknown };
    if (typeof record._id !== "string" && typeof record._id !== "number") {
      throw new EvalDataError(shown, 'line has no "_id"', { line: index + 1 });
    }
    if (typeof record.text !== "string") {
      throw new EvalDataError(shown, '"text" must be a string', { line: index + 1 });
    }
    const id = String(record._id);
    if (seen.has(id))
      throw new EvalDataError(shown, `duplicate query id ${JSON.stringify(id)}`, { line: index + 1 });
    seen.add(id);
    queries.push({ id, text: record.text });
  });
  return queries;
}

/** Parses a question file (JSON array of `{question, expected, integrations?, passage?}`). */
export function parseQuestions(value: unknown, shown: string): { queries: EvalQuery[]; qrels: EvalQrels } {
  const hint = 'a question file is a JSON array like [{"question": "...", "expected": ["entry.id"]}]';
  if (!Array.isArray(value)) throw new EvalDataError(shown, "must be a JSON array of questions", { hint });
  const queries: EvalQuery[] = [];
  const qrels: EvalQrels = new Map();
  value.forEach((item, index) => {
    const where = `[${index}]`;
    if (item === null || typeof item !== "object" || Array.isArray(item)) {
      throw new EvalDataError(shown, `${where} must be an object`, { hint });
    }
    const record = item as {
      question?: unknown;
      expected?: unknown;
      integrations?: unknown;
      passage?: unknown;
    };
    if (typeof record.question !== "string" || record.question.trim() === "") {
      throw new EvalDataError(shown, `${where}.question must be a non-empty string`, { hint });
    }
    if (
      !Array.isArray(record.expected) ||
      record.expected.length === 0 ||
      record.expected.some((id) => typeof id !== "string")
    ) {
      throw new EvalDataError(shown, `${where}.expected must be a non-empty array of entry ids`, { hint });
    }
    if (
      record.integrations !== undefined &&
      (!Array.isArray(record.integrations) || record.integrations.some((name) => typeof name !== "string"))
    ) {
      throw new EvalDataError(shown, `${where}.integrations must be an array of strings`, { hint });
    }
    if (
      record.passage !== undefined &&
      (typeof record.passage !== "string" || record.passage.trim() === "")
    ) {
      throw new EvalDataError(shown, `${where}.passage must be a non-empty string`, { hint });
    }
    const id = `q${index + 1}`;
    queries.push({
      id,
      text: record.question,
      ...(record.integrations ? { integrations: record.integrations as string[] } : {}),
      ...(record.passage !== undefined ? { passage: record.passage as string } : {}),
    });
    qrels.set(id, new Map((record.expected as string[]).map((entryId) => [entryId, 1])));
  });
  return { queries, qrels };
}

/**
 * Reads queries from a BEIR `queries.jsonl` or a question file, decided by content: `[` starts a question file. A
 * whole file that is one JSON object other than a BEIR query (`{"_id", "text"}`) is a question file written wrong
 * (a single question, or questions under a key) and is reported as such, not parsed as BEIR lines.
 */
export async function readQueries(path: string, shown = path): Promise<LoadedQueries> {
  const text = await readText(path, shown);
  const start = text.trimStart();
  if (start.startsWith("[")) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const { line, column, reason } = locateJsonSyntaxError(text, error);
      throw new EvalDataError(shown, `malformed JSON at column ${column}: ${reason}`, {
        line,
        hint: "fix the JSON syntax there: a missing comma or quote, a trailing comma, a comment",
      });
    }
    return { ...parseQuestions(value, shown), format: "questions" };
  }
  if (start.startsWith("{")) {
    let whole: unknown;
    try {
      whole = JSON.parse(text);
    } catch {
      whole = undefined; // Several lines of JSON objects: BEIR queries.jsonl.
    }
    if (whole !== null && typeof whole === "object" && !Array.isArray(whole) && !("_id" in whole)) {
      const keys = Object.keys(whole);
      const single = "question" in whole || "expected" in whole;
      throw new EvalDataError(
        shown,
        single
          ? "is a single question object; a question file is a JSON array of questions"
          : `is a JSON object (keys: ${keys.slice(0, 5).join(", ") || "none"}); a question file is a JSON array of questions`,
        {
          hint: single
            ? 'wrap it in [ ]: [{"question": "...", "expected": ["entry.id"]}]'
            : 'a question file is a JSON array like [{"question": "...", "expected": ["entry.id"]}]; BEIR queries are queries.jsonl lines {"_id", "text"}',
        },
      );
    }
  }
  return { queries: parseBeirQueries(text, shown), format: "beir" };
}

/** Parses qrels text: BEIR TSV (3 columns, optional header) or TREC (4 columns). */
export function parseQrels(text: string, shown: string): EvalQrels {
  const qrels: EvalQrels = new Map();
  const lines = text.split(/\r?\n/);
  lines.forEach((line, index) => {
    if (line.trim() === "") return;
    const columns = line.trim().split(/\s+/);
    if (index === 0 && columns.length === 3 && Number.isNaN(Number(columns[2]))) return; // header
    let queryId: string;
    let documentId: string;
    let grade: string;
    if (columns.length === 3) [queryId, documentId, grade] = columns as [string, string, string];
    else if (columns.length === 4)
      [queryId, , documentId, grade] = columns as [string, string, string, string];
    else {
      throw new EvalDataError(shown, `expected 3 (BEIR) or 4 (TREC) columns, got ${columns.length}`, {
        line: index + 1,
        hint: "BEIR qrels: query-id<TAB>corpus-id<TAB>score; TREC: qid 0 docid grade",
      });
    }
    const value = Number(grade);
    if (!Number.isFinite(value)) {
      throw new EvalDataError(shown, `grade must be a number, got ${JSON.stringify(grade)}`, {
        line: index + 1,
      });
    }
    let judgments = qrels.get(queryId);
    if (!judgments) {
      judgments = new Map();
      qrels.set(queryId, judgments);
    }
    judgments.set(documentId, value);
  });
  if (qrels.size === 0) throw new EvalDataError(shown, "no judgments found");
  return qrels;
}

/** Reads a qrels file. */
export async function readQrels(path: string, shown = path): Promise<EvalQrels> {
  return parseQrels(await readText(path, shown), shown);
}
