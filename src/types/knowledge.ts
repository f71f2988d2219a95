/**
 * Public types of lexground's knowledge grounding, named as in NeuroLink's `knowledge.ts` so that code written
 * against NeuroLink compiles unchanged against lexground.
 *
 * Grounding here is retrieval without vectors: exact identifiers, reviewed aliases, metadata filters and a
 * field-aware BM25 score select a few entries of a host's own registry, which are rendered as an ephemeral,
 * citation-carrying block for one generation call and never persisted to conversation memory.
 *
 * @module
 */

import type { KnowledgeBackendStatus, KnowledgeIndexBackend } from "../knowledge/searchBackend.js";

/** What a knowledge entry primarily is. Labels the rendered context; never affects ranking. */
export type KnowledgeEntryKind =
  | "concept"
  | "text"
  | "configuration"
  | "tool"
  | "procedure"
  | "policy"
  | "troubleshooting";

/** Lifecycle state of an entry. Only `active` entries can be retrieved. */
export type KnowledgeStatus = "draft" | "active" | "deprecated";

/**
 * Retrieval mode. Only `"lexical"` exists; the single-member union keeps room for other modes without a
 * breaking change. The value is accepted and does not change behaviour.
 */
export type KnowledgeRetrievalMode = "lexical";

/**
 * How strongly the retrieval supports the selected entries, so a host prompt can tell the model to qualify
 * low-confidence answers.
 * - `high`: the top candidate matched an entry id, title or reviewed alias as a phrase of the query.
 * - `medium`: the top candidate matched in two or more fields, or clearly leads the second one.
 * - `low`: some lexical evidence, nothing more.
 * - `none`: nothing matched.
 */
export type KnowledgeRetrievalConfidence = "high" | "medium" | "low" | "none";

/** The five text fields scored by the field-aware lexical index. */
export type KnowledgeFieldName = "title" | "aliases" | "keywords" | "summary" | "body";

/**
 * Analyzer applied to the BM25 tokens of entries and queries (never to exact id, title or alias phrases).
 * - `"none"` (default): the seed's tokenizer only, no stop words, no stemming.
 * - `"english"`: the same tokenizer, then English stop words removed and the remaining tokens stemmed.
 * - `"english-extended"`: as `"english"`, with a longer stop list that also drops the words of how a question is
 *   asked (pronouns, question words, auxiliaries, common prepositions).
 */
export type KnowledgeAnalyzerName = "none" | "english" | "english-extended";

/**
 * How per-field evidence is combined.
 * - `"sum"` (default, NeuroLink parity): BM25 computed per field, with per-field IDF, then summed by weight.
 * - `"bm25f"`: true BM25F: weighted, length-normalized term frequencies summed across fields before one
 *   saturation, with one IDF over all fields.
 */
export type KnowledgeScoringMode = "sum" | "bm25f";

/**
 * How the confidence class of a selection is decided (both deterministic, same four classes).
 * - `"seed"` (default, NeuroLink parity): `high` for an id, title or alias phrase hit; `medium` for lexical
 *   evidence in two fields or a 1.5× lead over the second candidate; otherwise `low`.
 * - `"calibrated"`: `high` only for a phrase hit of at least two words with a 1.2× lead over the second candidate;
 *   `medium` for a 1.3× lexical lead (or a multi-word phrase hit without that lead); otherwise `low`. Measured to
 *   predict a relevant top result better; see `lexground eval`.
 */
export type KnowledgeConfidenceRule = "seed" | "calibrated";

/**
 * A named set of `retrieval` and `context` settings, chosen with the top-level `preset` of
 * {@link KnowledgeGroundingConfig}. Fields given explicitly in `retrieval` / `context` override the preset's, field
 * by field (`fieldWeights` per field). The table is `KNOWLEDGE_PRESETS` (lexground).
 * - `"neurolink"` (default): no setting of its own; exactly NeuroLink's behaviour (same selections, scores,
 *   confidence and block).
 * - `"recommended"`: lexground's measured configuration for new knowledge bases: English analyzer, BM25F with
 *   tuned weights, calibrated confidence and adaptive cut-offs that keep the block to what answers the question.
 */
export type KnowledgePresetName = "neurolink" | "recommended";

/**
 * An adaptive cut-off that removed a candidate from the primary selection (lexground):
 * - `"minRelativeScore"`: it scored below `retrieval.minRelativeScore` × the top candidate's score;
 * - `"scoreGapRatio"`: it, or a candidate ranked above it, scored below `retrieval.scoreGapRatio` × the score of
 *   the candidate just before, which ended the list there.
 */
export type KnowledgeCutoffRule = "minRelativeScore" | "scoreGapRatio";

/** Why an adaptive cut-off removed a candidate from the primary selection (lexground). */
export type KnowledgeCandidateCut = {
  /** The rule that ended the list at or before this candidate. */
  rule: KnowledgeCutoffRule;
  /**
   * The score the candidate that ended the list had to reach and did not: for `minRelativeScore` the floor
   * (fraction × top score), for `scoreGapRatio` the fraction × the previous candidate's score.
   */
  threshold: number;
  /** Id of the candidate that ended the list (this candidate itself, or one ranked above it). */
  endedAt: string;
};

/**
 * Why relation expansion added nothing or less than it could (lexground), when an expansion rule limited it:
 * `"expansionMinConfidence"` when the turn's confidence was below `retrieval.expansionMinConfidence`.
 */
export type KnowledgeExpansionSkip = "expansionMinConfidence";

/**
 * One entry as a host writes it. `id`, `title`, `summary`, `domain` and `integrations` are required; omitted
 * optional fields take their defaults during normalization.
 */
export type KnowledgeEntryInput = {
  /** Stable unique id such as `"account.multi-step-flow"`. Matched as a phrase and used in citations. */
  id: string;
  /** Human-readable name. Matched as a phrase; the most heavily weighted search field. */
  title: string;
  /** One-line description: the short answer, and what remains when the context budget is tight. */
  summary: string;
  /** Primary grouping, e.g. `"account-settings"`. Domains can be blocked per engine. */
  domain: string;
  /** Integrations the entry applies to. An empty array means it applies whatever is enabled. */
  integrations: string[];
  /** What the entry is. Default `"text"`. */
  kind?: KnowledgeEntryKind;
  /** Lifecycle state. Default `"active"`; only active entries are retrievable. */
  status?: KnowledgeStatus;
  /** Full explanation in Markdown. Default `""`. */
  body?: string;
  /** Reviewed alternative phrasings or raw identifiers (e.g. configuration keys); matched as phrases. */
  aliases?: string[];
  /** Extra search terms that help recall without being full aliases. */
  keywords?: string[];
  /** Ids of directly related entries, added by bounded relationship expansion. */
  relatedEntryIds?: string[];
  /** Id of the parent entry when this one is a subtype or child. */
  parentEntryId?: string;
};

/**
 * An entry with every default applied: arrays are copies (later changes to the input do not leak in), `body` is a
 * string, `kind` and `status` are set, and `version` is the version of the source it came from. Frozen.
 */
export type NormalizedKnowledgeEntry = {
  id: string;
  title: string;
  summary: string;
  domain: string;
  integrations: string[];
  kind: KnowledgeEntryKind;
  status: KnowledgeStatus;
  body: string;
  aliases: string[];
  keywords: string[];
  relatedEntryIds: string[];
  parentEntryId?: string;
  /** Content version of the source or manifest; appears in citations as `[KB:id@version]`. */
  version: string;
};

/** One catalog of a build manifest: a source id and its entries. */
export type KnowledgeManifestCatalog = {
  id: string;
  entries: KnowledgeEntryInput[];
};

/**
 * The versioned artifact a host emits at build time. {@link manifestToSources} turns each catalog into a
 * {@link KnowledgeSource} carrying the manifest's `contentVersion`.
 */
export type KnowledgeManifest = {
  schemaVersion: string;
  contentVersion: string;
  generatedAt: string;
  catalogs: KnowledgeManifestCatalog[];
};

/** A configured source: inline structured entries with an id and an optional version (default `"0"`). */
export type KnowledgeSource = {
  id: string;
  version?: string;
  entries: KnowledgeEntryInput[];
};

/** Relative weight of a lexical match in each field. Defaults: title 5, aliases 5, keywords 3, summary 3, body 1. */
export type KnowledgeFieldWeights = {
  title: number;
  aliases: number;
  keywords: number;
  summary: number;
  body: number;
};

/** Lexical retrieval tuning. Every field is optional; defaults are listed with each. */
export type KnowledgeRetrievalConfig = {
  /** Retrieval mode. Default `"lexical"` (the only mode). */
  mode?: KnowledgeRetrievalMode;
  /** How many scored candidates are kept before the result cut; lexical search fetches twice this. Default 24. */
  candidateLimit?: number;
  /** How many primary entries are selected. Default 8. */
  resultLimit?: number;
  /** How many relationship-expanded entries may be added after the primary ones. Default 4. */
  relationLimit?: number;
  /**
   * Per-field BM25 weights. Unlike NeuroLink, a partial object is accepted: missing fields keep their defaults.
   * Weights must be finite and non-negative; a weight of 0 disables the field.
   */
  fieldWeights?: Partial<KnowledgeFieldWeights>;
  /** Additive boost when an entry id or title occurs as a phrase of the query. Default 100. */
  exactBoost?: number;
  /** Additive boost when a reviewed alias occurs as a phrase of the query. Default 60. */
  aliasBoost?: number;
  /** BM25 term-frequency saturation, finite and >= 0. Default 1.5 (NeuroLink parity). */
  k1?: number;
  /** BM25 length normalization in [0, 1]. Default 0.75 (NeuroLink parity). */
  b?: number;
  /** Analyzer for BM25 tokens. Default `"none"` (NeuroLink parity). */
  analyzer?: KnowledgeAnalyzerName;
  /** How per-field evidence is combined. Default `"sum"` (NeuroLink parity). */
  scoring?: KnowledgeScoringMode;
  /** How retrieval confidence is classified. Default `"seed"` (NeuroLink parity). */
  confidenceRule?: KnowledgeConfidenceRule;
  /**
   * Relative score floor in [0, 1] (lexground): primary candidates scoring below this fraction of the top
   * candidate's score are not selected, so a weak tail does not fill the block. Unset (default) or 0: no floor.
   * Applied only when the top score is positive.
   */
  minRelativeScore?: number;
  /**
   * Gap rule in [0, 1] (lexground): the primary list ends at the first candidate scoring below this fraction of
   * the previous candidate's score (a large drop separates what answers the question from what merely shares
   * words with it). Unset (default) or 0: no gap rule. Applied only where the previous score is positive.
   */
  scoreGapRatio?: number;
  /**
   * The adaptive cut-offs (`minRelativeScore`, `scoreGapRatio`) never shorten the primary list below this many
   * entries (lexground), an integer >= 1: the first `minResults` candidates are kept whatever their scores. It
   * never adds entries beyond `resultLimit` or the candidates found, and does nothing without a cut-off rule.
   * Unset (default): 1, only the top candidate is always kept.
   */
  minResults?: number;
  /**
   * Relation expansion follows the relations of the top this-many primary entries only (lexground), an integer
   * >= 0 (0: no expansion). Unset (default): every primary entry, as in NeuroLink.
   */
  expansionFromTop?: number;
  /**
   * Relation expansion runs only when the turn's confidence is at least this class (lexground): `"high"`,
   * `"medium"` or `"low"`. Unset (default): whatever the confidence, as in NeuroLink.
   */
  expansionMinConfidence?: Exclude<KnowledgeRetrievalConfidence, "none">;
};

/** Limits of the rendered grounding block. */
export type KnowledgeContextConfig = {
  /**
   * Hard token budget of the whole block, separators included: `contextTokens` never exceeds it. Default 4000.
   */
  maxTokens?: number;
  /** Emit `[KB:<id>@<version>]` citation markers. Default true. */
  includeCitations?: boolean;
  /**
   * Passages of long bodies (lexground). `"off"` (default, NeuroLink parity): a body is rendered whole, or the
   * entry falls back to its summary when it does not fit. `"auto"`: when a body is estimated above
   * `longBodyTokens`, or the entry does not fit whole, the body's passages that best match this turn's query are
   * rendered instead (verbatim, in document order, `[…]` lines where text was left out), under the entry's one
   * citation; the summary-only form remains the fallback when not even one passage fits.
   */
  passages?: KnowledgePassageMode;
  /** Largest passage in estimated tokens; longer paragraphs are cut at line, sentence or word ends. Default 200. */
  passageTokens?: number;
  /** Passages kept per excerpted body. Default 3. */
  maxPassages?: number;
  /** With passages on, bodies estimated above this many tokens are excerpted even when they fit. Default 600. */
  longBodyTokens?: number;
};

/**
 * How entry bodies are rendered: `"off"` whole (or summary-only when they do not fit), `"auto"` as their
 * best-matching passages when long or when they do not fit. See {@link KnowledgeContextConfig.passages}.
 */
export type KnowledgePassageMode = "off" | "auto";

/**
 * What the block needs to know about the turn beyond the selection: the query that passages are scored against,
 * and the analyzer of the engine's retrieval settings (so passages match the way entries were matched).
 */
export type KnowledgePassageQuery = {
  query: string;
  /** Default `"none"`. */
  analyzer?: KnowledgeAnalyzerName;
};

/**
 * Engine configuration, given as `knowledgeGrounding` on the NeuroLink constructor or directly to
 * {@link KnowledgeGroundingEngine}. Sources are fixed for an engine's lifetime unless it is explicitly rebuilt.
 */
export type KnowledgeGroundingConfig = {
  /** Master switch. Grounding runs only when true and at least one source (or an `indexArtifact`) is configured. */
  enabled: boolean;
  /**
   * Sources of the engine's immutable in-memory index. Required by NeuroLink; optional in lexground when a
   * self-contained `indexArtifact` is the knowledge base.
   */
  sources?: KnowledgeSource[];
  /**
   * Named starting point for `retrieval` and `context` (lexground). Default `"neurolink"` (NeuroLink's behaviour,
   * byte for byte). Fields given in `retrieval` / `context` override the preset's, field by field. An unknown
   * name is a configuration error (`bad-config` at path `preset`).
   */
  preset?: KnowledgePresetName;
  /** Domains excluded from retrieval (exact, case-sensitive match). Empty or omitted: every domain is eligible. */
  blockedDomains?: string[];
  /** Retrieval tuning. */
  retrieval?: KnowledgeRetrievalConfig;
  /** Context block limits. */
  context?: KnowledgeContextConfig;
  /**
   * Ceiling for one grounding operation, after which the turn continues ungrounded. Default 800 ms. Values above
   * 2,147,483,647 ms (about 24.8 days, the longest timer Node honours) are treated as that maximum.
   */
  timeoutMs?: number;
  /**
   * A prebuilt, self-contained index artifact (`lexground build --index`): a file path (Node) or its bytes
   * (lexground only). With `sources`, it is used instead of indexing when it was built from exactly these sources
   * and index settings (their content key is computed and compared); otherwise the engine builds as usual and
   * `getStatus().notes` says why. Without `sources`, the artifact alone is the knowledge base: nothing is
   * validated or hashed (its checksums and stored content key stand for that), entries are decoded when a turn
   * renders them, and an artifact that cannot be used (damaged, another format, other index settings) leaves
   * the engine without an index, with the typed reason in `getStatus().lastError`.
   */
  indexArtifact?: string | Uint8Array;
  /**
   * Fail at start-up instead of serving ungrounded turns (lexground). When the configured sources or the
   * configuration fail validation, or the first build throws, `engine.ready()` (NeuroLink:
   * `knowledgeReady()`) rejects with a {@link KnowledgeRegistryError} listing the issues, and NeuroLink turns
   * that opt into grounding reject with it while no index serves. Default false: turns continue ungrounded with
   * `failureReason` `"validation-failed"` / `"build-failed"`. `ground()` itself never throws either way.
   */
  strict?: boolean;
  /**
   * Where the engine's one warning per blocked registry goes (lexground): when validation blocks a source set or
   * a build fails, one `warn` names the entries, the number of issues and how to see them, once per logger and
   * content, never per turn. Default `console`; `null` for none. NeuroLink passes its own `logger`.
   */
  logger?: KnowledgeLogger | null;
  /**
   * Shadow mode (lexground): turns retrieve and report everything (`metadata.shadow`, the would-be block in
   * `shadowContext`) but the outcome's `ephemeralContext` is null, so the client and the AI SDK middleware inject
   * nothing and the prompt stays byte-identical to an ungrounded call. Overridden per turn by
   * `KnowledgeGroundingInput.shadow`. Default false.
   */
  shadow?: boolean;
  /**
   * Alternative configurations evaluated, in shadow, on the same turns (lexground): each a preset and/or
   * `retrieval` / `context` settings over the same sources (and the same `blockedDomains`), reported by name in
   * `outcome.alternatives` and never injected. Each runs a full retrieval on every turn, adding its time to it.
   */
  shadowAlternatives?: Record<string, KnowledgeShadowAlternative>;
  /**
   * OpenTelemetry tracing (lexground): with a `tracer` (for example `trace.getTracer("lexground")` from the host's
   * `@opentelemetry/api`), each `ground()` and each build or rebuild is a span, a child of the active span (the AI
   * SDK's own, when grounding runs inside one). The engine itself loads nothing: without a tracer it makes no
   * spans, except for turns whose input carries one (the Node entry points pass the host's `@opentelemetry/api`
   * tracer when it is installed; `isEnabled: false` refuses it).
   */
  telemetry?: KnowledgeTelemetryConfig;
  /**
   * Where the index lives (lexground). Default: in this process's memory. An external backend such as
   * `createPostgresBackend(…)` from `lexground/postgres` holds one index for many processes: an engine with
   * `sources` publishes them there (a new generation, or the current one when it holds the same content), an
   * engine without `sources` serves whatever is published. Turns then search the backend, with the same
   * selections as in memory.
   */
  backend?: KnowledgeIndexBackend;
};

/**
 * One alternative configuration of {@link KnowledgeGroundingConfig.shadowAlternatives}: its own preset and
 * settings (they do not inherit the primary configuration's `preset`, `retrieval` or `context`).
 */
export type KnowledgeShadowAlternative = {
  preset?: KnowledgePresetName;
  retrieval?: KnowledgeRetrievalConfig;
  context?: KnowledgeContextConfig;
};

/** The OpenTelemetry settings of an engine (lexground). Mirrors the AI SDK's `experimental_telemetry`. */
export type KnowledgeTelemetryConfig = {
  /**
   * `false` turns spans off: the configured tracer's, and the one the integrations pass per turn. Default true.
   */
  isEnabled?: boolean;
  /** The tracer that starts the spans: an `@opentelemetry/api` `Tracer` fits. */
  tracer?: KnowledgeTelemetryTracer;
};

/** A span attribute value, as OpenTelemetry accepts it. */
export type KnowledgeTelemetryAttributeValue = string | number | boolean | string[] | number[] | boolean[];

/** The part of an OpenTelemetry `Span` the engine uses. */
export type KnowledgeTelemetrySpan = {
  setAttribute(key: string, value: KnowledgeTelemetryAttributeValue): unknown;
  /** `code` 2 is OpenTelemetry's `SpanStatusCode.ERROR`. */
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
};

/**
 * The part of an OpenTelemetry `Tracer` the engine uses: `startActiveSpan`, which parents the span on the active
 * context and makes it active while `run` executes.
 */
export type KnowledgeTelemetryTracer = {
  startActiveSpan<Result>(
    name: string,
    options: { attributes?: Record<string, KnowledgeTelemetryAttributeValue> },
    run: (span: KnowledgeTelemetrySpan) => Result,
  ): Result;
};

/** The part of a logger the engine uses (NeuroLink's `logger` and `console` both fit). */
export type KnowledgeLogger = {
  warn: (message: string, ...details: unknown[]) => void;
};

/**
 * Why a turn was not grounded although grounding is enabled, as `metadata.failureReason`: no index serves
 * because validation blocked the sources or the configuration (`"validation-failed"`), because the build threw
 * (`"build-failed"`, retried by a later turn), or because none was built yet or there are no sources
 * (`"index-not-ready"`). Timeouts and other errors give their message instead.
 */
export type KnowledgeUnavailableReason = "validation-failed" | "build-failed" | "index-not-ready";

/**
 * What `rebuild()` resolves with: the engine status after the attempt, and whether this rebuild's source set went
 * live (lexground). A set that did not go live says why: it failed validation (`"validation-failed"`), its build
 * threw (`"build-failed"`), or a source set requested after it was installed first (`"superseded"`). Either way the
 * latest valid set serves.
 */
export type KnowledgeRebuildResult = KnowledgeEngineStatus & {
  /** This rebuild's snapshot was installed and served (it may since have been replaced by a later one). */
  live: boolean;
  /** Why it did not go live; absent when `live`. */
  reason?: "validation-failed" | "build-failed" | "superseded";
};

/** Options of `engine.upsert()` when the update is a list of entries. */
export type KnowledgeUpsertOptions = {
  /** The source that receives new entries (created when it does not exist). Default: the first source. */
  sourceId?: string;
};

/**
 * Outcome of an incremental update (`engine.upsert()` / `engine.remove()`, `NeuroLink.updateKnowledge()` /
 * `removeKnowledge()`): the status after it, whether the change went live, and the change's own issues.
 */
export type KnowledgeUpdateResult = KnowledgeEngineStatus & {
  /** The change was applied and the snapshot with it serves (later changes build on it). */
  live: boolean;
  /**
   * Why it did not go live: `"validation-failed"` (an error in the change; nothing changed), `"index-not-ready"`
   * (no snapshot serves yet: build or rebuild first), `"build-failed"` (the fallback full build threw).
   */
  reason?: "validation-failed" | "index-not-ready" | "build-failed";
  /** Issues of this change (errors refuse it; warnings, such as relations to missing entries, do not). */
  issues: KnowledgeValidationIssue[];
};

/** Per-call scope, given as `knowledgeContext` on a generate or stream call. */
export type KnowledgeRequestScope = {
  /**
   * Integrations enabled for this turn (compared case-insensitively). Entries bound to integrations are eligible
   * only when one of theirs is enabled; entries with no integrations are always eligible.
   */
  enabledIntegrations?: string[];
};

/** One recent conversation message used to add context to the lexical query. */
export type KnowledgeConversationTurn = {
  role: "user" | "assistant";
  text: string;
};

/** The retrieval request the engine builds from the query, the recent turns and the scope. */
export type KnowledgeRetrievalRequest = {
  query: string;
  recentTurns: KnowledgeConversationTurn[];
  enabledIntegrations: string[];
};

/** The internal search document of one entry: phrase keys and per-field token arrays. */
export type IndexedKnowledgeDocument = {
  id: string;
  /** Normalized id and title phrases used for exact lookup. */
  exactKeys: string[];
  /** Per-field tokens fed to the lexical scorer. */
  fields: {
    title: string[];
    aliases: string[];
    keywords: string[];
    summary: string[];
    body: string[];
  };
};

/** One lexical match with its per-field breakdown. Only fields that contributed appear in `fieldScores`. */
export type KnowledgeLexicalMatch = {
  id: string;
  score: number;
  fieldScores: Partial<Record<KnowledgeFieldName, number>>;
};

/**
 * Structural contract of the lexical index held by a snapshot: the seam behind which another backend (OpenSearch,
 * Redis query engine) can stand. Results are sorted by descending score, ties by ascending id in code-unit order.
 */
export type KnowledgeLexicalSearcher = {
  search: (
    queryTokens: string[],
    topK: number,
    eligibleEntryIds?: ReadonlySet<string>,
  ) => KnowledgeLexicalMatch[];
};

/** The immutable, ready-to-query index built once per source set and shared by every engine that uses it. */
export type KnowledgeIndexSnapshot = {
  /** Every normalized entry by id. */
  entriesById: Map<string, NormalizedKnowledgeEntry>;
  /** Normalized id or title phrase to the ids of the entries it names. */
  exactIndex: Map<string, Set<string>>;
  /** Normalized reviewed alias phrase to the ids of the entries it names. */
  aliasIndex: Map<string, Set<string>>;
  /** Entry id to its related ids followed by its parent id (only when non-empty), for one-hop expansion. */
  relationIndex: Map<string, string[]>;
  /** The field-aware lexical index. */
  lexical: KnowledgeLexicalSearcher;
  /** Number of indexed entries. */
  entryCount: number;
};

/** A stable citation of one entry version. */
export type KnowledgeCitation = {
  id: string;
  version: string;
};

/** Everything one retrieval produced, for host diagnostics. */
export type KnowledgeRetrievalResult = {
  /** Primary then expanded entries, including any later dropped from the context for budget. */
  entries: NormalizedKnowledgeEntry[];
  /** The rendered block, or `""` when nothing was selected or nothing fit. */
  assembledContext: string;
  confidence: KnowledgeRetrievalConfidence;
  /** Citations of the entries actually included in the block. */
  citations: KnowledgeCitation[];
  /** Primary entry ids in final order. */
  selectedEntryIds: string[];
  /** Ids added by relationship expansion. */
  expandedEntryIds: string[];
  /** Number of eligible candidates before the candidate-limit cut. */
  candidateCount: number;
  /** Estimated tokens of `assembledContext`. */
  contextTokens: number;
  /** True when an entry was reduced to its summary or dropped to respect the budget. */
  truncated: boolean;
  durationMs: number;
  /**
   * The scored candidates after the candidate-limit cut, best first, with their evidence (lexground). A candidate
   * removed by an adaptive cut-off carries `cut`.
   */
  candidates?: KnowledgeScoredCandidate[];
  /** Set when an expansion rule stopped relation expansion (lexground). */
  expansionSkipped?: KnowledgeExpansionSkip;
  /** Ids of included entries whose body was rendered as passages (present only when passages are on; lexground). */
  excerptedIds?: string[];
};

/**
 * A block of context for one generation call. It is appended to that call's system prompt and never stored as
 * a conversation message.
 */
export type EphemeralContext = {
  content: string;
  kind: "knowledge";
  /** Host-supplied, reviewed content is trusted reference data. */
  trusted: boolean;
  citations?: KnowledgeCitation[];
  metadata?: Record<string, unknown>;
};

/** Content-free diagnostics attached to generate and stream results as `result.knowledge`. */
export type KnowledgeGroundingMetadata = {
  retrievalMode: KnowledgeRetrievalMode;
  selectedIds: string[];
  expandedIds: string[];
  candidateCount: number;
  contextTokens: number;
  truncated: boolean;
  durationMs: number;
  confidence?: KnowledgeRetrievalConfidence;
  /**
   * Present when grounding failed open: why no index serves (`"validation-failed"`, `"build-failed"`,
   * `"index-not-ready"`; see {@link KnowledgeUnavailableReason}), a timeout (`"TimeoutError: Knowledge grounding
   * timed out after <N>ms"`) or the error that occurred.
   */
  failureReason?: string;
  /** True when the turn ran in shadow mode: everything was retrieved and reported, nothing injected (lexground). */
  shadow?: boolean;
};

/** One problem found while validating sources or configuration. */
export type KnowledgeValidationIssue = {
  level: "error" | "warning";
  /**
   * Stable machine-readable code, e.g. `missing-title`, `bad-field-type`, `duplicate-alias`: one of
   * {@link KnowledgeIssueCode} when lexground raised the issue (typed as any string, as in NeuroLink, so issues
   * from other tools fit too).
   */
  code: KnowledgeIssueCode | (string & {});
  /** Human-readable explanation. */
  message: string;
  entryId?: string;
  sourceId?: string;
  /** Where the problem is, e.g. `sources[0].entries[3].title`. */
  path?: string;
};

/**
 * The codes of the validation issues lexground raises. Errors (they block the source set): `bad-sources`,
 * `unreadable-input` (a getter or proxy threw), `missing-source-id`, `missing-entry-id`, `duplicate-entry-id`,
 * `missing-title`, `missing-summary`, `missing-domain`, `missing-integrations`, `bad-integrations`, `bad-kind`,
 * `bad-status`, `bad-field-type`, `limit-exceeded`, and `bad-config` (the engine configuration); of an update,
 * `source-version-changed` (a source's version cannot change) and `update-failed`. Warnings:
 * `ambiguous-entry-id`, `unknown-field`, `empty-alias`, `duplicate-alias`, `broken-relation`, `broken-parent`,
 * `encoded-in-citation`, and of a removal `unknown-entry-id`.
 */
export type KnowledgeIssueCode =
  | "bad-sources"
  | "unreadable-input"
  | "missing-source-id"
  | "missing-entry-id"
  | "duplicate-entry-id"
  | "missing-title"
  | "missing-summary"
  | "missing-domain"
  | "missing-integrations"
  | "bad-integrations"
  | "bad-kind"
  | "bad-status"
  | "bad-field-type"
  | "limit-exceeded"
  | "bad-config"
  | "ambiguous-entry-id"
  | "unknown-field"
  | "empty-alias"
  | "duplicate-alias"
  | "broken-relation"
  | "broken-parent"
  | "encoded-in-citation"
  | "source-version-changed"
  | "update-failed"
  | "unknown-entry-id";

/** Result of validation: `ok` is false when any issue has level `error`. */
export type KnowledgeValidationResult = {
  ok: boolean;
  issues: KnowledgeValidationIssue[];
};

/** Options of {@link normalizeAndValidate}. */
export type KnowledgeNormalizeOptions = {
  /** Version given to sources that have none. The engine passes `"0"`. */
  manifestVersion: string;
};

/** Normalized entries together with the validation outcome. */
export type KnowledgeNormalizeResult = {
  entries: NormalizedKnowledgeEntry[];
  validation: KnowledgeValidationResult;
};

/**
 * Retrieval settings after configuration and defaults are merged: the numeric limits, boosts and full field
 * weights always set; the index and cut-off settings as configured (absent: the default, see each option).
 */
export type KnowledgeResolvedRetrieval = Required<
  Pick<
    KnowledgeRetrievalConfig,
    "candidateLimit" | "resultLimit" | "relationLimit" | "exactBoost" | "aliasBoost"
  >
> & { fieldWeights: KnowledgeFieldWeights } & Pick<
    KnowledgeRetrievalConfig,
    | "k1"
    | "b"
    | "analyzer"
    | "scoring"
    | "confidenceRule"
    | "minRelativeScore"
    | "scoreGapRatio"
    | "minResults"
    | "expansionFromTop"
    | "expansionMinConfidence"
  >;

/** Context settings after the preset and the configuration are merged with the defaults (lexground). */
export type KnowledgeResolvedContext = {
  maxTokens: number;
  includeCitations: boolean;
  passages: KnowledgePassageMode;
  passageTokens: number;
  maxPassages: number;
  longBodyTokens: number;
};

/**
 * The configuration an engine runs with, as `getStatus().configuration` reports it (lexground): the preset's
 * settings overlaid with the explicit ones and completed with the defaults.
 */
export type KnowledgeEffectiveConfiguration = {
  preset: KnowledgePresetName;
  retrieval: KnowledgeResolvedRetrieval;
  context: KnowledgeResolvedContext;
};

/** One scored candidate with the evidence behind its score. */
export type KnowledgeScoredCandidate = {
  id: string;
  /** Lexical score plus the exact and alias boosts that applied. */
  score: number;
  /** The id or title occurred as a phrase of the query. */
  exact: boolean;
  /** A reviewed alias occurred as a phrase of the query. */
  alias: boolean;
  /** Lexical (BM25) part of the score; 0 when outside the lexical top-K. */
  lexical: number;
  fieldScores: Partial<Record<KnowledgeFieldName, number>>;
  /** Query phrases that hit: exact hits first, then alias hits. */
  matchedPhrases: string[];
  /**
   * Present when an adaptive cut-off (`minRelativeScore`, `scoreGapRatio`) removed this candidate from the
   * primary selection (lexground). Candidates beyond `resultLimit` are not marked.
   */
  cut?: KnowledgeCandidateCut;
};

/** The entries selected for one turn. */
export type KnowledgeSelection = {
  primary: NormalizedKnowledgeEntry[];
  expanded: NormalizedKnowledgeEntry[];
  /** Candidates after the candidate-limit cut, best first. */
  candidates: KnowledgeScoredCandidate[];
  confidence: KnowledgeRetrievalConfidence;
  /** Number of eligible candidates before the candidate-limit cut. */
  candidateCount: number;
  /** Set when an expansion rule stopped relation expansion (lexground). */
  expansionSkipped?: KnowledgeExpansionSkip;
};

/** The rendered block and its diagnostics. */
export type KnowledgeAssembledContext = {
  assembledContext: string;
  citations: KnowledgeCitation[];
  contextTokens: number;
  truncated: boolean;
  /** Ids of included entries whose body was rendered as passages (present only when passages are on). */
  excerptedIds?: string[];
};

/** Per-turn input of `KnowledgeGroundingEngine.ground()`. */
export type KnowledgeGroundingInput = {
  query: string;
  recentTurns?: KnowledgeConversationTurn[];
  scope?: KnowledgeRequestScope;
  /** Shadow mode for this turn (lexground): overrides the configuration's `shadow` when a boolean. */
  shadow?: boolean;
  /** Whether the configured `shadowAlternatives` are evaluated on this turn (lexground). Default true. */
  shadowAlternatives?: boolean;
  /**
   * The tracer of this turn's `lexground.ground` span when the engine has none of its own (lexground): the AI SDK
   * middleware, the search tool, the LangChain retriever and the client pass the host's `@opentelemetry/api`
   * tracer here, so spans appear under the AI SDK's own without configuring the engine. The engine's
   * `telemetry.tracer` wins; `telemetry.isEnabled: false` turns this off too.
   */
  tracer?: KnowledgeTelemetryTracer;
};

/**
 * What one turn's grounding produced: the context to inject (null when disabled, nothing matched, nothing fit,
 * grounding failed open, or the turn ran in shadow mode), metadata for the result, and the full retrieval for host
 * diagnostics.
 */
export type KnowledgeGroundingOutcome = {
  ephemeralContext: EphemeralContext | null;
  metadata: KnowledgeGroundingMetadata;
  retrieval: KnowledgeRetrievalResult | null;
  /** In shadow mode: the block that would have been injected, or null when there would have been none (lexground). */
  shadowContext?: EphemeralContext | null;
  /** The outcome of each configured shadow alternative on the same turn, by name (lexground). */
  alternatives?: Record<string, KnowledgeGroundingOutcome>;
};

/** What one configuration did (or would have done) on a turn. */
export type KnowledgeShadowReport = {
  /** The turn's grounding metadata under this configuration (`failureReason` when it failed open). */
  metadata: KnowledgeGroundingMetadata;
  /** The block this configuration produced (injected or not), or null when it produced none. */
  block: string | null;
  /** Citations of the entries in `block`. */
  citations: KnowledgeCitation[];
  /** Estimated tokens of `block` (0 without one). */
  contextTokens: number;
};

/**
 * The `knowledge:shadow` report of one turn: the configuration in use (with whether its block was injected) and
 * each shadow alternative by name. Raised for turns in shadow mode and for turns with shadow alternatives.
 */
export type KnowledgeShadowEvent = {
  /** The turn's query. */
  query: string;
  /** The instance's configuration; `injected` false in shadow mode. */
  primary: KnowledgeShadowReport & { injected: boolean };
  /** Each configured alternative, by name (never injected). */
  alternatives: Record<string, KnowledgeShadowReport>;
};

/** Engine health for telemetry and host introspection. */
export type KnowledgeEngineStatus = {
  enabled: boolean;
  /** A snapshot is installed and serving. */
  ready: boolean;
  entryCount: number;
  lastError: string | null;
  validationIssues: KnowledgeValidationIssue[];
  /** A build or rebuild is in progress (the previous snapshot, if any, keeps serving). */
  building?: boolean;
  /** Where the serving snapshot came from: built in this process or loaded from a prebuilt artifact. */
  snapshotOrigin?: "built" | "cache" | "artifact" | "update";
  /** Notes about the last build, e.g. why a prebuilt artifact was not used. */
  notes?: string[];
  /**
   * What the serving snapshot holds: its content key (see `buildKnowledgeIndexCacheKey`) and, per source, its id,
   * version and entry count (lexground). For an engine started from a self-contained artifact alone, both come
   * from the artifact, as stored when it was built. Absent while nothing serves.
   */
  content?: { key: string; sources: { id: string; version: string; entryCount: number }[] };
  /**
   * The configuration the engine runs with: preset name, resolved retrieval and context settings (lexground).
   * Absent when the configuration is invalid (see `lastError`).
   */
  configuration?: KnowledgeEffectiveConfiguration;
  /** The external index backend's health, when the engine has one (`backend`). */
  backend?: KnowledgeBackendStatus;
};
