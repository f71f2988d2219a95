/**
 * Chooses the English analyzer's stemmer by measurement, on the training splits only (scifact train, nfcorpus
 * dev): no stemming, the S (plural) stemmer, Porter (1980) and Porter2, with and without stop words, under two
 * parameter settings (the engine defaults, and Lucene-like multifield BM25: k1 0.9, b 0.4, title and body weight 1,
 * summary 0). Exact and alias boosts are off, so only the BM25 tokens differ.
 *
 * Candidates are compared by analyzing the corpus and the queries up front (each field becomes its analyzed
 * tokens joined by spaces, which the tokenizer reproduces unchanged) and indexing with analyzer "none"; the
 * Porter row is cross-checked against the engine's own `analyzer: "english"`.
 *
 * Run: `node --import tsx research/scripts/stemmers.ts [--out research/results/stemmers.md]`
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import type { EvalQuery } from "../../src/eval/data.js";
import { type EvalConfigurationSettings, evaluateConfigurations } from "../../src/eval/run.js";
import {
  createEnglishAnalyzer,
  ENGLISH_STOP_WORDS,
  porterStem,
  type TokenAnalyzer,
} from "../../src/knowledge/analyzer.js";
import { tokenize } from "../../src/knowledge/normalize.js";
import type { NormalizedKnowledgeEntry } from "../../src/types/knowledge.js";
import { porter2Stem, sStem } from "../stemmers.js";
import { figure, isMain, loadDataset, markdownTable } from "./common.js";

const NO_STOP_WORDS: ReadonlySet<string> = new Set();
const LUCENE_STOP_WORDS: ReadonlySet<string> = new Set(
  [...ENGLISH_STOP_WORDS].filter((word) => word !== "s"),
);

/** The analyzers compared. */
export const CANDIDATES: { name: string; analyzer: TokenAnalyzer | null }[] = [
  { name: "none (tokenizer only)", analyzer: null },
  { name: "stop words only", analyzer: createEnglishAnalyzer({ stem: (word) => word }) },
  { name: "S stemmer + stop words", analyzer: createEnglishAnalyzer({ stem: sStem }) },
  { name: "Porter, no stop words", analyzer: createEnglishAnalyzer({ stopWords: NO_STOP_WORDS }) },
  {
    name: "Porter + Lucene 33 stop words",
    analyzer: createEnglishAnalyzer({ stopWords: LUCENE_STOP_WORDS }),
  },
  { name: "Porter + stop words (engine)", analyzer: createEnglishAnalyzer({ stem: porterStem }) },
  { name: "Porter2 + stop words", analyzer: createEnglishAnalyzer({ stem: porter2Stem }) },
];

const SETTINGS: { name: string; settings: EvalConfigurationSettings }[] = [
  { name: "defaults", settings: { retrieval: { exactBoost: 0, aliasBoost: 0 } } },
  {
    name: "multifield k1 0.9 b 0.4",
    settings: {
      retrieval: {
        exactBoost: 0,
        aliasBoost: 0,
        k1: 0.9,
        b: 0.4,
        fieldWeights: { title: 1, summary: 0, body: 1 },
      },
    },
  },
];

function analyzeText(analyzer: TokenAnalyzer | null, text: string): string {
  const tokens = tokenize(text);
  return (analyzer ? analyzer(tokens) : tokens).join(" ");
}

function analyzeEntries(
  entries: readonly NormalizedKnowledgeEntry[],
  analyzer: TokenAnalyzer | null,
): NormalizedKnowledgeEntry[] {
  if (!analyzer) return entries.slice();
  return entries.map((entry) => ({
    ...entry,
    title: analyzeText(analyzer, entry.title),
    summary: analyzeText(analyzer, entry.summary),
    body: analyzeText(analyzer, entry.body),
    aliases: entry.aliases.map((alias) => analyzeText(analyzer, alias)),
    keywords: entry.keywords.map((keyword) => analyzeText(analyzer, keyword)),
  }));
}

/** Runs the comparison and returns the Markdown report. */
export async function compareStemmers(log: (line: string) => void = console.error): Promise<string> {
  const splits = [
    { dataset: "scifact", split: "train" },
    { dataset: "nfcorpus", split: "dev" },
  ];
  const rows: string[][] = [];
  const crossChecks: string[] = [];
  const collections = await Promise.all(splits.map(({ dataset, split }) => loadDataset(dataset, split)));
  for (const candidate of CANDIDATES) {
    const row = [candidate.name];
    for (const [index, collection] of collections.entries()) {
      const entries = analyzeEntries(collection.entries, candidate.analyzer);
      const queries: EvalQuery[] = collection.queries.map((query) => ({
        ...query,
        text: analyzeText(candidate.analyzer, query.text),
      }));
      const report = evaluateConfigurations(
        entries,
        queries,
        collection.qrels,
        SETTINGS.map(({ name, settings }) => ({ name, settings })),
        { ignoreIdenticalIds: true, warmup: 0 },
      );
      for (const result of report.configurations) row.push(figure(result.metrics.ndcg10));
      log(`${candidate.name} · ${splits[index]!.dataset}: ${row.slice(-SETTINGS.length).join(" / ")}`);
    }
    rows.push(row);
  }
  // Cross-check: the engine's analyzer on raw text must give the Porter row's numbers.
  for (const collection of collections) {
    const report = evaluateConfigurations(
      collection.entries,
      collection.queries,
      collection.qrels,
      SETTINGS.map(({ name, settings }) => ({
        name,
        settings: { ...settings, retrieval: { ...settings.retrieval, analyzer: "english" as const } },
      })),
      { ignoreIdenticalIds: true, warmup: 0 },
    );
    crossChecks.push(report.configurations.map((result) => figure(result.metrics.ndcg10)).join(" / "));
  }
  const header = ["analyzer"];
  for (const { dataset, split } of splits) {
    for (const { name } of SETTINGS) header.push(`${dataset} ${split}: ${name}`);
  }
  return [
    '# Stemmer choice for `analyzer: "english"` (nDCG@10, training splits only)',
    "",
    "Command: `node --import tsx research/scripts/stemmers.ts --out research/results/stemmers.md`",
    "",
    'Exact and alias boosts off. "defaults" = k1 1.5, b 0.75, weights title 5 / summary 3 / body 1;',
    '"multifield" = k1 0.9, b 0.4, title 1, summary 0, body 1 (Lucene/Pyserini multifield BM25).',
    "Stop words (engine) = Lucene's 33 English stop words plus the possessive fragment `s`.",
    "",
    markdownTable(header, rows),
    "",
    `Cross-check, engine \`analyzer: "english"\` on raw text (scifact train, nfcorpus dev): ${crossChecks.join("; ")}`,
    "",
  ].join("\n");
}

if (isMain(import.meta.url)) {
  const outIndex = process.argv.indexOf("--out");
  const report = await compareStemmers();
  if (outIndex > 0 && process.argv[outIndex + 1]) writeFileSync(process.argv[outIndex + 1]!, report);
  process.stdout.write(report);
}
