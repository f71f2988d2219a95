/**
 * The engine: one immutable snapshot per source set, built once (through the process cache), then per turn
 * `ground()` selects, renders and reports, failing open on every error and on timeout.
 */
import type {
  KnowledgeContextConfig,
  KnowledgeEffectiveConfiguration,
  KnowledgeEngineStatus,
  KnowledgeEntryInput,
  KnowledgeGroundingConfig,
  KnowledgeGroundingInput,
  KnowledgeGroundingMetadata,
  KnowledgeGroundingOutcome,
  KnowledgeIndexSnapshot,
  KnowledgeLogger,
  KnowledgeRebuildResult,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalRequest,
  KnowledgeSelection,
  KnowledgeSource,
  KnowledgeTelemetryTracer,
  KnowledgeUpdateResult,
  KnowledgeUpsertOptions,
  KnowledgeValidationIssue,
  KnowledgeValidationResult,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { contentKeySources } from "./artifact.js";
import {
  readGroundingConfig,
  resolveGroundingConfiguration,
  resolveRetrieval,
  resolveTimeout,
  validateConfigValues,
} from "./config.js";
import { assembleKnowledgeContext } from "./context.js";
import { DEFAULT_RECENT_TURNS, DEFAULT_TIMEOUT_MS, FALLBACK_VERSION } from "./defaults.js";
import { hasErrorMarker } from "./errors.js";
import { getOrBuildKnowledgeIndexSnapshot, getOrLoadKnowledgeIndexArtifact } from "./indexCache.js";
import type { KnowledgeIndexBuildOptions } from "./knowledgeIndex.js";
import {
  commitChange,
  createArtifactRegistry,
  createRegistry,
  type KnowledgeRegistry,
  type PlannedChange,
  planRemove,
  planUpdate,
  planUpsert,
  registrySources,
} from "./registryChanges.js";
import type { NormalizedSourceGroup } from "./resolve.js";
import { describeError, isUnreadable, readProperty, shapeOf, snapshotSourceArrays } from "./resolve.js";
import { retrieve, retrieveFrom } from "./retrieval.js";
import { yieldToEventLoop } from "./runtime.js";
import { type KnowledgeIndexBackend, publishChangeToBackend, publishToBackend } from "./searchBackend.js";
import { asShadowOutcome } from "./shadow.js";
import {
  applySnapshotChanges,
  canChangeSnapshot,
  compactSnapshotSteps,
  hasSnapshotChanges,
  updatableSnapshotSteps,
} from "./snapshotChanges.js";
import { runStepsYielding } from "./steps.js";
import { isTracer, telemetryAllowed, telemetryTracer, traced } from "./telemetry.js";

const TIMEOUT_ERROR_MARKER = Symbol.for("lexground.KnowledgeGroundingTimeoutError");

/**
 * Raised (and caught) when a grounding operation exceeds its timeout, whether the timer fired or a synchronous step
 * overran and its late result was discarded: the turn's `failureReason` is its `String()` either way,
 * `TimeoutError: Knowledge grounding timed out after <N>ms`.
 */
export class KnowledgeGroundingTimeoutError extends Error {
  override readonly name = "TimeoutError";
  /** Stable machine-readable code. */
  readonly code = "KNOWLEDGE_GROUNDING_TIMEOUT";
  readonly [TIMEOUT_ERROR_MARKER] = true;
  /** The timeout that was exceeded, in milliseconds. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`Knowledge grounding timed out after ${timeoutMs}ms`);
    this.timeoutMs = timeoutMs;
  }

  /** True for a `KnowledgeGroundingTimeoutError` from any copy of the package. */
  static isInstance(error: unknown): error is KnowledgeGroundingTimeoutError {
    return hasErrorMarker(error, TIMEOUT_ERROR_MARKER);
  }
}

/** Failure reason when no snapshot is installed yet (or there are no sources). */
export const INDEX_NOT_READY = "index-not-ready";
/** Failure reason when validation blocked the sources or the configuration, so no snapshot serves. */
export const VALIDATION_FAILED = "validation-failed";
/** Failure reason when the build threw, so no snapshot serves (a later turn retries it). */
export const BUILD_FAILED = "build-failed";

const REGISTRY_ERROR_MARKER = Symbol.for("lexground.KnowledgeRegistryError");

/**
 * Raised by `ready()` of a `strict` engine (and by NeuroLink's `knowledgeReady()` and grounded turns) when no
 * index serves because validation blocked the sources or the configuration, or the build threw.
 */
export class KnowledgeRegistryError extends Error {
  override readonly name = "KnowledgeRegistryError";
  readonly [REGISTRY_ERROR_MARKER] = true;
  /** Stable machine-readable code. */
  readonly code: "KNOWLEDGE_VALIDATION_FAILED" | "KNOWLEDGE_BUILD_FAILED";
  /** The turns' `failureReason` for the same cause. */
  readonly reason: "validation-failed" | "build-failed";
  /** Every validation issue (errors and warnings) of the failed attempt. */
  readonly issues: KnowledgeValidationIssue[];
  /** The engine status when the error was raised. */
  readonly status: KnowledgeEngineStatus;

  constructor(reason: "validation-failed" | "build-failed", status: KnowledgeEngineStatus) {
    super(
      reason === VALIDATION_FAILED
        ? `knowledge grounding is off: ${describeIssues(status.validationIssues)}`
        : `knowledge grounding is off: the index build failed: ${status.lastError}`,
    );
    this.code = reason === VALIDATION_FAILED ? "KNOWLEDGE_VALIDATION_FAILED" : "KNOWLEDGE_BUILD_FAILED";
    this.reason = reason;
    this.issues = status.validationIssues.slice();
    this.status = status;
  }

  /** True for a `KnowledgeRegistryError` from any copy of the package. */
  static isInstance(error: unknown): error is KnowledgeRegistryError {
    return hasErrorMarker(error, REGISTRY_ERROR_MARKER);
  }
}

/** Entry ids named in a warning before "and N more". */
const NAMED_ENTRIES = 5;

/** `3 error(s) in 2 entries ("a", "b"); first: <path>: <message>` for the error-level issues. */
function describeIssues(issues: readonly KnowledgeValidationIssue[]): string {
  const errors = issues.filter((issue) => issue.level === "error");
  const ids = [...new Set(errors.flatMap((issue) => (issue.entryId === undefined ? [] : [issue.entryId])))];
  const named = ids
    .slice(0, NAMED_ENTRIES)
    .map((id) => JSON.stringify(id.length > 60 ? `${id.slice(0, 57)}...` : id));
  const more = ids.length > NAMED_ENTRIES ? ` and ${ids.length - NAMED_ENTRIES} more` : "";
  const where =
    ids.length > 0
      ? ` in ${ids.length} ${ids.length === 1 ? "entry" : "entries"} (${named.join(", ")}${more})`
      : "";
  const first = errors[0];
  // Configuration messages already start with their path.
  const prefix = first?.path && !first.message.startsWith(first.path) ? `${first.path}: ` : "";
  const firstText = first ? `; first: ${prefix}${first.message}` : "";
  return `${errors.length} validation error(s)${where}${firstText}`;
}

/** Keys already warned about, per logger: one warning per logger and content (bounded). */
const warnedKeys = new WeakMap<object, Set<string>>();
const WARNED_KEYS_LIMIT = 1_024;

/** Logs `message` once per logger and `key`; a logger that throws is ignored (logging must not break a build). */
function warnOnce(logger: KnowledgeLogger | null, key: string, message: string): void {
  if (logger === null || (typeof logger !== "object" && typeof logger !== "function")) return;
  let keys = warnedKeys.get(logger);
  if (!keys) {
    keys = new Set();
    warnedKeys.set(logger, keys);
  }
  if (keys.has(key)) return;
  if (keys.size >= WARNED_KEYS_LIMIT) keys.clear();
  keys.add(key);
  try {
    logger.warn(message);
  } catch {
    // A host logger that throws is its own problem; the status still says everything.
  }
}

/** Minimum pause between automatic retries of a build that threw (not one that failed validation). */
const BUILD_RETRY_INTERVAL_MS = 1_000;
/** Quiet time after an update before its changes are folded into a fresh snapshot (a burst is folded once). */
const COMPACTION_DELAY_MS = 200;
/** Longest slice of compaction work between two yields to the event loop. */
const COMPACTION_SLICE_MS = 8;

/** An applied update, kept until a compaction has folded it in. */
type AppliedChange = {
  snapshot: KnowledgeIndexSnapshot;
  removed: string[];
  upserted: NormalizedKnowledgeEntry[];
};

/** Metadata of a turn that selected nothing: disabled, not ready, or failed open (with its reason). */
export function emptyMetadata(durationMs: number, failureReason?: string): KnowledgeGroundingMetadata {
  return {
    retrievalMode: "lexical",
    selectedIds: [],
    expandedIds: [],
    candidateCount: 0,
    contextTokens: 0,
    truncated: false,
    durationMs,
    failureReason,
  };
}

/** A boolean option of a turn's input, or undefined when absent, not a boolean, or unreadable (never throws). */
function readTurnFlag(input: unknown, key: "shadow" | "shadowAlternatives"): boolean | undefined {
  const value = readTurnField(input, key);
  return typeof value === "boolean" ? value : undefined;
}

/** A field of a turn's input, read once; undefined when the input is not an object or the read throws. */
function readTurnField(input: unknown, key: string): unknown {
  if (input === null || typeof input !== "object") return undefined;
  const value = readProperty(input, key);
  return isUnreadable(value) ? undefined : value;
}

/**
 * Knowledge grounding engine. Construction never throws and never waits: it reads the configuration once (each
 * option exactly once, into a plain copy: later changes to the host's object have no effect), validates it and
 * starts the one-time build; `ready()` resolves when that build settles. `ground()` never throws.
 *
 * Unlike NeuroLink's, the engine can be rebuilt: `rebuild(sources?)` builds a new snapshot and swaps it in
 * atomically when valid, while the previous snapshot keeps serving. Whatever order concurrent builds finish in,
 * the most recently requested valid set ends up serving: an invalid or failing set never replaces a valid one,
 * and a set requested earlier never replaces one requested later.
 */
export class KnowledgeGroundingEngine {
  private readonly config: KnowledgeGroundingConfig;
  private readonly resolved: KnowledgeResolvedRetrieval;
  /** The preset overlaid with the configuration's `context` (what the block is assembled with). */
  private readonly contextConfig: KnowledgeContextConfig | undefined;
  /** Preset name and resolved settings, for `getStatus()`; null when the configuration is invalid. */
  private readonly effective: KnowledgeEffectiveConfiguration | null;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private readonly enabled: boolean;
  private readonly strict: boolean;
  private readonly logger: KnowledgeLogger | null;
  /**
   * The OpenTelemetry tracer when tracing is on: the host's `telemetry.tracer`, else the one an entry point passed
   * at construction; otherwise null.
   */
  private readonly tracer: KnowledgeTelemetryTracer | null;
  /** False when `telemetry.isEnabled` is false: a turn's own tracer is refused too. */
  private readonly tracingAllowed: boolean;
  private snapshot: KnowledgeIndexSnapshot | null = null;
  /** The external index backend (`config.backend`), or null: the index is in memory. */
  private readonly backend: KnowledgeIndexBackend | null;
  private validationIssues: KnowledgeValidationIssue[] = [];
  private lastError: string | null = null;
  /** Why no snapshot serves, as of the latest settled request (null: none failed). */
  private unavailableReason: "validation-failed" | "build-failed" | null = null;
  private readonly buildPromise: Promise<void>;
  /** The source set of the latest request (a copy of its arrays), rebuilt by `rebuild()` and by retries. */
  private sources: unknown;
  /** Whether {@link sources} are the configured ones (a prebuilt artifact applies to those only). */
  private sourcesAreConfigured = true;
  /** Build requests are numbered in the order they are made. */
  private buildGeneration = 0;
  /** The request whose snapshot serves: an older request's snapshot never replaces it. */
  private servingGeneration = 0;
  /** The latest request that has settled: status (`lastError`, issues) reflects it, not an older one. */
  private statusGeneration = 0;
  private pendingBuilds = 0;
  private buildThrewAt: number | null = null;
  private configValid: boolean;
  private snapshotOrigin: KnowledgeEngineStatus["snapshotOrigin"];
  /** The content key of the serving snapshot (null when installed from elsewhere). */
  private contentKey: string | null = null;
  private notes: string[] = [];
  /** Shadow mode by default (`config.shadow`); a turn's `shadow` overrides it. */
  private readonly shadow: boolean;
  /** Engines of the configured shadow alternatives, by name, in configuration order. */
  private readonly alternatives: readonly (readonly [string, KnowledgeGroundingEngine])[];
  /** The validated source groups of the serving snapshot's build (the start of the update registry). */
  private servingGroups: readonly NormalizedSourceGroup[] | null = null;
  /** The sources a self-contained artifact serving alone holds (the start of its update registry), else null. */
  private servingArtifactSources: readonly { id: string; version: string }[] | null = null;
  /** The serving entries by source, for updates (created by the first update; null after a rebuild). */
  private registry: KnowledgeRegistry | null = null;
  /** Whether {@link sources} lags behind {@link registry} (materialized when a rebuild needs it). */
  private sourcesFromRegistry = false;
  /** Updates run one after the other, each after the builds requested before it. */
  private updateQueue: Promise<unknown> = Promise.resolve();
  /** The latest build or rebuild, which an update waits for. */
  private latestBuild: Promise<unknown> = Promise.resolve();
  /** Applied updates not yet folded by a compaction, oldest first. */
  private appliedChanges: AppliedChange[] = [];
  /** The running background compaction, if any. */
  private compaction: Promise<void> | null = null;

  /**
   * @param config the configuration; read once, here (see {@link readGroundingConfig}).
   * @param now the clock used for durations and retry pacing.
   * @param defaults values for options the configuration leaves out: NeuroLink passes its own `logger`, and,
   *   having read the configuration itself with {@link readGroundingConfig}, passes the copy as `config` and the
   *   issues found while reading as `readIssues`; the Node entry points pass the host's OpenTelemetry `tracer`,
   *   used when the configuration has no `telemetry.tracer`.
   */
  constructor(
    config: KnowledgeGroundingConfig,
    now: () => number = Date.now,
    defaults: {
      logger?: KnowledgeLogger | null;
      readIssues?: readonly KnowledgeValidationIssue[];
      tracer?: KnowledgeTelemetryTracer | null;
    } = {},
  ) {
    const read = readGroundingConfig(
      config !== null && typeof config === "object" ? config : { enabled: false, sources: [] },
    );
    if (Array.isArray(defaults?.readIssues)) read.issues.unshift(...defaults.readIssues);
    const safeConfig = read.config;
    this.config = Object.freeze(safeConfig);
    this.tracingAllowed = telemetryAllowed(safeConfig);
    this.tracer = telemetryTracer(safeConfig, defaults?.tracer ?? null);
    this.now = typeof now === "function" ? now : Date.now;
    this.enabled = safeConfig.enabled === true;
    this.strict = safeConfig.strict === true;
    const logger = safeConfig.logger !== undefined ? safeConfig.logger : (defaults?.logger ?? console);
    this.logger = logger !== null && typeof logger === "object" ? logger : null;
    const configIssues = [...read.issues, ...validateConfigValues(safeConfig)];
    this.configValid = !configIssues.some((issue) => issue.level === "error");
    if (this.configValid) {
      const { contextConfig, ...effective } = resolveGroundingConfiguration(safeConfig);
      this.effective = effective;
      this.resolved = effective.retrieval;
      this.contextConfig = contextConfig;
    } else {
      this.effective = null;
      this.resolved = resolveRetrieval(undefined);
      this.contextConfig = undefined;
    }
    this.timeoutMs = this.configValid ? resolveTimeout(safeConfig) : DEFAULT_TIMEOUT_MS;
    this.shadow = safeConfig.shadow === true;
    this.backend = this.configValid && safeConfig.backend ? safeConfig.backend : null;
    // The arrays are copied now: a host that clears or reuses them later changes nothing until it rebuilds.
    this.sources = snapshotSourceArrays(safeConfig.sources);
    const sourcesShape = shapeOf(this.sources);
    const hasSources =
      isUnreadable(sourcesShape) ||
      (Array.isArray(this.sources) && this.sources.length > 0) ||
      // With a backend, an artifact is no source set to publish (the backend's index serves instead).
      (safeConfig.indexArtifact !== undefined && this.backend === null);
    if (!this.configValid) {
      this.validationIssues = configIssues;
      this.lastError = `invalid knowledge grounding configuration: ${configIssues.map((issue) => issue.message).join("; ")}`;
      this.unavailableReason = VALIDATION_FAILED;
      if (this.enabled) {
        warnOnce(
          this.logger,
          `config\n${this.lastError}`,
          `[KnowledgeGrounding] the knowledge grounding configuration is invalid, so grounding is off: ${describeIssues(configIssues)}. Turns report failureReason "validation-failed"; see getStatus().validationIssues (NeuroLink: getKnowledgeStatus()).`,
        );
      }
      this.buildPromise = Promise.resolve();
    } else if (this.enabled && hasSources) {
      if (this.backend) void this.openBackend();
      this.buildPromise = this.build(this.sources, true).then(() => {});
      this.latestBuild = this.buildPromise;
    } else if (this.enabled && this.backend) {
      // Without sources, an engine with a backend serves what another process published.
      this.buildPromise = this.openBackend();
    } else {
      this.buildPromise = Promise.resolve();
    }
    this.alternatives = this.configValid && this.enabled ? this.createAlternatives(safeConfig) : [];
  }

  /**
   * One engine per shadow alternative: the same sources (this engine's copy), blocked domains, timeout and
   * logger, the alternative's own preset and settings, always in shadow mode. Identical index settings share
   * one build through the process cache.
   */
  private createAlternatives(
    config: KnowledgeGroundingConfig,
  ): (readonly [string, KnowledgeGroundingEngine])[] {
    const alternatives = config.shadowAlternatives;
    if (!alternatives) return [];
    return Object.entries(alternatives).map(([name, alternative]) => {
      const engine = new KnowledgeGroundingEngine(
        {
          enabled: true,
          sources: this.sources as KnowledgeSource[],
          ...(config.blockedDomains === undefined ? {} : { blockedDomains: config.blockedDomains }),
          ...(config.timeoutMs === undefined ? {} : { timeoutMs: config.timeoutMs }),
          ...(alternative.preset === undefined ? {} : { preset: alternative.preset }),
          ...(alternative.retrieval === undefined ? {} : { retrieval: alternative.retrieval }),
          ...(alternative.context === undefined ? {} : { context: alternative.context }),
          logger: this.logger,
          shadow: true,
        },
        this.now,
      );
      return [name, engine] as const;
    });
  }

  /** The index parameters derived from the configuration (part of the cache key). */
  private indexOptions(): KnowledgeIndexBuildOptions {
    return {
      fieldWeights: this.resolved.fieldWeights,
      k1: this.resolved.k1,
      b: this.resolved.b,
      analyzer: this.resolved.analyzer,
      scoring: this.resolved.scoring,
    };
  }

  /**
   * Builds (or fetches from the process cache) the snapshot of `sources` and installs it when valid, unless a
   * request made after this one already installed its snapshot. Status (`lastError`, issues) follows the latest
   * settled request. Resolves with whether this request went live, and why not. Never rejects.
   */
  private async build(
    sources: unknown,
    useArtifact: boolean,
    operation: "build" | "rebuild" | "retry" = "build",
  ): Promise<Pick<KnowledgeRebuildResult, "live" | "reason">> {
    const started = this.now();
    return traced(
      this.tracer,
      `lexground.${operation === "rebuild" ? "rebuild" : "build"}`,
      { "lexground.operation": operation, "lexground.preset": this.effective?.preset },
      () => this.buildUntraced(sources, useArtifact),
      (outcome) => {
        const errors = this.validationIssues.filter((issue) => issue.level === "error").length;
        return {
          attributes: {
            "lexground.live": outcome.live,
            "lexground.reason": outcome.reason,
            "lexground.duration_ms": this.now() - started,
            "lexground.entry_count": outcome.live ? (this.snapshot?.entryCount ?? 0) : undefined,
            "lexground.snapshot_origin": outcome.live ? this.snapshotOrigin : undefined,
            "lexground.validation.error_count": errors,
            "lexground.validation.warning_count": this.validationIssues.length - errors,
            "lexground.notes": this.notes.length > 0 ? this.notes.slice() : undefined,
          },
          failure:
            outcome.reason === VALIDATION_FAILED || outcome.reason === BUILD_FAILED
              ? (this.lastError ?? outcome.reason)
              : undefined,
        };
      },
    );
  }

  private async buildUntraced(
    sources: unknown,
    useArtifact: boolean,
  ): Promise<Pick<KnowledgeRebuildResult, "live" | "reason">> {
    const generation = ++this.buildGeneration;
    this.pendingBuilds++;
    try {
      // A prebuilt artifact applies to the configured sources only, not to sources given to rebuild().
      if (this.backend) return await this.buildIntoBackend(this.backend, sources, generation);
      const artifact = useArtifact ? this.config.indexArtifact : undefined;
      // Without sources, a self-contained artifact is the knowledge base: loaded on its own, nothing validated.
      const artifactOnly =
        artifact !== undefined && (sources === undefined || (Array.isArray(sources) && sources.length === 0));
      const result = artifactOnly
        ? await getOrLoadKnowledgeIndexArtifact(artifact, this.indexOptions())
        : await getOrBuildKnowledgeIndexSnapshot(sources, this.indexOptions(), FALLBACK_VERSION, artifact);
      const latest = generation >= this.statusGeneration;
      if (latest) {
        this.statusGeneration = generation;
        this.validationIssues = result.validation.issues;
        this.buildThrewAt = null;
      }
      if (!result.validation.ok || !result.snapshot) {
        if (latest) this.validationBlocked(result.validation, result.cacheKey);
        return { live: false, reason: VALIDATION_FAILED };
      }
      if (generation < this.servingGeneration) return { live: false, reason: "superseded" };
      this.servingGeneration = generation;
      this.snapshot = result.snapshot;
      // Updates start again from this build's entries.
      this.servingGroups = result.groups ?? null;
      this.servingArtifactSources = artifactOnly ? contentKeySources(result.cacheKey) : null;
      this.registry = null;
      this.appliedChanges = [];
      this.snapshotOrigin = result.cacheHit ? "cache" : result.origin;
      this.contentKey = result.cacheKey;
      this.notes = result.notes.slice();
      if (latest) {
        this.lastError = null;
        this.unavailableReason = null;
      }
      return { live: true };
    } catch (caught) {
      if (generation >= this.statusGeneration) {
        this.statusGeneration = generation;
        this.lastError = describeError(caught);
        this.unavailableReason = BUILD_FAILED;
        this.buildThrewAt = this.now();
        this.warnBlocked(`build\n${this.lastError}`, `the knowledge index build failed: ${this.lastError}`);
      }
      return { live: false, reason: BUILD_FAILED };
    } finally {
      this.pendingBuilds--;
    }
  }

  /** Records (and warns once) that validation blocked the latest source set, so no index serves it. */
  private validationBlocked(validation: KnowledgeValidationResult, cacheKey: string): void {
    const errors = validation.issues.filter((issue) => issue.level === "error").length;
    this.lastError = `knowledge validation failed with ${errors} error(s)`;
    this.unavailableReason = VALIDATION_FAILED;
    this.warnBlocked(
      `validation\n${cacheKey}`,
      `knowledge validation failed: ${describeIssues(validation.issues)}`,
    );
  }

  /**
   * {@link buildUntraced} with a backend: validates, then publishes to the backend (which keeps the previous
   * generation serving when publishing fails: the error propagates to the caller's `build-failed` path).
   */
  private async buildIntoBackend(
    backend: KnowledgeIndexBackend,
    sources: unknown,
    generation: number,
  ): Promise<Pick<KnowledgeRebuildResult, "live" | "reason">> {
    const result = await publishToBackend(backend, sources, this.indexOptions(), FALLBACK_VERSION);
    const latest = generation >= this.statusGeneration;
    if (latest) {
      this.statusGeneration = generation;
      this.validationIssues = result.validation.issues;
      this.buildThrewAt = null;
    }
    if (!result.published) {
      if (latest) this.validationBlocked(result.validation, result.cacheKey);
      return { live: false, reason: VALIDATION_FAILED };
    }
    if (generation < this.servingGeneration) return { live: false, reason: "superseded" };
    this.servingGeneration = generation;
    this.backendServing = true;
    // Updates start again from this publication's entries.
    this.servingGroups = result.groups;
    this.servingArtifactSources = null;
    this.registry = null;
    this.backendContentKey = result.cacheKey;
    this.snapshotOrigin = "built";
    this.notes = result.published.reused
      ? [`${backend.name}: generation ${result.published.generation} already held these entries; reused`]
      : [];
    if (latest) {
      this.lastError = null;
      this.unavailableReason = null;
    }
    return { live: true };
  }

  /** An engine with a backend and no sources: learns whether a generation is published (never rejects). */
  private async openBackend(): Promise<void> {
    try {
      const index = await this.backend!.current();
      if (index) this.backendServing = true;
    } catch {
      // The backend reports the error in its status; turns retry.
    }
  }

  /** Whether an index serves turns: a snapshot in memory, or a published generation of the backend. */
  private isServing(): boolean {
    return this.snapshot !== null || (this.backendServing && this.backend !== null);
  }

  /** True once the backend has served or published a generation (it stays published while the backend is down). */
  private backendServing = false;
  /** The content key of what this engine last published to the backend (the base of its incremental updates). */
  private backendContentKey: string | null = null;

  /** The one warning for a blocked source set (once per logger and content; see {@link warnOnce}). */
  private warnBlocked(key: string, what: string): void {
    const consequence = this.isServing()
      ? "the previous snapshot keeps serving"
      : `grounding is off until a valid set is built (turns report failureReason "${this.unavailableReason}")`;
    warnOnce(
      this.logger,
      key,
      `[KnowledgeGrounding] ${what}; ${consequence}. See getStatus().validationIssues (NeuroLink: getKnowledgeStatus()) or run \`lexground validate <manifest>\` for every issue.`,
    );
  }

  /** Whether grounding is switched on in the configuration (as read at construction). */
  isEnabled(): boolean {
    return this.enabled;
  }

  /**
   * The configuration as read at construction: a frozen plain copy (options that could not be read are absent;
   * `sources` is the value given, not the engine's copy of its arrays).
   */
  getConfig(): Readonly<KnowledgeGroundingConfig> {
    return this.config;
  }

  /**
   * Resolves when the constructor's build has settled (immediately afterwards). Never rejects, unless the
   * configuration sets `strict: true`: then it rejects with a {@link KnowledgeRegistryError} when no snapshot
   * serves because validation (of the sources or the configuration) failed or the build threw.
   */
  ready(): Promise<void> {
    if (!this.strict) return this.buildPromise;
    return this.buildPromise.then(() => {
      const error = this.unavailableError();
      if (error) throw error;
    });
  }

  /** The error a strict host gets while no snapshot serves because of a validation or build failure. */
  unavailableError(): KnowledgeRegistryError | null {
    if (this.isServing() || this.unavailableReason === null) return null;
    return new KnowledgeRegistryError(this.unavailableReason, this.getStatus());
  }

  /** Engine health: readiness, entry count, last error and validation issues. */
  getStatus(): KnowledgeEngineStatus {
    const status: KnowledgeEngineStatus = {
      enabled: this.isEnabled(),
      ready: this.isServing(),
      entryCount: this.snapshot?.entryCount ?? 0,
      lastError: this.lastError,
      validationIssues: this.validationIssues.slice(),
      building: this.pendingBuilds > 0,
    };
    if (this.snapshotOrigin) status.snapshotOrigin = this.snapshotOrigin;
    if (this.snapshot && this.contentKey !== null)
      status.content = { key: this.contentKey, sources: contentKeySources(this.contentKey) };
    if (this.backend) {
      const backendStatus = this.backend.status();
      status.backend = backendStatus;
      if (backendStatus.generation !== null) this.backendServing = true;
      status.ready = this.isServing();
      status.entryCount = backendStatus.entryCount;
    }
    if (this.notes.length > 0) status.notes = this.notes.slice();
    if (this.effective) {
      status.configuration = {
        preset: this.effective.preset,
        retrieval: this.getResolvedRetrieval(),
        context: { ...this.effective.context },
      };
    }
    return status;
  }

  /** The serving snapshot, if any (for diagnostics and tools such as the CLI). */
  getSnapshot(): KnowledgeIndexSnapshot | null {
    return this.snapshot;
  }

  /** Resolved retrieval settings: the preset overlaid with the configuration's `retrieval`, then the defaults. */
  getResolvedRetrieval(): KnowledgeResolvedRetrieval {
    return { ...this.resolved, fieldWeights: { ...this.resolved.fieldWeights } };
  }

  /**
   * Rebuilds from new sources (or the current ones) and swaps the snapshot in atomically when the new set is
   * valid. While it builds, and when the new set is invalid or its build throws, the previous snapshot keeps
   * serving and `getStatus()` reports the new issues. When several rebuilds overlap, the most recently requested
   * valid set serves in the end, whatever order they finish in. Resolves with the status after the attempt and
   * `live` (this set went live) or `reason` (`"validation-failed"`, `"build-failed"`, or `"superseded"` when a
   * later request's set was installed first). Never rejects, whatever `sources` is.
   */
  async rebuild(sources?: KnowledgeSource[]): Promise<KnowledgeRebuildResult> {
    if (!this.configValid) return { ...this.getStatus(), live: false, reason: VALIDATION_FAILED };
    if (sources !== undefined) {
      // Copied now, before the first await: the host may reuse its arrays as soon as this returns.
      this.sources = snapshotSourceArrays(sources);
      this.sourcesAreConfigured = false;
      this.sourcesFromRegistry = false;
    }
    const build = this.build(this.currentSources(), this.sourcesAreConfigured, "rebuild");
    this.latestBuild = build;
    const [outcome] = await Promise.all([
      build,
      // Alternatives follow the primary's sources; their own outcome shows in their reports, not here.
      ...this.alternatives.map(([, engine]) => engine.rebuild(this.sources as KnowledgeSource[])),
    ]);
    return { ...this.getStatus(), ...outcome };
  }

  /** The current source set: the last one given, with the updates applied since. */
  private currentSources(): unknown {
    if (this.sourcesFromRegistry && this.registry) {
      this.sources = registrySources(this.registry);
      this.sourcesFromRegistry = false;
    }
    return this.sources;
  }

  /**
   * Adds entries, or replaces the entries with their ids, without rebuilding the index. `changes` is a list of
   * entries (each replaces the entry with its id in its source; new ones go to `options.sourceId`, default the
   * first source) or a list of sources (`{ id, version?, entries }`: the entries go to that source, created when
   * new; an existing source keeps its version). The change is validated as a build validates entries; an error
   * refuses it (`live: false`, `reason: "validation-failed"`, the issues in `issues` and in the status) and
   * nothing changes. A valid change goes live atomically: a turn sees the registry before it or after it, never
   * between, and its selections, scores, confidence and blocks are those of a full build of the registry after
   * the change. Updates apply one after the other, after any build or rebuild requested before them. Needs a
   * serving snapshot built by this engine or loaded from a one-source artifact alone, or with a `backend` a
   * generation this engine published (`reason: "index-not-ready"` otherwise); with a backend the change is
   * published as the backend's next generation (`reason: "build-failed"` when that fails, nothing changed).
   * Never rejects.
   *
   * Cost: validating and tokenizing the changed entries, plus one copied byte per entry (the first update of an
   * artifact-only engine also indexes its entries once); turns then score the changed snapshot at query time
   * (about three times the CPU of a fresh snapshot) until a background compaction, which yields to the event loop every few milliseconds, has folded the
   * changes into a fresh snapshot. See "Incremental updates" in the README.
   */
  upsert(
    changes: KnowledgeSource[] | KnowledgeEntryInput[],
    options?: KnowledgeUpsertOptions,
  ): Promise<KnowledgeUpdateResult> {
    return this.enqueueUpdate(
      (registry) => planUpsert(registry, changes, options, FALLBACK_VERSION),
      (engine) => engine.upsert(changes, options),
    );
  }

  /**
   * Removes the entries with these ids without rebuilding the index (ids that no entry has are reported as
   * warnings). Atomic and exact like {@link upsert}; never rejects.
   */
  remove(ids: readonly string[]): Promise<KnowledgeUpdateResult> {
    return this.enqueueUpdate(
      (registry) => planRemove(registry, ids),
      (engine) => engine.remove(ids),
    );
  }

  /**
   * Removes and upserts in one atomic change: `remove` (ids) first, then `upsert` (entries or sources, as for
   * {@link upsert}); a turn sees neither or both. What the file watcher uses when files change.
   */
  update(
    changes: { upsert?: KnowledgeSource[] | KnowledgeEntryInput[]; remove?: readonly string[] },
    options?: KnowledgeUpsertOptions,
  ): Promise<KnowledgeUpdateResult> {
    const read = changes !== null && typeof changes === "object" ? changes : {};
    const upsert = readTurnField(read, "upsert");
    const remove = readTurnField(read, "remove");
    return this.enqueueUpdate(
      (registry) => planUpdate(registry, { upsert, remove }, options, FALLBACK_VERSION),
      (engine) => engine.update(changes, options),
    );
  }

  /**
   * Resolves when every update requested so far is applied and folded into a fresh snapshot by the background
   * compaction (for tests, benchmarks and hosts that want the fastest turns right away). Never rejects.
   */
  async compacted(): Promise<void> {
    await this.updateQueue.catch(() => {});
    while (this.compaction) await this.compaction;
    await Promise.all(this.alternatives.map(([, engine]) => engine.compacted()));
  }

  private enqueueUpdate(
    plan: (registry: KnowledgeRegistry) => PlannedChange,
    forward: (engine: KnowledgeGroundingEngine) => Promise<KnowledgeUpdateResult>,
  ): Promise<KnowledgeUpdateResult> {
    const run = async (): Promise<KnowledgeUpdateResult> => {
      const [outcome] = await Promise.all([
        this.applyUpdate(plan),
        // Alternatives follow the primary's changes; their own outcome shows in their reports, not here.
        ...this.alternatives.map(([, engine]) => forward(engine)),
      ]);
      return outcome;
    };
    const result = this.updateQueue.then(run, run);
    this.updateQueue = result.catch(() => {});
    return result.catch((caught) => ({
      ...this.getStatus(),
      live: false,
      reason: BUILD_FAILED,
      issues: [{ level: "error", code: "update-failed", message: describeError(caught) }],
    }));
  }

  private async applyUpdate(
    plan: (registry: KnowledgeRegistry) => PlannedChange,
  ): Promise<KnowledgeUpdateResult> {
    if (!this.configValid) return { ...this.getStatus(), live: false, reason: VALIDATION_FAILED, issues: [] };
    await this.latestBuild.catch(() => {});
    if (this.backend) return this.applyBackendUpdate(this.backend, plan);
    if (!this.snapshot) return { ...this.getStatus(), live: false, reason: INDEX_NOT_READY, issues: [] };
    if (!this.registry) {
      if (this.servingGroups) this.registry = await createRegistry(this.servingGroups);
      else if (this.servingArtifactSources)
        this.registry = await createArtifactRegistry(this.servingArtifactSources, this.snapshot.entriesById);
      // A snapshot installed from elsewhere, or an artifact of several sources: nothing says where entries live.
      if (!this.registry) return { ...this.getStatus(), live: false, reason: INDEX_NOT_READY, issues: [] };
    }
    const registry = this.registry;
    const change = plan(registry);
    const generation = ++this.buildGeneration;
    this.statusGeneration = generation;
    this.validationIssues = change.issues;
    if (!change.ok) {
      const errors = change.issues.filter((issue) => issue.level === "error").length;
      this.lastError = `knowledge validation failed with ${errors} error(s) in the update; the previous snapshot keeps serving`;
      return { ...this.getStatus(), live: false, reason: VALIDATION_FAILED, issues: change.issues };
    }
    const upserted = change.upserted.map(({ entry }) => entry);
    if (upserted.length === 0 && change.removed.length === 0) {
      this.lastError = null;
      return { ...this.getStatus(), live: true, issues: change.issues };
    }
    let previous = this.snapshot;
    if (!canChangeSnapshot(previous) && this.servingArtifactSources) {
      // An artifact alone holds finished contributions, not the term frequencies a change recomputes them from:
      // its entries are indexed again once (in slices; the artifact keeps serving meanwhile).
      const updatable = await runStepsYielding(updatableSnapshotSteps(previous), COMPACTION_SLICE_MS);
      if (updatable && this.snapshot === previous) {
        this.snapshot = updatable;
        previous = updatable;
      }
    }
    if (!canChangeSnapshot(previous)) {
      // A snapshot loaded without term frequencies: a full build of the changed registry, as rebuild() does.
      commitChange(registry, change);
      this.sourcesFromRegistry = true;
      this.sourcesAreConfigured = false;
      const outcome = await this.build(this.currentSources(), false, "rebuild");
      return {
        ...this.getStatus(),
        live: outcome.live,
        ...(outcome.live ? {} : { reason: BUILD_FAILED }),
        issues: change.issues,
      };
    }
    const next = applySnapshotChanges(previous, change.removed, upserted);
    commitChange(registry, change);
    this.sourcesFromRegistry = true;
    this.sourcesAreConfigured = false;
    this.servingGeneration = generation;
    this.snapshot = next;
    this.snapshotOrigin = "update";
    this.lastError = null;
    this.unavailableReason = null;
    this.appliedChanges.push({ snapshot: next, removed: change.removed, upserted });
    this.scheduleCompaction();
    return { ...this.getStatus(), live: true, issues: change.issues };
  }

  /**
   * {@link applyUpdate} with a backend: needs a generation this engine published; validated as in memory, then the
   * registry after the change is published through the backend's incremental `update` (atomic for every reader;
   * the registry changes only once it is published, so a failure leaves everything as it was).
   */
  private async applyBackendUpdate(
    backend: KnowledgeIndexBackend,
    plan: (registry: KnowledgeRegistry) => PlannedChange,
  ): Promise<KnowledgeUpdateResult> {
    if (!this.servingGroups || this.backendContentKey === null)
      return { ...this.getStatus(), live: false, reason: INDEX_NOT_READY, issues: [] };
    this.registry ??= await createRegistry(this.servingGroups);
    const change = plan(this.registry);
    const generation = ++this.buildGeneration;
    this.statusGeneration = generation;
    this.validationIssues = change.issues;
    if (!change.ok) {
      const errors = change.issues.filter((issue) => issue.level === "error").length;
      this.lastError = `knowledge validation failed with ${errors} error(s) in the update; the previous generation keeps serving`;
      return { ...this.getStatus(), live: false, reason: VALIDATION_FAILED, issues: change.issues };
    }
    if (change.upserted.length === 0 && change.removed.length === 0) {
      this.lastError = null;
      return { ...this.getStatus(), live: true, issues: change.issues };
    }
    try {
      const applied = await publishChangeToBackend(
        backend,
        this.registry,
        change,
        this.indexOptions(),
        this.backendContentKey,
      );
      this.registry = applied.registry;
      this.backendContentKey = applied.contentKey;
    } catch (caught) {
      this.lastError = describeError(caught);
      return { ...this.getStatus(), live: false, reason: BUILD_FAILED, issues: change.issues };
    }
    this.sourcesFromRegistry = true;
    this.sourcesAreConfigured = false;
    this.servingGeneration = generation;
    this.lastError = null;
    this.unavailableReason = null;
    return { ...this.getStatus(), live: true, issues: change.issues };
  }

  /** Starts the background compaction unless it runs (it loops until the serving snapshot is fresh). */
  private scheduleCompaction(): void {
    if (this.compaction) return;
    this.compaction = this.compact()
      .catch(() => {
        // A failed compaction changes nothing: the changed snapshot keeps serving, exactly.
      })
      .finally(() => {
        this.compaction = null;
      });
  }

  /**
   * Folds the applied changes into a fresh snapshot, in slices of at most {@link COMPACTION_SLICE_MS} between
   * yields. Changes applied meanwhile are applied again on top of the result before it is installed, so what
   * serves is always exactly the registry after the latest update.
   */
  private async compact(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, COMPACTION_DELAY_MS));
    while (this.snapshot && hasSnapshotChanges(this.snapshot) && this.appliedChanges.length > 0) {
      const target = this.appliedChanges[this.appliedChanges.length - 1]!.snapshot;
      const steps = compactSnapshotSteps(target);
      let sliceStart = performance.now();
      let step = steps.next();
      while (!step.done) {
        if (performance.now() - sliceStart >= COMPACTION_SLICE_MS) {
          await yieldToEventLoop();
          sliceStart = performance.now();
        }
        step = steps.next();
      }
      await this.updateQueue.catch(() => {});
      const position = this.appliedChanges.findIndex((applied) => applied.snapshot === target);
      if (position < 0) return; // a rebuild replaced the registry meanwhile
      const later = this.appliedChanges.slice(position + 1);
      let compacted = step.value;
      for (const applied of later)
        compacted = applySnapshotChanges(compacted, applied.removed, applied.upserted);
      if (this.snapshot !== (later.at(-1)?.snapshot ?? target)) return;
      this.snapshot = compacted;
      this.appliedChanges = later.length > 0 ? [{ snapshot: compacted, removed: [], upserted: [] }] : [];
    }
  }

  /** Installs a snapshot built elsewhere (for example loaded from a prebuilt artifact). */
  installSnapshot(
    snapshot: KnowledgeIndexSnapshot,
    origin: KnowledgeEngineStatus["snapshotOrigin"],
    notes: string[] = [],
  ): void {
    const generation = ++this.buildGeneration;
    this.servingGeneration = generation;
    this.statusGeneration = generation;
    this.snapshot = snapshot;
    this.snapshotOrigin = origin;
    this.contentKey = null;
    this.notes = notes.slice();
    this.lastError = null;
    this.unavailableReason = null;
    // Nothing says which sources an installed snapshot's entries belong to: updates answer index-not-ready.
    this.servingGroups = null;
    this.servingArtifactSources = null;
    this.registry = null;
    this.appliedChanges = [];
  }

  /** Builds the retrieval request: the query, the last {@link DEFAULT_RECENT_TURNS} turns, the integrations. */
  private buildRequest(input: KnowledgeGroundingInput): KnowledgeRetrievalRequest {
    const turns = Array.isArray(input.recentTurns) ? input.recentTurns : [];
    const enabled = input.scope?.enabledIntegrations;
    return {
      query: typeof input.query === "string" ? input.query : "",
      recentTurns: turns.slice(-DEFAULT_RECENT_TURNS),
      enabledIntegrations: Array.isArray(enabled) ? enabled : [],
    };
  }

  /**
   * Grounds one turn: waits for the index (counted in the timeout), retrieves, renders. Never throws: on any
   * failure or timeout the outcome has no context and `metadata.failureReason` says why. In shadow mode
   * (`input.shadow`, else `config.shadow`) the outcome has no context either: the block it would have injected is
   * in `shadowContext` and `metadata.shadow` is true. Configured shadow alternatives are grounded on the same
   * input, in shadow mode, and reported in `alternatives` (unless `input.shadowAlternatives` is false).
   */
  async ground(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome> {
    const tracer = this.tracer ?? this.turnTracer(input);
    if (!tracer) return this.groundUntraced(input);
    return traced(
      tracer,
      "lexground.ground",
      { "lexground.preset": this.effective?.preset },
      () => this.groundUntraced(input),
      ({ ephemeralContext, metadata }) => ({
        attributes: {
          "lexground.grounded": ephemeralContext !== null,
          "lexground.duration_ms": metadata.durationMs,
          "lexground.candidate_count": metadata.candidateCount,
          "lexground.selected_ids": metadata.selectedIds,
          "lexground.expanded_ids": metadata.expandedIds,
          "lexground.confidence": metadata.confidence,
          "lexground.context_tokens": metadata.contextTokens,
          "lexground.truncated": metadata.truncated,
          "lexground.failure_reason": metadata.failureReason,
          "lexground.shadow": metadata.shadow,
        },
        failure: metadata.failureReason,
      }),
    );
  }

  /** The tracer a turn's input carries (`input.tracer`), when tracing is allowed and it is one. */
  private turnTracer(input: KnowledgeGroundingInput): KnowledgeTelemetryTracer | null {
    if (!this.tracingAllowed) return null;
    const tracer = readTurnField(input, "tracer");
    return isTracer(tracer) ? tracer : null;
  }

  /** {@link ground} without its span: shadow mode and alternatives around {@link groundTurn}. */
  private async groundUntraced(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome> {
    if (!this.isEnabled()) return { ephemeralContext: null, metadata: emptyMetadata(0), retrieval: null };
    const shadowFlag = readTurnFlag(input, "shadow");
    const shadow = shadowFlag ?? this.shadow;
    const runAlternatives =
      this.alternatives.length > 0 && readTurnFlag(input, "shadowAlternatives") !== false;
    const primary = this.groundTurn(input);
    if (!runAlternatives) {
      const outcome = await primary;
      return shadow ? asShadowOutcome(outcome) : outcome;
    }
    const alternativeInput: KnowledgeGroundingInput = {
      query: readTurnField(input, "query") as string,
      recentTurns: readTurnField(input, "recentTurns") as KnowledgeGroundingInput["recentTurns"],
      scope: readTurnField(input, "scope") as KnowledgeGroundingInput["scope"],
      shadow: true,
      shadowAlternatives: false,
    };
    const [outcome, ...others] = await Promise.all([
      primary,
      ...this.alternatives.map(([, engine]) => engine.ground(alternativeInput)),
    ]);
    const alternatives: Record<string, KnowledgeGroundingOutcome> = {};
    this.alternatives.forEach(([name], index) => {
      alternatives[name] = others[index]!;
    });
    return { ...(shadow ? asShadowOutcome(outcome!) : outcome!), alternatives };
  }

  /** One turn with this engine's own configuration (see {@link ground}). */
  private async groundTurn(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome> {
    const started = this.now();
    const wallStart = Date.now();
    if (!this.isEnabled()) return { ephemeralContext: null, metadata: emptyMetadata(0), retrieval: null };
    const timeoutMs = this.timeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const work = this.groundNow(input ?? ({} as KnowledgeGroundingInput), started);
      // The race may be lost to the timer; the work's own late failure must not become an unhandled rejection.
      work.catch(() => {});
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new KnowledgeGroundingTimeoutError(timeoutMs)), timeoutMs);
      });
      const outcome = await Promise.race([work, timeout]);
      // Timers cannot interrupt synchronous scoring: a result that arrives late is discarded.
      if (Date.now() - wallStart > timeoutMs) throw new KnowledgeGroundingTimeoutError(timeoutMs);
      return outcome;
    } catch (caught) {
      return {
        ephemeralContext: null,
        metadata: emptyMetadata(this.now() - started, describeError(caught)),
        retrieval: null,
      };
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  }

  private async groundNow(
    input: KnowledgeGroundingInput,
    started: number,
  ): Promise<KnowledgeGroundingOutcome> {
    // With a backend, a published generation serves while this engine publishes its own sources.
    if (!(this.backend && this.backendServing)) {
      try {
        await this.ready();
      } catch {
        // A strict engine's ready() rejects when nothing serves; the turn reports the reason below instead.
      }
    }
    this.retryFailedBuild();
    const snapshot = this.snapshot;
    if (this.backend) return this.groundWithBackend(this.backend, input, started);
    if (!snapshot) return this.notReady(started);
    const request = this.buildRequest(input);
    const selection = retrieve(snapshot, request, this.resolved, this.config.blockedDomains);
    return this.outcomeOf(selection, request, started);
  }

  /** The outcome of a turn that nothing serves. */
  private notReady(started: number): KnowledgeGroundingOutcome {
    return {
      ephemeralContext: null,
      metadata: emptyMetadata(this.now() - started, this.unavailableReason ?? INDEX_NOT_READY),
      retrieval: null,
    };
  }

  /** A turn against the backend's current generation; a backend error rejects (the turn fails open). */
  private async groundWithBackend(
    backend: KnowledgeIndexBackend,
    input: KnowledgeGroundingInput,
    started: number,
  ): Promise<KnowledgeGroundingOutcome> {
    const index = await backend.current();
    if (!index) {
      // Nothing published (or the database lost it): an engine with sources publishes them again.
      this.republish();
      return this.notReady(started);
    }
    this.backendServing = true;
    const request = this.buildRequest(input);
    const selection = await retrieveFrom(index.searcher, request, this.resolved, this.config.blockedDomains);
    return this.outcomeOf(selection, request, started);
  }

  /** Renders a selection into the turn's outcome. */
  private outcomeOf(
    selection: KnowledgeSelection,
    request: KnowledgeRetrievalRequest,
    started: number,
  ): KnowledgeGroundingOutcome {
    const assembled = assembleKnowledgeContext(selection, this.contextConfig, {
      query: request.query,
      analyzer: this.resolved.analyzer ?? "none",
    });
    const durationMs = this.now() - started;
    const selectedEntryIds = selection.primary.map((entry) => entry.id);
    const expandedEntryIds = selection.expanded.map((entry) => entry.id);
    const metadata: KnowledgeGroundingMetadata = {
      retrievalMode: "lexical",
      selectedIds: selectedEntryIds,
      expandedIds: expandedEntryIds,
      candidateCount: selection.candidateCount,
      contextTokens: assembled.contextTokens,
      truncated: assembled.truncated,
      durationMs,
      confidence: selection.confidence,
    };
    return {
      ephemeralContext:
        assembled.assembledContext === ""
          ? null
          : {
              content: assembled.assembledContext,
              kind: "knowledge",
              trusted: true,
              citations: assembled.citations,
              metadata: { confidence: selection.confidence },
            },
      metadata,
      retrieval: {
        entries: [...selection.primary, ...selection.expanded],
        assembledContext: assembled.assembledContext,
        confidence: selection.confidence,
        citations: assembled.citations,
        selectedEntryIds,
        expandedEntryIds,
        candidateCount: selection.candidateCount,
        contextTokens: assembled.contextTokens,
        truncated: assembled.truncated,
        durationMs,
        candidates: selection.candidates,
        ...(selection.expansionSkipped ? { expansionSkipped: selection.expansionSkipped } : {}),
        ...(assembled.excerptedIds === undefined ? {} : { excerptedIds: assembled.excerptedIds }),
      },
    };
  }

  /** When the backend has nothing published although this engine published its sources: publish them again. */
  private republish(): void {
    if (!this.backendServing || this.pendingBuilds > 0 || !Array.isArray(this.sources)) return;
    if (this.sources.length === 0) return;
    if (this.republishedAt !== null && this.now() - this.republishedAt < BUILD_RETRY_INTERVAL_MS) return;
    this.republishedAt = this.now();
    void this.build(this.sources, this.sourcesAreConfigured, "retry");
  }

  private republishedAt: number | null = null;

  /** A build that threw (not a validation failure) is retried in the background, at most once a second. */
  private retryFailedBuild(): void {
    if (this.buildThrewAt === null || this.pendingBuilds > 0 || this.isServing()) return;
    if (this.now() - this.buildThrewAt < BUILD_RETRY_INTERVAL_MS) return;
    this.buildThrewAt = null;
    void this.build(this.sources, this.sourcesAreConfigured, "retry");
  }
}
