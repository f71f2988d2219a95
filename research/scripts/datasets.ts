/**
 * The retrieval-quality figures: every metric, latency and confidence calibration for a fixed set of
 * configurations on the shared collections' test splits (scifact, nfcorpus, cranfield) and on the example
 * knowledge base's questions. The tuned configuration comes from the grid search on the training splits
 * (`research/results/best-config.json`, written by `gridSearch.ts`); the test splits are only measured here.
 *
 * Run: `npm run eval:datasets` (= `node --import tsx research/scripts/datasets.ts --out research/results/datasets.md`);
 * `--reports <dir>` also writes one HTML report per collection; `--only <name,...>` limits the collections.
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type EvalCollection, loadEvalCollection } from "../../src/eval/collection.js";
import { renderHtmlReport } from "../../src/eval/report.js";
import {
  CONFIDENCE_CLASSES,
  type EvalConfiguration,
  type EvalConfigurationResult,
  evaluateConfigurations,
} from "../../src/eval/run.js";
import type { KnowledgeConfidenceRule, KnowledgeRetrievalConfig } from "../../src/types/knowledge.js";
import { figure, isMain, loadDataset, markdownTable, REPOSITORY_ROOT } from "./common.js";

const RESULTS = join(REPOSITORY_ROOT, "research", "results");

/** Lucene/Pyserini multifield BM25 as our settings: English analyzer, k1 0.9, b 0.4, title and body weight 1. */
export const LUCENE_MULTIFIELD: KnowledgeRetrievalConfig = {
  analyzer: "english",
  k1: 0.9,
  b: 0.4,
  fieldWeights: { title: 1, aliases: 1, keywords: 1, summary: 0, body: 1 },
  exactBoost: 0,
  aliasBoost: 0,
};

/** The tuned configuration found on the training splits. */
export function tunedRetrieval(): KnowledgeRetrievalConfig {
  const path = join(RESULTS, "best-config.json");
  if (!existsSync(path))
    throw new Error(`${path} is missing; run research/scripts/gridSearch.ts --out first`);
  const { retrieval } = JSON.parse(readFileSync(path, "utf8")) as { retrieval: KnowledgeRetrievalConfig };
  return retrieval;
}

/**
 * The recommended configuration: the tuned one with exactBoost 10 instead of 0 (exact boosts 0, 1, 3 and 10 tie on
 * the training splits; 10 is the largest of them, so an exact id or title phrase still wins close calls in a
 * curated knowledge base) and the calibrated confidence rule.
 */
export function recommendedRetrieval(): KnowledgeRetrievalConfig {
  return { ...tunedRetrieval(), exactBoost: 10, confidenceRule: "calibrated" };
}

/** The configurations measured on every collection. */
export function figureConfigurations(): EvalConfiguration[] {
  const tuned = tunedRetrieval();
  return [
    { name: "default", settings: {} },
    { name: "default, exactBoost 0", settings: { retrieval: { exactBoost: 0 } } },
    { name: "english", settings: { retrieval: { analyzer: "english" } } },
    { name: "english, exactBoost 0", settings: { retrieval: { analyzer: "english", exactBoost: 0 } } },
    { name: "bm25f", settings: { retrieval: { scoring: "bm25f" } } },
    { name: "bm25f, exactBoost 0", settings: { retrieval: { scoring: "bm25f", exactBoost: 0 } } },
    { name: "lucene multifield", settings: { retrieval: LUCENE_MULTIFIELD } },
    { name: "tuned", settings: { retrieval: tuned } },
    {
      name: "tuned, default boosts",
      settings: { retrieval: { ...tuned, exactBoost: undefined, aliasBoost: undefined } },
    },
    { name: "recommended", settings: { retrieval: recommendedRetrieval() } },
  ];
}

type Collection = { name: string; load: () => Promise<EvalCollection> };

const COLLECTIONS: Collection[] = [
  { name: "scifact", load: () => loadDataset("scifact", "test") },
  { name: "nfcorpus", load: () => loadDataset("nfcorpus", "test") },
  { name: "cranfield", load: () => loadDataset("cranfield", "test") },
  {
    name: "example-kb",
    load: () => loadEvalCollection(join(REPOSITORY_ROOT, "examples", "knowledge-base")),
  },
];

function calibrationCells(result: EvalConfigurationResult, rule: KnowledgeConfidenceRule): string {
  const { calibration } = result.byRule[rule];
  return CONFIDENCE_CLASSES.filter((name) => name !== "none" || calibration.none.count > 0)
    .map((name) => {
      const cell = calibration[name];
      return `${name[0]} ${cell.count === 0 ? "–" : `${cell.relevantTop}/${cell.count}`}`;
    })
    .join(" · ");
}

function auc(value: number | null): string {
  return value === null ? "–" : value.toFixed(3);
}

/** Runs every configuration on the chosen collections; returns the Markdown report. */
export async function measureDatasets(
  options: { only?: string[]; reports?: string; log?: (line: string) => void } = {},
): Promise<{ markdown: string; summary: unknown[] }> {
  const log = options.log ?? console.error;
  const configurations = figureConfigurations();
  const sections: string[] = [];
  const summary: unknown[] = [];
  for (const collection of COLLECTIONS) {
    if (options.only && !options.only.includes(collection.name)) continue;
    log(`${collection.name}: loading`);
    const loaded = await collection.load();
    const report = evaluateConfigurations(loaded.entries, loaded.queries, loaded.qrels, configurations, {
      ignoreIdenticalIds: loaded.beir,
      onProgress: ({ configuration, done, total }) => {
        if (done === 0) log(`${collection.name}: ${configuration} (${total} queries)`);
      },
    });
    const rows = report.configurations.map((result) => [
      result.name,
      figure(result.metrics.ndcg10),
      figure(result.metrics.recall10),
      figure(result.metrics.recall100),
      figure(result.metrics.mrr10),
      result.latency.p50.toFixed(3),
      result.latency.p99.toFixed(3),
      calibrationCells(result, "seed"),
      auc(result.byRule.seed.discrimination),
      calibrationCells(result, "calibrated"),
      auc(result.byRule.calibrated.discrimination),
    ]);
    sections.push(
      `## ${collection.name} (${report.queryCount} judged queries, ${report.entries} entries${loaded.beir ? ", test split, query id removed from its own results" : ", questions.json"})`,
      "",
      markdownTable(
        [
          "configuration",
          "nDCG@10",
          "R@10",
          "R@100",
          "MRR@10",
          "p50 ms",
          "p99 ms",
          "seed rule: relevant top / queries (h·m·l)",
          "seed AUC",
          "calibrated rule (h·m·l)",
          "calibrated AUC",
        ],
        rows,
      ),
      "",
    );
    summary.push({
      collection: collection.name,
      queries: report.queryCount,
      entries: report.entries,
      configurations: report.configurations.map((result) => ({
        name: result.name,
        settings: result.settings,
        metrics: result.metrics,
        latency: result.latency,
        byRule: result.byRule,
      })),
    });
    if (options.reports) {
      mkdirSync(options.reports, { recursive: true });
      writeFileSync(
        join(options.reports, `${collection.name}.html`),
        renderHtmlReport(report, {
          knowledgeBase: collection.name,
          queriesFile: loaded.queriesFile,
          qrelsFile: loaded.qrelsFile,
          command: "npm run eval:datasets -- --reports <dir>",
        }),
      );
    }
  }
  const markdown = [
    "# Retrieval quality on the shared collections and the example knowledge base",
    "",
    "Command: `npm run eval:datasets` (writes this file). Latency: one `retrieve()` with the configuration's own",
    "limits, after a warm-up, on the machine that produced the file (shared, 2 cores): compare within a table only.",
    "Calibration: for each class (h = high, m = medium, l = low), queries whose top result is judged relevant /",
    "queries in the class; AUC = chance that a query with a relevant top result got a higher class than one without",
    "(0.5 = chance). Both confidence rules are classified on the same candidates.",
    "",
    "Configurations (over the defaults):",
    "",
    ...configurations.map(
      (configuration) => `- ${configuration.name}: \`${JSON.stringify(configuration.settings)}\``,
    ),
    "",
    ...sections,
  ].join("\n");
  return { markdown, summary };
}

if (isMain(import.meta.url)) {
  const argument = (flag: string) => {
    const index = process.argv.indexOf(flag);
    return index > 0 ? process.argv[index + 1] : undefined;
  };
  const out = argument("--out");
  const reports = argument("--reports");
  const only = argument("--only")?.split(",");
  const { markdown, summary } = await measureDatasets({
    ...(only ? { only } : {}),
    ...(reports ? { reports } : {}),
  });
  if (out) {
    writeFileSync(out, markdown);
    writeFileSync(out.replace(/\.md$/, ".json"), `${JSON.stringify(summary, null, 2)}\n`);
  }
  process.stdout.write(markdown);
}
