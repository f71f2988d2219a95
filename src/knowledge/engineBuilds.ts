/**
 * The build path of a grounding engine: a source set validated and built (through the process cache), loaded from
 * a prebuilt artifact or published to a backend, then installed atomically unless a later request won; rebuilds,
 * the retry of a build that threw, and the warning when validation blocks a set.
 */
import type {
  KnowledgeEngineStatus,
  KnowledgeIndexSnapshot,
  KnowledgeRebuildResult,
  KnowledgeSource,
  KnowledgeValidationResult,
} from "../types/knowledge.js";
import { contentKeySources } from "./artifactHeader.js";
import { FALLBACK_VERSION } from "./defaults.js";
import { BUILD_FAILED, describeIssues, VALIDATION_FAILED, warnOnce } from "./engineErrors.js";
import { KnowledgeEngineState } from "./engineState.js";
import { describeError, snapshotSourceArrays } from "./hostValues.js";
import { getOrBuildKnowledgeIndexSnapshot, getOrLoadKnowledgeIndexArtifact } from "./indexCache.js";
import type { KnowledgeIndexBuildOptions } from "./knowledgeIndex.js";
import { registrySources } from "./knowledgeRegistry.js";
import { type KnowledgeIndexBackend, publishToBackend } from "./searchBackend.js";
import { traced } from "./telemetry.js";

/** Minimum pause between automatic retries of a build that threw (not one that failed validation). */
const BUILD_RETRY_INTERVAL_MS = 1_000;

/** Builds, rebuilds and installed snapshots of a {@link KnowledgeEngineState}. */
export abstract class KnowledgeEngineBuilds extends KnowledgeEngineState {
  /** The index parameters derived from the configuration (part of the cache key). */
  protected indexOptions(): KnowledgeIndexBuildOptions {
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
  protected async build(
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
  protected currentSources(): unknown {
    if (this.sourcesFromRegistry && this.registry) {
      this.sources = registrySources(this.registry);
      this.sourcesFromRegistry = false;
    }
    return this.sources;
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

  /** When the backend has nothing published although this engine published its sources: publish them again. */
  protected republish(): void {
    if (!this.backendServing || this.pendingBuilds > 0 || !Array.isArray(this.sources)) return;
    if (this.sources.length === 0) return;
    if (this.republishedAt !== null && this.now() - this.republishedAt < BUILD_RETRY_INTERVAL_MS) return;
    this.republishedAt = this.now();
    void this.build(this.sources, this.sourcesAreConfigured, "retry");
  }

  /** A build that threw (not a validation failure) is retried in the background, at most once a second. */
  protected retryFailedBuild(): void {
    if (this.buildThrewAt === null || this.pendingBuilds > 0 || this.isServing()) return;
    if (this.now() - this.buildThrewAt < BUILD_RETRY_INTERVAL_MS) return;
    this.buildThrewAt = null;
    void this.build(this.sources, this.sourcesAreConfigured, "retry");
  }
}
