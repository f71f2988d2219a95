/**
 * What a grounding engine holds and reports: its state (every field, in one place), the constructor that reads the
 * configuration once and starts the first build, and the status queries. The build path, updates and turns build
 * on it in `engineBuilds.ts`, `engineUpdates.ts` and `engine.ts` (whose `KnowledgeGroundingEngine` is the public
 * class).
 */
import type {
  KnowledgeContextConfig,
  KnowledgeEffectiveConfiguration,
  KnowledgeEngineStatus,
  KnowledgeGroundingConfig,
  KnowledgeIndexSnapshot,
  KnowledgeLogger,
  KnowledgeRebuildResult,
  KnowledgeResolvedRetrieval,
  KnowledgeTelemetryTracer,
  KnowledgeValidationIssue,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { contentKeySources } from "./artifactHeader.js";
import { resolveGroundingConfiguration, resolveRetrieval, resolveTimeout } from "./config.js";
import { readGroundingConfig } from "./configRead.js";
import { validateConfigValues } from "./configValidation.js";
import { DEFAULT_TIMEOUT_MS } from "./defaults.js";
import type { KnowledgeGroundingEngine } from "./engine.js";
import { describeIssues, KnowledgeRegistryError, VALIDATION_FAILED, warnOnce } from "./engineErrors.js";
import { isUnreadable, readProperty, shapeOf, snapshotSourceArrays } from "./hostValues.js";
import type { KnowledgeRegistry } from "./knowledgeRegistry.js";
import type { NormalizedSourceGroup } from "./resolve.js";
import type { KnowledgeIndexBackend } from "./searchBackend.js";
import { telemetryAllowed, telemetryTracer } from "./telemetry.js";

/** An applied update, kept until a compaction has folded it in. */
export type AppliedChange = {
  snapshot: KnowledgeIndexSnapshot;
  removed: string[];
  upserted: NormalizedKnowledgeEntry[];
};

/** A field of a turn's input, read once; undefined when the input is not an object or the read throws. */
export function readTurnField(input: unknown, key: string): unknown {
  if (input === null || typeof input !== "object") return undefined;
  const value = readProperty(input, key);
  return isUnreadable(value) ? undefined : value;
}

/**
 * The state and status of a {@link KnowledgeGroundingEngine} (not exported from the package: that class is the
 * public one). Every field is declared here, at the top.
 */
export abstract class KnowledgeEngineState {
  protected readonly config: KnowledgeGroundingConfig;
  protected readonly resolved: KnowledgeResolvedRetrieval;
  /** The preset overlaid with the configuration's `context` (what the block is assembled with). */
  protected readonly contextConfig: KnowledgeContextConfig | undefined;
  /** Preset name and resolved settings, for `getStatus()`; null when the configuration is invalid. */
  protected readonly effective: KnowledgeEffectiveConfiguration | null;
  protected readonly now: () => number;
  protected readonly timeoutMs: number;
  private readonly enabled: boolean;
  private readonly strict: boolean;
  protected readonly logger: KnowledgeLogger | null;
  /**
   * The OpenTelemetry tracer when tracing is on: the host's `telemetry.tracer`, else the one an entry point passed
   * at construction; otherwise null.
   */
  protected readonly tracer: KnowledgeTelemetryTracer | null;
  /** False when `telemetry.isEnabled` is false: a turn's own tracer is refused too. */
  protected readonly tracingAllowed: boolean;
  protected snapshot: KnowledgeIndexSnapshot | null = null;
  /** The external index backend (`config.backend`), or null: the index is in memory. */
  protected readonly backend: KnowledgeIndexBackend | null;
  protected validationIssues: KnowledgeValidationIssue[] = [];
  protected lastError: string | null = null;
  /** Why no snapshot serves, as of the latest settled request (null: none failed). */
  protected unavailableReason: "validation-failed" | "build-failed" | null = null;
  private readonly buildPromise: Promise<void>;
  /** The source set of the latest request (a copy of its arrays), rebuilt by `rebuild()` and by retries. */
  protected sources: unknown;
  /** Whether {@link sources} are the configured ones (a prebuilt artifact applies to those only). */
  protected sourcesAreConfigured = true;
  /** Build requests are numbered in the order they are made. */
  protected buildGeneration = 0;
  /** The request whose snapshot serves: an older request's snapshot never replaces it. */
  protected servingGeneration = 0;
  /** The latest request that has settled: status (`lastError`, issues) reflects it, not an older one. */
  protected statusGeneration = 0;
  protected pendingBuilds = 0;
  protected buildThrewAt: number | null = null;
  protected configValid: boolean;
  protected snapshotOrigin: KnowledgeEngineStatus["snapshotOrigin"];
  /** The content key of the serving snapshot (null when installed from elsewhere). */
  protected contentKey: string | null = null;
  protected notes: string[] = [];
  /** Shadow mode by default (`config.shadow`); a turn's `shadow` overrides it. */
  protected readonly shadow: boolean;
  /** Engines of the configured shadow alternatives, by name, in configuration order. */
  protected readonly alternatives: readonly (readonly [string, KnowledgeGroundingEngine])[];
  /** The validated source groups of the serving snapshot's build (the start of the update registry). */
  protected servingGroups: readonly NormalizedSourceGroup[] | null = null;
  /** The sources a self-contained artifact serving alone holds (the start of its update registry), else null. */
  protected servingArtifactSources: readonly { id: string; version: string }[] | null = null;
  /** The serving entries by source, for updates (created by the first update; null after a rebuild). */
  protected registry: KnowledgeRegistry | null = null;
  /** Whether {@link sources} lags behind {@link registry} (materialized when a rebuild needs it). */
  protected sourcesFromRegistry = false;
  /** Updates run one after the other, each after the builds requested before it. */
  protected updateQueue: Promise<unknown> = Promise.resolve();
  /** The latest build or rebuild, which an update waits for. */
  protected latestBuild: Promise<unknown> = Promise.resolve();
  /** Applied updates not yet folded by a compaction, oldest first. */
  protected appliedChanges: AppliedChange[] = [];
  /** The running background compaction, if any. */
  protected compaction: Promise<void> | null = null;
  /** True once the backend has served or published a generation (it stays published while the backend is down). */
  protected backendServing = false;
  /** The content key of what this engine last published to the backend (the base of its incremental updates). */
  protected backendContentKey: string | null = null;
  /** When the last republication to an empty backend started (paced like retries). */
  protected republishedAt: number | null = null;

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

  /** One engine per shadow alternative (see `engine.ts`). */
  protected abstract createAlternatives(
    config: KnowledgeGroundingConfig,
  ): (readonly [string, KnowledgeGroundingEngine])[];

  /** Builds and installs a snapshot of `sources` (see `engineBuilds.ts`). Never rejects. */
  protected abstract build(
    sources: unknown,
    useArtifact: boolean,
    operation?: "build" | "rebuild" | "retry",
  ): Promise<Pick<KnowledgeRebuildResult, "live" | "reason">>;

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
  protected isServing(): boolean {
    return this.snapshot !== null || (this.backendServing && this.backend !== null);
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
}
