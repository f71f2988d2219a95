/**
 * A BEIR collection's `corpus.jsonl` read as one catalog.
 */
import { createReadStream } from "node:fs";
import { basename, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { manifestToSources } from "../index.js";
import { KnowledgeCompileError } from "./errors.js";
import { displayPath, statOrThrow } from "./fileText.js";
import { assemble } from "./manifest.js";
import type { KnowledgeCompileOptions, LoadedKnowledgeBase, PendingEntry } from "./types.js";

/** A BEIR summary is the first sentence of the text, capped so one run-on "sentence" stays a summary. */
const BEIR_SUMMARY_MAX_CHARS = 600;

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
