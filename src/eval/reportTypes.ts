/**
 * The shapes of an evaluation: the configurations it runs and everything it reports (per query, per
 * configuration, and the differences between two configurations).
 */
import type {
  KnowledgeConfidenceRule,
  KnowledgeContextConfig,
  KnowledgeFieldName,
  KnowledgeIndexSnapshot,
  KnowledgePresetName,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfidence,
  KnowledgeRetrievalConfig,
} from "../types/knowledge.js";
import type { BlockFailure, BlockQueryFigures, BlockSummary } from "./block.js";
import type { QueryMetrics } from "./metrics.js";

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
