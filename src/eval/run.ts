/**
 * Runs evaluation queries through the engine's own retrieval for one or more configurations and measures ranking
 * quality, latency and confidence calibration.
 *
 * Per query and configuration, two retrievals run on the same snapshot:
 * - a **ranking** retrieval deep enough for the metrics (`candidateLimit` and `resultLimit` = depth + 1, so the
 *   lexical search returns the top 2 × (depth + 1); no relation expansion). The ranked list is the trimmed
 *   candidates, exactly in the engine's order (boosts included), minus the query's own id when
 *   `ignoreIdenticalIds` is set (the BEIR convention), cut to `depth`;
 * - a **production** retrieval with the configuration's own limits (what a host would run): its latency (timed
 *   around `retrieve`, and around `retrieve` + context assembly for the whole turn) and its confidence class and
 *   top result feed the latency and calibration figures, and the block it renders (exactly what `ground()` hands
 *   the model: the same `retrieve` and `assembleKnowledgeContext` calls with the configuration's context settings)
 *   feeds the block figures of `./block.ts` (entries, tokens, precision, capped recall, hit share, passages) and
 *   the list of failing queries with the reason each relevant entry is missing.
 *
 * @module
 */

import { performance } from "node:perf_hooks";
import { resolveGroundingConfiguration } from "../knowledge/config.js";
import { validateGroundingConfig } from "../knowledge/configValidation.js";
import { assembleKnowledgeContext, renderEntry } from "../knowledge/context.js";
import { hasErrorMarker } from "../knowledge/errors.js";
import { buildIndexSnapshot } from "../knowledge/knowledgeIndex.js";
import { tokenize } from "../knowledge/normalize.js";
import { classifyConfidence, isAuthorized, retrieve } from "../knowledge/retrieval.js";
import type {
  KnowledgeAssembledContext,
  KnowledgeConfidenceRule,
  KnowledgeContextConfig,
  KnowledgeFieldName,
  KnowledgeIndexSnapshot,
  KnowledgePresetName,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeRetrievalConfig,
  KnowledgeSelection,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import {
  type BlockFailure,
  type BlockQueryFigures,
  type BlockSummary,
  blockFigures,
  diagnoseBlock,
  summarizeBlocks,
} from "./block.js";
import type { EvalQrels, EvalQuery } from "./data.js";
import { meanMetrics, type QueryMetrics, quantile, queryMetrics } from "./metrics.js";

/** What a configuration may override: the preset, retrieval and context parts of `KnowledgeGroundingConfig`. */
export type EvalConfigurationSettings = {
  /** Preset the `retrieval` and `context` fields override (default `"neurolink"`). */
  preset?: KnowledgePresetName;
  retrieval?: KnowledgeRetrievalConfig;
  context?: KnowledgeContextConfig;
  blockedDomains?: string[];
};

/** A named configuration to evaluate. */
export type EvalConfiguration = {
  name: string;
  settings: EvalConfigurationSettings;
};

/** The confidence classes in display order. */
export const CONFIDENCE_CLASSES: readonly KnowledgeRetrievalConfidence[] = ["high", "medium", "low", "none"];

/** How well one confidence class predicts a relevant top result. */
export type CalibrationCell = {
  /** Queries that got this class. */
  count: number;
  /** Of those, queries whose top result is relevant. */
  relevantTop: number;
  /** `relevantTop / count`, or null when the class never occurred. */
  precision: number | null;
};

/** The evidence behind one query's production top result, for studying confidence rules. */
export type TopSignals = {
  /** Score of the top candidate (boosts included). */
  topScore: number;
  /** Score of the second candidate, 0 without one. */
  secondScore: number;
  /** Lexical score of the top candidate. */
  topLexical: number;
  /** Fields with lexical evidence for the top candidate. */
  topFields: KnowledgeFieldName[];
  exact: boolean;
  alias: boolean;
  /** Candidates before the candidate-limit cut. */
  candidateCount: number;
  /** Query tokens (after tokenizing, before any analyzer). */
  queryTokens: number;
};

/** One query's outcome under one configuration. */
export type EvalQueryResult = {
  id: string;
  metrics: QueryMetrics;
  /** Relevant documents judged for the query. */
  relevant: number;
  /** First ten ranked ids. */
  top10: string[];
  /** Confidence class under the configuration's rule. */
  confidence: KnowledgeRetrievalConfidence;
  /** Confidence class under each rule, on the same candidates. */
  confidenceByRule: Record<KnowledgeConfidenceRule, KnowledgeRetrievalConfidence>;
  /** Id of the production top result, or null. */
  topId: string | null;
  /** Whether the production top result is judged relevant. */
  topRelevant: boolean;
  signals: TopSignals | null;
  /** The block the production retrieval renders (what `ground()` would hand the model). */
  block: BlockQueryFigures;
  /** Time of the production `retrieve` call. */
  retrieveMs: number;
  /** Time of the production `retrieve` plus context assembly. */
  turnMs: number;
};

/** Latency summary in milliseconds. */
export type LatencySummary = {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
};

/** Everything measured for one configuration. */
export type EvalConfigurationResult = {
  name: string;
  settings: EvalConfigurationSettings;
  resolved: KnowledgeResolvedRetrieval;
  /** Mean of each metric over the evaluated queries. */
  metrics: QueryMetrics;
  queries: EvalQueryResult[];
  /** Latency of the production `retrieve` call. */
  latency: LatencySummary;
  /** Latency of `retrieve` plus context assembly. */
  turnLatency: LatencySummary;
  /** Calibration of the configuration's confidence rule. */
  calibration: Record<KnowledgeRetrievalConfidence, CalibrationCell>;
  /**
   * How well the configuration's classes separate relevant from non-relevant top results: the probability that a
   * query with a relevant top result got a higher class (none < low < medium < high) than one without, ties
   * counting half (the ROC AUC of the class as a score). 0.5 is no better than chance; null if either group is
   * empty.
   */
  discrimination: number | null;
  /** Calibration and discrimination of every rule on the same candidates. */
  byRule: Record<
    KnowledgeConfidenceRule,
    { calibration: Record<KnowledgeRetrievalConfidence, CalibrationCell>; discrimination: number | null }
  >;
  /** Time to build this configuration's index snapshot (0 when shared with an earlier configuration). */
  indexMs: number;
  /** The context budget the blocks were rendered with: the effective `context.maxTokens` (preset included). */
  budget: number;
  /** Block figures averaged over the queries (see `./block.ts` for the definitions). */
  block: BlockSummary;
  /**
   * Queries whose block holds no relevant entry or misses its judged passage, in query order, with the reason
   * each relevant entry is missing and what the block held instead.
   */
  failures: BlockFailure[];
};

/** The outcome of {@link evaluateConfigurations}. */
export type EvalReport = {
  /** Entries in the knowledge base. */
  entries: number;
  /** Queries evaluated (those with judgments). */
  queryCount: number;
  /** Judged query ids that the query file lacks; they count as 0 on every metric (`trec_eval -c`). */
  missingQueries: string[];
  depth: number;
  ignoreIdenticalIds: boolean;
  configurations: EvalConfigurationResult[];
};

/** Options of {@link evaluateConfigurations}. */
export type EvalOptions = {
  /** Ranking depth for the metrics. Default 100 (enough for Recall@100). */
  depth?: number;
  /** Drop a document whose id equals the query id from that query's results (BEIR convention). Default false. */
  ignoreIdenticalIds?: boolean;
  /** Queries run once untimed per configuration before timing, so the JIT is warm. Default 20. */
  warmup?: number;
  /**
   * Time the production retrieval (latency, and confidence with the configuration's own limits). Default true.
   * When false (parameter searches), latency is NaN and confidence and top result come from the ranking retrieval;
   * the block is still rendered from an untimed production retrieval.
   */
  measureProduction?: boolean;
  /** Called when a configuration starts and as queries complete. */
  onProgress?: (progress: { configuration: string; done: number; total: number }) => void;
  /**
   * Index snapshots to reuse across calls on the same entries (keyed by the index-affecting settings); snapshots
   * built here are added to it. Parameter searches pass one map per collection so each index is built once.
   */
  snapshots?: Map<string, KnowledgeIndexSnapshot>;
};

const EVAL_CONFIGURATION_MARKER = Symbol.for("lexground.EvalConfigurationError");

/** A configuration's settings are invalid. */
export class EvalConfigurationError extends Error {
  override readonly name = "EvalConfigurationError";
  /** Stable machine-readable code. */
  readonly code = "EVAL_CONFIGURATION_INVALID";
  readonly [EVAL_CONFIGURATION_MARKER] = true;
  constructor(
    readonly configuration: string,
    message: string,
  ) {
    super(`configuration ${JSON.stringify(configuration)}: ${message}`);
  }

  /** True for an `EvalConfigurationError` from any copy of the package. */
  static isInstance(error: unknown): error is EvalConfigurationError {
    return hasErrorMarker(error, EVAL_CONFIGURATION_MARKER);
  }
}

function summarize(samples: readonly number[]): LatencySummary {
  let total = 0;
  let max = 0;
  for (const sample of samples) {
    total += sample;
    if (sample > max) max = sample;
  }
  return {
    p50: quantile(samples, 0.5),
    p90: quantile(samples, 0.9),
    p99: quantile(samples, 0.99),
    mean: samples.length > 0 ? total / samples.length : Number.NaN,
    max,
  };
}

function indexKey(resolved: KnowledgeResolvedRetrieval): string {
  return JSON.stringify([
    resolved.fieldWeights,
    resolved.k1,
    resolved.b,
    resolved.analyzer,
    resolved.scoring,
  ]);
}

/** Checks settings with the engine's configuration validation; throws {@link EvalConfigurationError}. */
export function checkConfiguration(configuration: EvalConfiguration): void {
  const issues = validateGroundingConfig({ ...configuration.settings, enabled: true, sources: [] });
  const error = issues.find((issue) => issue.level === "error");
  if (error) throw new EvalConfigurationError(configuration.name, error.message);
}

/**
 * Evaluates every configuration on the same entries and queries. Only queries with judgments are evaluated;
 * judged queries missing from `queries` count as 0 on every metric.
 */
export function evaluateConfigurations(
  entries: readonly NormalizedKnowledgeEntry[],
  queries: readonly EvalQuery[],
  qrels: EvalQrels,
  configurations: readonly EvalConfiguration[],
  options: EvalOptions = {},
): EvalReport {
  const depth = options.depth ?? 100;
  const ignoreIdenticalIds = options.ignoreIdenticalIds ?? false;
  const warmup = options.warmup ?? 20;
  const measureProduction = options.measureProduction ?? true;
  const judged = queries.filter((query) => qrels.has(query.id));
  const present = new Set(judged.map((query) => query.id));
  const missingQueries = [...qrels.keys()].filter((id) => !present.has(id));
  for (const configuration of configurations) checkConfiguration(configuration);

  const snapshots = options.snapshots ?? new Map<string, KnowledgeIndexSnapshot>();
  const results: EvalConfigurationResult[] = [];
  for (const configuration of configurations) {
    const { settings } = configuration;
    const effective = resolveGroundingConfiguration(settings);
    const resolved = effective.retrieval;
    const contextConfig = effective.contextConfig;
    const key = indexKey(resolved);
    let snapshot = snapshots.get(key);
    let indexMs = 0;
    if (!snapshot) {
      const start = performance.now();
      snapshot = buildIndexSnapshot(entries, {
        fieldWeights: resolved.fieldWeights,
        ...(resolved.k1 !== undefined ? { k1: resolved.k1 } : {}),
        ...(resolved.b !== undefined ? { b: resolved.b } : {}),
        ...(resolved.analyzer !== undefined ? { analyzer: resolved.analyzer } : {}),
        ...(resolved.scoring !== undefined ? { scoring: resolved.scoring } : {}),
      });
      indexMs = performance.now() - start;
      snapshots.set(key, snapshot);
    }
    const deep: KnowledgeResolvedRetrieval = {
      ...resolved,
      candidateLimit: depth + 1,
      resultLimit: depth + 1,
      relationLimit: 0,
    };
    const blocked = settings.blockedDomains ?? [];
    const passageQuery = (query: EvalQuery) => ({ query: query.text, analyzer: resolved.analyzer ?? "none" });
    const request = (query: EvalQuery) => ({
      query: query.text,
      recentTurns: [],
      enabledIntegrations: query.integrations ?? [],
    });
    for (const query of judged.slice(0, measureProduction ? warmup : 0)) {
      const selection = retrieve(snapshot, request(query), resolved, blocked);
      assembleKnowledgeContext(selection, contextConfig, passageQuery(query));
    }

    const perQuery: EvalQueryResult[] = [];
    const failures: BlockFailure[] = [];
    options.onProgress?.({ configuration: configuration.name, done: 0, total: judged.length });
    for (const query of judged) {
      const judgments = qrels.get(query.id)!;
      const keep = (id: string) => !ignoreIdenticalIds || id !== query.id;
      const deepSelection = retrieve(snapshot, request(query), deep, blocked);
      const ranking = deepSelection.candidates
        .map((candidate) => candidate.id)
        .filter(keep)
        .slice(0, depth);

      let selection = deepSelection;
      let production: KnowledgeSelection;
      let assembled: KnowledgeAssembledContext;
      let retrieveMs = Number.NaN;
      let turnMs = Number.NaN;
      if (measureProduction) {
        const start = performance.now();
        selection = retrieve(snapshot, request(query), resolved, blocked);
        retrieveMs = performance.now() - start;
        assembled = assembleKnowledgeContext(selection, contextConfig, passageQuery(query));
        turnMs = performance.now() - start;
        production = selection;
      } else {
        production = retrieve(snapshot, request(query), resolved, blocked);
        assembled = assembleKnowledgeContext(production, contextConfig, passageQuery(query));
      }
      const block = blockFigures(
        assembled.citations.map((citation) => citation.id),
        assembled.contextTokens,
        assembled.assembledContext,
        judgments,
        query.passage,
      );
      const failure = diagnoseBlock({
        id: query.id,
        text: query.text,
        judgments,
        ...(query.passage !== undefined ? { passage: query.passage } : {}),
        figures: block,
        // The engine's own order (the query's id kept), so ranks compare with resultLimit.
        ranking: deepSelection.candidates.map((candidate) => candidate.id),
        scores: new Map(deepSelection.candidates.map((candidate) => [candidate.id, candidate.score])),
        primaryIds: production.primary.map((entry) => entry.id),
        expandedIds: production.expanded.map((entry) => entry.id),
        resultLimit: resolved.resultLimit,
        cutReason: (id) => {
          const cut = production.candidates.find((candidate) => candidate.id === id)?.cut;
          if (!cut) return undefined;
          const threshold = cut.threshold.toFixed(2);
          return cut.endedAt === id
            ? `cut by ${cut.rule}: its score is below ${threshold}`
            : `cut by ${cut.rule}: the list ended at ${cut.endedAt} (its score below ${threshold})`;
        },
        exists: (id) => snapshot.entriesById.has(id),
        eligible: (id) => {
          const entry = snapshot.entriesById.get(id);
          return entry !== undefined && isAuthorized(entry, query.integrations ?? [], blocked);
        },
        via: (id) =>
          production.primary.find((entry) => snapshot.relationIndex.get(entry.id)?.includes(id))?.id,
        renderedInFull: (id) => {
          const entry = snapshot.entriesById.get(id);
          return (
            entry !== undefined &&
            assembled.assembledContext.includes(
              renderEntry(entry, contextConfig.includeCitations !== false).full,
            )
          );
        },
      });
      if (failure) failures.push(failure);

      const candidates = selection.candidates.filter((candidate) => keep(candidate.id));
      // Classified exactly as the engine does (on the trimmed candidates), except that a dropped self-match does
      // not decide the class either. Both rules are recorded so they can be compared on the same rankings.
      const confidenceByRule: Record<KnowledgeConfidenceRule, KnowledgeRetrievalConfidence> = {
        seed: classifyConfidence(candidates, "seed"),
        calibrated: classifyConfidence(candidates, "calibrated"),
      };
      const confidence = confidenceByRule[resolved.confidenceRule ?? "seed"];
      const top = candidates[0];
      const second = candidates[1];
      let relevant = 0;
      for (const grade of judgments.values()) if (grade > 0) relevant++;
      perQuery.push({
        id: query.id,
        metrics: queryMetrics(ranking, judgments),
        relevant,
        top10: ranking.slice(0, 10),
        confidence,
        confidenceByRule,
        topId: top?.id ?? null,
        topRelevant: top !== undefined && (judgments.get(top.id) ?? 0) > 0,
        signals: top
          ? {
              topScore: top.score,
              secondScore: second?.score ?? 0,
              topLexical: top.lexical,
              topFields: Object.keys(top.fieldScores) as KnowledgeFieldName[],
              exact: top.exact,
              alias: top.alias,
              candidateCount: selection.candidateCount,
              queryTokens: tokenize(query.text).length,
            }
          : null,
        block,
        retrieveMs,
        turnMs,
      });
      if (perQuery.length % 50 === 0) {
        options.onProgress?.({
          configuration: configuration.name,
          done: perQuery.length,
          total: judged.length,
        });
      }
    }
    const zero: QueryMetrics = { ndcg10: 0, recall10: 0, recall100: 0, mrr10: 0 };
    const metrics = meanMetrics([
      ...perQuery.map((result) => result.metrics),
      ...missingQueries.map(() => zero),
    ]);
    results.push({
      name: configuration.name,
      settings,
      resolved,
      metrics,
      queries: perQuery,
      latency: summarize(perQuery.map((result) => result.retrieveMs)),
      turnLatency: summarize(perQuery.map((result) => result.turnMs)),
      calibration: calibrate(perQuery),
      discrimination: discrimination(perQuery),
      byRule: {
        seed: byRuleOf(perQuery, "seed"),
        calibrated: byRuleOf(perQuery, "calibrated"),
      },
      indexMs,
      budget: effective.context.maxTokens,
      block: summarizeBlocks(
        perQuery.map((result) => result.block),
        missingQueries.length,
      ),
      failures,
    });
  }
  return {
    entries: entries.length,
    queryCount: judged.length + missingQueries.length,
    missingQueries,
    depth,
    ignoreIdenticalIds,
    configurations: results,
  };
}

function byRuleOf(
  results: readonly EvalQueryResult[],
  rule: KnowledgeConfidenceRule,
): { calibration: Record<KnowledgeRetrievalConfidence, CalibrationCell>; discrimination: number | null } {
  const relabeled = results.map((result) => ({
    confidence: result.confidenceByRule[rule],
    topRelevant: result.topRelevant,
  }));
  return { calibration: calibrate(relabeled), discrimination: discrimination(relabeled) };
}

const CLASS_RANK: Record<KnowledgeRetrievalConfidence, number> = { none: 0, low: 1, medium: 2, high: 3 };

/**
 * ROC AUC of the confidence class (none < low < medium < high) as a predictor of a relevant top result; ties
 * count half. Null when every query or no query has a relevant top result.
 */
export function discrimination(
  results: readonly Pick<EvalQueryResult, "confidence" | "topRelevant">[],
): number | null {
  const positives = [0, 0, 0, 0];
  const negatives = [0, 0, 0, 0];
  for (const result of results) {
    const rank = CLASS_RANK[result.confidence];
    if (result.topRelevant) positives[rank]!++;
    else negatives[rank]!++;
  }
  const positiveCount = positives.reduce((sum, count) => sum + count, 0);
  const negativeCount = negatives.reduce((sum, count) => sum + count, 0);
  if (positiveCount === 0 || negativeCount === 0) return null;
  let wins = 0;
  for (let positive = 0; positive < 4; positive++) {
    for (let negative = 0; negative < 4; negative++) {
      const pairs = positives[positive]! * negatives[negative]!;
      if (positive > negative) wins += pairs;
      else if (positive === negative) wins += pairs / 2;
    }
  }
  return wins / (positiveCount * negativeCount);
}

/** Per confidence class: how many queries got it and how often their top result was relevant. */
export function calibrate(
  results: readonly Pick<EvalQueryResult, "confidence" | "topRelevant">[],
): Record<KnowledgeRetrievalConfidence, CalibrationCell> {
  const cells = {} as Record<KnowledgeRetrievalConfidence, CalibrationCell>;
  for (const name of CONFIDENCE_CLASSES) cells[name] = { count: 0, relevantTop: 0, precision: null };
  for (const result of results) {
    const cell = cells[result.confidence];
    cell.count++;
    if (result.topRelevant) cell.relevantTop++;
  }
  for (const name of CONFIDENCE_CLASSES) {
    const cell = cells[name];
    cell.precision = cell.count > 0 ? cell.relevantTop / cell.count : null;
  }
  return cells;
}

/** One query whose figures differ between two configurations. */
export type EvalQueryDiff = {
  id: string;
  text: string;
  /** nDCG@10 under the first and the second configuration, and second − first. */
  before: number;
  after: number;
  delta: number;
  confidenceBefore: KnowledgeRetrievalConfidence;
  confidenceAfter: KnowledgeRetrievalConfidence;
  topBefore: string | null;
  topAfter: string | null;
};

/**
 * Per-query differences between two configurations' results: queries whose nDCG@10, confidence or top result
 * changed, largest |Δ nDCG@10| first (ties by query id).
 */
export function diffConfigurations(
  first: EvalConfigurationResult,
  second: EvalConfigurationResult,
  queries: readonly EvalQuery[],
): EvalQueryDiff[] {
  const texts = new Map(queries.map((query) => [query.id, query.text]));
  const secondById = new Map(second.queries.map((result) => [result.id, result]));
  const diffs: EvalQueryDiff[] = [];
  for (const before of first.queries) {
    const after = secondById.get(before.id);
    if (!after) continue;
    const delta = after.metrics.ndcg10 - before.metrics.ndcg10;
    if (Math.abs(delta) < 1e-12 && before.confidence === after.confidence && before.topId === after.topId) {
      continue;
    }
    diffs.push({
      id: before.id,
      text: texts.get(before.id) ?? "",
      before: before.metrics.ndcg10,
      after: after.metrics.ndcg10,
      delta,
      confidenceBefore: before.confidence,
      confidenceAfter: after.confidence,
      topBefore: before.topId,
      topAfter: after.topId,
    });
  }
  diffs.sort(
    (left, right) =>
      Math.abs(right.delta) - Math.abs(left.delta) || (left.id < right.id ? -1 : left.id > right.id ? 1 : 0),
  );
  return diffs;
}
