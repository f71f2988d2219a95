/**
 * How the calibrated confidence rule's thresholds were chosen, on the training splits only (scifact train,
 * nfcorpus dev), for the default, English and tuned configurations: the class AUC (how well the classes separate
 * queries whose top result is relevant from the others) of the seed rule and of the calibrated rule with other
 * thresholds. The shipped thresholds are checked to reproduce the engine's `classifyCalibratedConfidence`.
 *
 * Run: `node --import tsx research/scripts/confidence.ts --out research/results/confidence.md`
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { discrimination } from "../../src/eval/run.js";
import { resolveRetrieval } from "../../src/knowledge/config.js";
import { buildIndexSnapshot } from "../../src/knowledge/knowledgeIndex.js";
import { phraseWordCount } from "../../src/knowledge/normalize.js";
import {
  CALIBRATED_HIGH_LEAD,
  CALIBRATED_HIGH_PHRASE_WORDS,
  CALIBRATED_MEDIUM_LEXICAL_LEAD,
  classifyConfidence,
  retrieve,
} from "../../src/knowledge/retrieval.js";
import type {
  KnowledgeRetrievalConfidence,
  KnowledgeRetrievalConfig,
  KnowledgeScoredCandidate,
} from "../../src/types/knowledge.js";
import { isMain, loadDataset, markdownTable } from "./common.js";
import { tunedRetrieval } from "./datasets.js";

type Thresholds = { phraseWords: number; highLead: number; mediumLead: number };

/** The calibrated rule with free thresholds (the engine's rule is this with the shipped constants). */
export function classifyWith(
  candidates: readonly KnowledgeScoredCandidate[],
  thresholds: Thresholds,
): KnowledgeRetrievalConfidence {
  const top = candidates[0];
  if (!top) return "none";
  const second = candidates[1];
  let words = 0;
  if (top.exact || top.alias)
    for (const phrase of top.matchedPhrases) words = Math.max(words, phraseWordCount(phrase));
  const phrase = words >= thresholds.phraseWords;
  if (phrase && (!second || top.score >= thresholds.highLead * second.score)) return "high";
  if ((top.lexical > 0 && (!second || top.lexical >= thresholds.mediumLead * second.lexical)) || phrase) {
    return "medium";
  }
  return "low";
}

const SHIPPED: Thresholds = {
  phraseWords: CALIBRATED_HIGH_PHRASE_WORDS,
  highLead: CALIBRATED_HIGH_LEAD,
  mediumLead: CALIBRATED_MEDIUM_LEXICAL_LEAD,
};

/** Runs the comparison; returns the Markdown report. */
export async function compareConfidenceRules(log: (line: string) => void = console.error): Promise<string> {
  const splits = [
    { dataset: "scifact", split: "train" },
    { dataset: "nfcorpus", split: "dev" },
  ];
  const configurations: { name: string; retrieval: KnowledgeRetrievalConfig }[] = [
    { name: "default", retrieval: {} },
    { name: "english", retrieval: { analyzer: "english" } },
    { name: "tuned", retrieval: tunedRetrieval() },
  ];
  const variants: { name: string; thresholds: Thresholds }[] = [];
  for (const phraseWords of [1, 2, 3]) {
    for (const highLead of [1, 1.2, 1.5]) {
      for (const mediumLead of [1.1, 1.2, 1.3, 1.5, 2]) {
        variants.push({
          name: `words ≥ ${phraseWords}, high lead ${highLead}, medium lexical lead ${mediumLead}`,
          thresholds: { phraseWords, highLead, mediumLead },
        });
      }
    }
  }
  // Per (split, configuration): each query's candidates and whether its top result is relevant.
  const cases: {
    column: string;
    queries: { candidates: KnowledgeScoredCandidate[]; relevant: boolean }[];
  }[] = [];
  for (const { dataset, split } of splits) {
    const collection = await loadDataset(dataset, split);
    for (const configuration of configurations) {
      const resolved = resolveRetrieval(configuration.retrieval);
      const snapshot = buildIndexSnapshot(collection.entries, {
        fieldWeights: resolved.fieldWeights,
        ...(resolved.k1 !== undefined ? { k1: resolved.k1 } : {}),
        ...(resolved.b !== undefined ? { b: resolved.b } : {}),
        ...(resolved.analyzer !== undefined ? { analyzer: resolved.analyzer } : {}),
        ...(resolved.scoring !== undefined ? { scoring: resolved.scoring } : {}),
      });
      const queries: { candidates: KnowledgeScoredCandidate[]; relevant: boolean }[] = [];
      for (const query of collection.queries) {
        const judgments = collection.qrels.get(query.id);
        if (!judgments) continue;
        const selection = retrieve(
          snapshot,
          { query: query.text, recentTurns: [], enabledIntegrations: [] },
          resolved,
        );
        const candidates = selection.candidates.filter((candidate) => candidate.id !== query.id);
        const top = candidates[0];
        // The shipped thresholds must reproduce the engine's rule exactly.
        if (classifyWith(candidates, SHIPPED) !== classifyConfidence(candidates, "calibrated")) {
          throw new Error(`classifyWith disagrees with the engine on ${dataset} query ${query.id}`);
        }
        queries.push({ candidates, relevant: top !== undefined && (judgments.get(top.id) ?? 0) > 0 });
      }
      cases.push({ column: `${dataset} ${split}: ${configuration.name}`, queries });
      log(`${dataset} ${split} ${configuration.name}: ${queries.length} queries`);
    }
  }
  const aucOf = (classify: (candidates: KnowledgeScoredCandidate[]) => KnowledgeRetrievalConfidence) =>
    cases.map(({ queries }) =>
      discrimination(
        queries.map((query) => ({ confidence: classify(query.candidates), topRelevant: query.relevant })),
      ),
    );
  const rows: { name: string; values: (number | null)[]; mean: number }[] = [];
  const add = (name: string, values: (number | null)[]) => {
    const present = values.filter((value): value is number => value !== null);
    rows.push({
      name,
      values,
      mean: present.reduce((sum, value) => sum + value, 0) / Math.max(1, present.length),
    });
  };
  add(
    "seed rule",
    aucOf((candidates) => classifyConfidence(candidates, "seed")),
  );
  for (const variant of variants)
    add(
      variant.name,
      aucOf((candidates) => classifyWith(candidates, variant.thresholds)),
    );
  const shipped = rows.find(
    (row) =>
      row.name ===
      `words ≥ ${SHIPPED.phraseWords}, high lead ${SHIPPED.highLead}, medium lexical lead ${SHIPPED.mediumLead}`,
  )!;
  const format = (value: number | null) => (value === null ? "–" : value.toFixed(3));
  const sorted = rows.slice().sort((left, right) => right.mean - left.mean);
  return [
    "# Confidence rule: class AUC on the training splits",
    "",
    "Command: `node --import tsx research/scripts/confidence.ts --out research/results/confidence.md`",
    "",
    "AUC = the chance that a query whose top result is relevant got a higher class (none < low < medium < high) than",
    "a query whose top result is not, ties counting half; 0.5 is chance. Configurations: the defaults, the English",
    "analyzer, and the tuned configuration (`best-config.json`). Production limits (24 candidates).",
    "",
    `Shipped thresholds: phrase of ≥ ${SHIPPED.phraseWords} words with a ${SHIPPED.highLead}× lead → high; lexical lead ≥ ${SHIPPED.mediumLead}× → medium.`,
    "",
    markdownTable(
      ["rule", ...cases.map((entry) => entry.column), "mean"],
      [
        ["seed rule", ...rows[0]!.values.map(format), format(rows[0]!.mean)],
        [`calibrated (shipped)`, ...shipped.values.map(format), format(shipped.mean)],
      ],
    ),
    "",
    "## Every threshold combination, best mean first",
    "",
    markdownTable(
      ["rule", ...cases.map((entry) => entry.column), "mean"],
      sorted.map((row) => [row.name, ...row.values.map(format), format(row.mean)]),
    ),
    "",
  ].join("\n");
}

if (isMain(import.meta.url)) {
  const outIndex = process.argv.indexOf("--out");
  const markdown = await compareConfidenceRules();
  if (outIndex > 0 && process.argv[outIndex + 1]) writeFileSync(process.argv[outIndex + 1]!, markdown);
  process.stdout.write(markdown);
}
