/**
 * BEIR collections from the shared dataset folder, read in place (never copied): each corpus document becomes one
 * entry (title → title, first sentence of the text → summary, text → body) and the test split's queries become
 * the benchmark queries.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { KnowledgeEntryInput } from "../src/types/knowledge.js";
import type { BenchQuery } from "./workload.js";

/** A loaded collection: entries in corpus order, test queries in file order, warm-up queries from other splits. */
export type DatasetWorkload = {
  entries: KnowledgeEntryInput[];
  queries: BenchQuery[];
  warmupQueries: BenchQuery[];
};

type CorpusLine = { _id: string; title?: string; text?: string };
type QueryLine = { _id: string; text: string };

function readJsonLines<T>(path: string): T[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}

/** The first sentence: text up to the first `.`, `!` or `?` followed by whitespace (or all of it). */
export function firstSentence(text: string): string {
  const match = /[.!?](\s|$)/.exec(text);
  return match === null ? text.trim() : text.slice(0, match.index + 1).trim();
}

/** Reads `<root>/<name>/corpus.jsonl`, `queries.jsonl` and `qrels/test.tsv`. */
export function loadDataset(root: string, name: string): DatasetWorkload {
  const folder = join(root, name);
  const corpus = readJsonLines<CorpusLine>(join(folder, "corpus.jsonl"));
  const entries: KnowledgeEntryInput[] = corpus.map((document) => {
    const text = document.text ?? "";
    const title = document.title?.trim() ? document.title : firstSentence(text) || document._id;
    const summary = firstSentence(text) || title;
    return { id: document._id, title, summary, body: text, domain: name, integrations: [] };
  });
  const testIds = new Set(
    readFileSync(join(folder, "qrels", "test.tsv"), "utf8")
      .split("\n")
      .slice(1)
      .map((line) => line.split("\t")[0]!)
      .filter((id) => id !== ""),
  );
  const toQuery = (line: QueryLine): BenchQuery => ({
    query: line.text,
    recentTurns: [],
    enabledIntegrations: [],
  });
  const allQueries = readJsonLines<QueryLine>(join(folder, "queries.jsonl"));
  const queries = allQueries.filter((line) => testIds.has(line._id)).map(toQuery);
  const others = allQueries.filter((line) => !testIds.has(line._id)).map(toQuery);
  return { entries, queries, warmupQueries: (others.length > 0 ? others : queries).slice(0, 50) };
}
