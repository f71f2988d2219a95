/**
 * The engine: one immutable snapshot per source set, built once (through the process cache), then per turn
 * `ground()` selects, renders and reports, failing open on every error and on timeout.
 */
import type {
  KnowledgeContextConfig,
  KnowledgeEffectiveConfiguration,
  KnowledgeEngineStatus,
  KnowledgeGroundingConfig,
  KnowledgeGroundingInput,
  KnowledgeGroundingMetadata,
  KnowledgeGroundingOutcome,
  KnowledgeIndexSnapshot,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalRequest,
  KnowledgeSource,
  KnowledgeValidationIssue,
} from "../types/knowledge.js";
import { resolveGroundingConfiguration, resolveRetrieval, validateGroundingConfig } from "./config.js";
import { assembleKnowledgeContext } from "./context.js";
import { DEFAULT_RECENT_TURNS, DEFAULT_TIMEOUT_MS, FALLBACK_VERSION } from "./defaults.js";
import { getOrBuildKnowledgeIndexSnapshot } from "./indexCache.js";
import type { KnowledgeIndexBuildOptions } from "./knowledgeIndex.js";
import { retrieve } from "./retrieval.js";

/** Raised (and caught) when a grounding operation exceeds its timeout; its `String()` names the class. */
export class KnowledgeGroundingTimeoutError extends Error {
  override readonly name = "TimeoutError";
  constructor(timeoutMs: number) {
    super(`Knowledge grounding timed out after ${timeoutMs}ms`);
  }
}

/** Failure reason when no snapshot is installed. */
export const INDEX_NOT_READY = "index-not-ready";

/** Minimum pause between automatic retries of a build that threw (not one that failed validation). */
const BUILD_RETRY_INTERVAL_MS = 1_000;

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

/**
 * Knowledge grounding engine. Construction never throws and never waits: it validates the configuration and
 * starts the one-time build; `ready()` resolves when that build settles. `ground()` never throws.
 *
 * Unlike NeuroLink's, the engine can be rebuilt: `rebuild(sources?)` builds a new snapshot and swaps it in
 * atomically when valid, while the previous snapshot keeps serving.
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
  private snapshot: KnowledgeIndexSnapshot | null = null;
  private validationIssues: KnowledgeValidationIssue[] = [];
  private lastError: string | null = null;
  private readonly buildPromise: Promise<void>;
  private sources: KnowledgeSource[];
  private buildGeneration = 0;
  private pendingBuilds = 0;
  private buildThrewAt: number | null = null;
  private configValid: boolean;
  private snapshotOrigin: KnowledgeEngineStatus["snapshotOrigin"];
  private notes: string[] = [];

  constructor(config: KnowledgeGroundingConfig, now: () => number = Date.now) {
    const safeConfig = (
      config && typeof config === "object" ? config : { enabled: false, sources: [] }
    ) as KnowledgeGroundingConfig;
    this.config = safeConfig;
    this.now = typeof now === "function" ? now : Date.now;
    const configIssues = validateGroundingConfig(safeConfig);
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
    this.timeoutMs = this.configValid ? (safeConfig.timeoutMs ?? DEFAULT_TIMEOUT_MS) : DEFAULT_TIMEOUT_MS;
    this.sources = Array.isArray(safeConfig.sources) ? safeConfig.sources : [];
    if (!this.configValid) {
      this.validationIssues = configIssues;
      this.lastError = `invalid knowledge grounding configuration: ${configIssues.map((issue) => issue.message).join("; ")}`;
      this.buildPromise = Promise.resolve();
    } else if (safeConfig.enabled === true && this.sources.length > 0) {
      this.buildPromise = this.build(this.sources);
    } else {
      this.buildPromise = Promise.resolve();
    }
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
   * Builds (or fetches from the process cache) the snapshot of `sources` and installs it when valid. A newer
   * build request supersedes an older one; an invalid set leaves the current snapshot serving. Never rejects.
   */
  private async build(sources: unknown): Promise<void> {
    const generation = ++this.buildGeneration;
    this.pendingBuilds++;
    try {
      // A prebuilt artifact applies to the configured sources only, not to sources given to rebuild().
      const artifact = sources === this.config.sources ? this.config.indexArtifact : undefined;
      const result = await getOrBuildKnowledgeIndexSnapshot(
        sources,
        this.indexOptions(),
        FALLBACK_VERSION,
        artifact,
      );
      if (generation !== this.buildGeneration) {
        // Superseded by a newer build, but complete: serve it until that build lands rather than refusing turns
        // with index-not-ready (a rebuild requested right after construction used to discard the first snapshot).
        if (this.snapshot === null && result.validation.ok && result.snapshot) {
          this.snapshot = result.snapshot;
          this.snapshotOrigin = result.cacheHit ? "cache" : result.origin;
        }
        return;
      }
      this.validationIssues = result.validation.issues;
      this.buildThrewAt = null;
      if (!result.validation.ok || !result.snapshot) {
        const errors = result.validation.issues.filter((issue) => issue.level === "error").length;
        this.lastError = `knowledge validation failed with ${errors} error(s)`;
        return;
      }
      this.snapshot = result.snapshot;
      this.snapshotOrigin = result.cacheHit ? "cache" : result.origin;
      this.notes = result.notes.slice();
      this.lastError = null;
    } catch (caught) {
      if (generation !== this.buildGeneration) return;
      this.lastError = String(caught);
      this.buildThrewAt = this.now();
    } finally {
      this.pendingBuilds--;
    }
  }

  /** Whether grounding is switched on in the configuration. */
  isEnabled(): boolean {
    return this.config.enabled === true;
  }

  /** Resolves when the constructor's build has settled (immediately afterwards). Never rejects. */
  ready(): Promise<void> {
    return this.buildPromise;
  }

  /** Engine health: readiness, entry count, last error and validation issues. */
  getStatus(): KnowledgeEngineStatus {
    const status: KnowledgeEngineStatus = {
      enabled: this.isEnabled(),
      ready: this.snapshot !== null,
      entryCount: this.snapshot?.entryCount ?? 0,
      lastError: this.lastError,
      validationIssues: this.validationIssues.slice(),
      building: this.pendingBuilds > 0,
    };
    if (this.snapshotOrigin) status.snapshotOrigin = this.snapshotOrigin;
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
   * valid. While it builds, and when the new set is invalid, the previous snapshot keeps serving and
   * `getStatus()` reports the new issues. Resolves with the status after the attempt. Never rejects.
   */
  async rebuild(sources?: KnowledgeSource[]): Promise<KnowledgeEngineStatus> {
    if (!this.configValid) return this.getStatus();
    if (sources !== undefined)
      this.sources = Array.isArray(sources) ? sources : (sources as KnowledgeSource[]);
    await this.build(sources ?? this.sources);
    return this.getStatus();
  }

  /** Installs a snapshot built elsewhere (for example loaded from a prebuilt artifact). */
  installSnapshot(
    snapshot: KnowledgeIndexSnapshot,
    origin: KnowledgeEngineStatus["snapshotOrigin"],
    notes: string[] = [],
  ): void {
    this.buildGeneration++;
    this.snapshot = snapshot;
    this.snapshotOrigin = origin;
    this.notes = notes.slice();
    this.lastError = null;
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
   * failure or timeout the outcome has no context and `metadata.failureReason` says why.
   */
  async ground(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome> {
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
      if (Date.now() - wallStart > timeoutMs)
        throw new Error(`Knowledge grounding timed out after ${timeoutMs}ms`);
      return outcome;
    } catch (caught) {
      return {
        ephemeralContext: null,
        metadata: emptyMetadata(this.now() - started, String(caught)),
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
    await this.ready();
    this.retryFailedBuild();
    const snapshot = this.snapshot;
    if (!snapshot) {
      return {
        ephemeralContext: null,
        metadata: emptyMetadata(this.now() - started, INDEX_NOT_READY),
        retrieval: null,
      };
    }
    const request = this.buildRequest(input);
    const selection = retrieve(snapshot, request, this.resolved, this.config.blockedDomains);
    const assembled = assembleKnowledgeContext(selection, this.contextConfig);
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
      },
    };
  }

  /** A build that threw (not a validation failure) is retried in the background, at most once a second. */
  private retryFailedBuild(): void {
    if (this.buildThrewAt === null || this.pendingBuilds > 0 || this.snapshot) return;
    if (this.now() - this.buildThrewAt < BUILD_RETRY_INTERVAL_MS) return;
    this.buildThrewAt = null;
    void this.build(this.sources);
  }
}
