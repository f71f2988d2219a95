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
import { DEFAULT_ANALYZER, DEFAULT_CONFIDENCE_RULE } from "../knowledge/defaults.js";
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
  KnowledgePassageQuery,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeRetrievalRequest,
  KnowledgeSelection,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { type BlockFailure, blockFigures, diagnoseBlock, summarizeBlocks } from "./block.js";
import { byRuleOf, calibrate, discrimination } from "./calibration.js";
import type { EvalQrels, EvalQuery } from "./data.js";
import { meanMetrics, type QueryMetrics, quantile, queryMetrics } from "./metrics.js";
import type {
  EvalConfiguration,
  EvalConfigurationResult,
  EvalOptions,
  EvalQueryResult,
  EvalReport,
  LatencySummary,
} from "./reportTypes.js";

export { calibrate, discrimination } from "./calibration.js";
export { diffConfigurations } from "./diff.js";
export {
  type CalibrationCell,
  CONFIDENCE_CLASSES,
  type EvalConfiguration,
  type EvalConfigurationResult,
  type EvalConfigurationSettings,
  type EvalOptions,
  type EvalQueryDiff,
  type EvalQueryResult,
  type EvalReport,
  type LatencySummary,
  type TopSignals,
} from "./reportTypes.js";

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
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
    const passageQuery = (query: EvalQuery) => ({
      query: query.text,
      analyzer: resolved.analyzer ?? DEFAULT_ANALYZER,
    });
    const request = (query: EvalQuery) => ({
      query: query.text,
      recentTurns: [],
      enabledIntegrations: query.integrations ?? [],
    });
    for (const query of judged.slice(0, measureProduction ? warmup : 0)) {
      const selection = retrieve(snapshot, request(query), resolved, blocked);
      assembleKnowledgeContext(selection, contextConfig, passageQuery(query));
    }

    const run: ConfigurationRun = {
      snapshot,
      resolved,
      deep,
      blocked,
      contextConfig,
      depth,
      ignoreIdenticalIds,
      measureProduction,
      request,
      passageQuery,
    };
    const perQuery: EvalQueryResult[] = [];
    const failures: BlockFailure[] = [];
    options.onProgress?.({ configuration: configuration.name, done: 0, total: judged.length });
    for (const query of judged) {
      const judgments = qrels.get(query.id)!;
      const { result, failure } = evaluateQuery(run, query, judgments);
      if (failure) failures.push(failure);
      perQuery.push(result);
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

/** What every query of one configuration runs with. */
type ConfigurationRun = {
  snapshot: KnowledgeIndexSnapshot;
  resolved: KnowledgeResolvedRetrieval;
  /** The ranking retrieval's settings: deep enough for the metrics, without relation expansion. */
  deep: KnowledgeResolvedRetrieval;
  blocked: string[];
  contextConfig: KnowledgeContextConfig;
  depth: number;
  ignoreIdenticalIds: boolean;
  measureProduction: boolean;
  request: (query: EvalQuery) => KnowledgeRetrievalRequest;
  passageQuery: (query: EvalQuery) => KnowledgePassageQuery;
};

/**
 * One judged query under one configuration (see the module comment): the ranking retrieval, the production turn
 * and its block, the block's failure diagnosis when it misses, and the confidence of every rule.
 */
function evaluateQuery(
  run: ConfigurationRun,
  query: EvalQuery,
  judgments: ReadonlyMap<string, number>,
): { result: EvalQueryResult; failure: BlockFailure | null } {
  const { snapshot, resolved, deep, blocked, contextConfig, depth } = run;
  const { ignoreIdenticalIds, measureProduction, request, passageQuery } = run;
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
    via: (id) => production.primary.find((entry) => snapshot.relationIndex.get(entry.id)?.includes(id))?.id,
    renderedInFull: (id) => {
      const entry = snapshot.entriesById.get(id);
      return (
        entry !== undefined &&
        assembled.assembledContext.includes(renderEntry(entry, contextConfig.includeCitations !== false).full)
      );
    },
  });

  const candidates = selection.candidates.filter((candidate) => keep(candidate.id));
  // Classified exactly as the engine does (on the trimmed candidates), except that a dropped self-match does
  // not decide the class either. Both rules are recorded so they can be compared on the same rankings.
  const confidenceByRule: Record<KnowledgeConfidenceRule, KnowledgeRetrievalConfidence> = {
    seed: classifyConfidence(candidates, "seed"),
    calibrated: classifyConfidence(candidates, "calibrated"),
  };
  const confidence = confidenceByRule[resolved.confidenceRule ?? DEFAULT_CONFIDENCE_RULE];
  const top = candidates[0];
  const second = candidates[1];
  let relevant = 0;
  for (const grade of judgments.values()) if (grade > 0) relevant++;
  const result: EvalQueryResult = {
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
  };
  return { result, failure };
}
