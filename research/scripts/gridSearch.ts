/**
 * A small staged grid search for k1, b, field weights, scoring mode and the exact-title boost, on the training
 * splits only (scifact train, nfcorpus dev), with the English analyzer. The objective is the mean nDCG@10 of the
 * two training splits, so one configuration serves both (and cranfield, which has no training split); the best
 * configuration of each split alone is reported too.
 *
 * Stages (each starts from the best configuration so far):
 * 1. k1 × b, for each scoring mode, at weights title 1 / summary 0 / body 1 (Lucene multifield);
 * 2. title × summary weight (body 1), for each scoring mode at its best k1 and b;
 * 3. k1 × b again, around the best, at the best weights;
 * 4. the exact-title boost (aliases do not occur in BEIR).
 *
 * Run: `node --import tsx research/scripts/gridSearch.ts [--out research/results/grid-search.md]`; with `--out`, the
 * best configuration is also written next to it as `best-config.json` (read by `datasets.ts`).
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { EvalCollection } from "../../src/eval/collection.js";
import { evaluateConfigurations } from "../../src/eval/run.js";
import type { KnowledgeRetrievalConfig, KnowledgeScoringMode } from "../../src/types/knowledge.js";
import { figure, isMain, loadDataset, markdownTable } from "./common.js";

type Point = {
  scoring: KnowledgeScoringMode;
  k1: number;
  b: number;
  title: number;
  summary: number;
  exactBoost: number;
};

type Scored = Point & { scifact: number; nfcorpus: number; mean: number; stage: number };

/** The retrieval settings of a grid point. */
export function settingsOf(point: Point): KnowledgeRetrievalConfig {
  return {
    analyzer: "english",
    scoring: point.scoring,
    k1: point.k1,
    b: point.b,
    exactBoost: point.exactBoost,
    fieldWeights: { title: point.title, summary: point.summary, body: 1 },
  };
}

function keyOf(point: Point): string {
  return JSON.stringify([point.scoring, point.k1, point.b, point.title, point.summary, point.exactBoost]);
}

/** Runs the search and returns the Markdown report plus every scored point. */
export async function gridSearch(log: (line: string) => void = console.error): Promise<{
  markdown: string;
  points: Scored[];
  best: Scored;
}> {
  const [scifact, nfcorpus] = await Promise.all([
    loadDataset("scifact", "train"),
    loadDataset("nfcorpus", "dev"),
  ]);
  const scored = new Map<string, Scored>();
  const ndcg = (collection: EvalCollection, point: Point): number =>
    evaluateConfigurations(
      collection.entries,
      collection.queries,
      collection.qrels,
      [{ name: "grid", settings: { retrieval: settingsOf(point) } }],
      { ignoreIdenticalIds: true, measureProduction: false },
    ).configurations[0]!.metrics.ndcg10;
  const score = (point: Point, stage: number): Scored => {
    const key = keyOf(point);
    const known = scored.get(key);
    if (known) return known;
    const scifactValue = ndcg(scifact, point);
    const nfcorpusValue = ndcg(nfcorpus, point);
    const result = {
      ...point,
      scifact: scifactValue,
      nfcorpus: nfcorpusValue,
      mean: (scifactValue + nfcorpusValue) / 2,
      stage,
    };
    scored.set(key, result);
    log(
      `stage ${stage} ${point.scoring} k1=${point.k1} b=${point.b} title=${point.title} summary=${point.summary} exact=${point.exactBoost}: scifact ${figure(scifactValue)} nfcorpus ${figure(nfcorpusValue)} mean ${figure(result.mean)}`,
    );
    return result;
  };
  const bestOf = (points: Scored[]): Scored =>
    points.reduce((best, point) => (point.mean > best.mean ? point : best));

  const bestPerScoring: Scored[] = [];
  for (const scoring of ["sum", "bm25f"] as const) {
    // Stage 1.
    const stage1: Scored[] = [];
    for (const k1 of [0.6, 0.9, 1.2, 1.5, 2.0]) {
      for (const b of [0.3, 0.4, 0.5, 0.65, 0.8]) {
        stage1.push(score({ scoring, k1, b, title: 1, summary: 0, exactBoost: 0 }, 1));
      }
    }
    let best = bestOf(stage1);
    // Stage 2.
    const stage2: Scored[] = [best];
    for (const title of [0.5, 1, 2, 3]) {
      for (const summary of [0, 0.5, 1]) {
        stage2.push(score({ ...best, title, summary }, 2));
      }
    }
    best = bestOf(stage2);
    // Stage 3.
    const stage3: Scored[] = [best];
    for (const k1 of [best.k1 - 0.3, best.k1, best.k1 + 0.3]) {
      for (const b of [best.b - 0.1, best.b, best.b + 0.1]) {
        if (k1 <= 0 || b < 0 || b > 1) continue;
        stage3.push(score({ ...best, k1: round(k1), b: round(b) }, 3));
      }
    }
    bestPerScoring.push(bestOf(stage3));
  }
  // Stage 4.
  let best = bestOf(bestPerScoring);
  const stage4: Scored[] = [best];
  for (const exactBoost of [1, 3, 10, 100]) stage4.push(score({ ...best, exactBoost }, 4));
  best = bestOf(stage4);

  const points = [...scored.values()];
  const bestScifact = points.reduce((top, point) => (point.scifact > top.scifact ? point : top));
  const bestNfcorpus = points.reduce((top, point) => (point.nfcorpus > top.nfcorpus ? point : top));
  const describe = (point: Scored) => [
    point.scoring,
    String(point.k1),
    String(point.b),
    String(point.title),
    String(point.summary),
    String(point.exactBoost),
    figure(point.scifact),
    figure(point.nfcorpus),
    figure(point.mean),
  ];
  const header = [
    "scoring",
    "k1",
    "b",
    "title",
    "summary",
    "exactBoost",
    "scifact train",
    "nfcorpus dev",
    "mean",
  ];
  const sorted = points.slice().sort((left, right) => right.mean - left.mean);
  const markdown = [
    "# Grid search on the training splits (English analyzer; nDCG@10)",
    "",
    "Command: `node --import tsx research/scripts/gridSearch.ts --out research/results/grid-search.md`",
    "",
    "Body weight 1 throughout; aliases and keywords are empty in BEIR. Objective: mean nDCG@10 of scifact train",
    "and nfcorpus dev. The test splits were not looked at.",
    "",
    "## Best",
    "",
    markdownTable(
      ["", ...header],
      [
        ["best on both (objective)", ...describe(best)],
        ["best on scifact train alone", ...describe(bestScifact)],
        ["best on nfcorpus dev alone", ...describe(bestNfcorpus)],
        ["best with scoring sum", ...describe(bestPerScoring[0]!)],
        ["best with scoring bm25f", ...describe(bestPerScoring[1]!)],
      ],
    ),
    "",
    "Best configuration as `--config` JSON:",
    "",
    "```json",
    JSON.stringify({ retrieval: settingsOf(best) }),
    "```",
    "",
    `## Every evaluated point (${points.length}), best first`,
    "",
    markdownTable(
      ["stage", ...header],
      sorted.map((point) => [String(point.stage), ...describe(point)]),
    ),
    "",
  ].join("\n");
  return { markdown, points, best };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

if (isMain(import.meta.url)) {
  const outIndex = process.argv.indexOf("--out");
  const { markdown, best } = await gridSearch();
  const out = outIndex > 0 ? process.argv[outIndex + 1] : undefined;
  if (out) {
    writeFileSync(out, markdown);
    const config = { name: "tuned", retrieval: settingsOf(best) };
    writeFileSync(join(dirname(out), "best-config.json"), `${JSON.stringify(config, null, 2)}\n`);
  }
  process.stdout.write(markdown);
}
