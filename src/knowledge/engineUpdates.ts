/**
 * Incremental updates of a grounding engine: `upsert`, `remove` and `update` validated against the registry and
 * applied atomically one after the other (in memory, a derived snapshot; with a backend, its next generation),
 * then folded into a fresh snapshot by a background compaction in slices.
 */
import type {
  KnowledgeEntryInput,
  KnowledgeIndexSnapshot,
  KnowledgeSource,
  KnowledgeUpdateResult,
  KnowledgeUpsertOptions,
} from "../types/knowledge.js";
import { CompactionThread, runCompactionSteps } from "./compactionThread.js";
import { FALLBACK_VERSION } from "./defaults.js";
import type { KnowledgeGroundingEngine } from "./engine.js";
import { KnowledgeEngineBuilds } from "./engineBuilds.js";
import { BUILD_FAILED, INDEX_NOT_READY, VALIDATION_FAILED } from "./engineErrors.js";
import { readTurnField } from "./engineState.js";
import { describeError } from "./hostValues.js";
import {
  commitChange,
  createArtifactRegistry,
  createRegistry,
  type KnowledgeRegistry,
} from "./knowledgeRegistry.js";
import { type PlannedChange, planRemove, planUpdate, planUpsert } from "./registryChanges.js";
import { yieldToEventLoop } from "./runtime.js";
import { type KnowledgeIndexBackend, publishChangeToBackend } from "./searchBackend.js";
import {
  applySnapshotChanges,
  canChangeSnapshot,
  compactSnapshotSteps,
  hasSnapshotChanges,
  updatableSnapshotSteps,
} from "./snapshotChanges.js";
import { runStepsYielding } from "./steps.js";

/** Quiet time after an update before its changes are folded into a fresh snapshot (a burst is folded once). */
const COMPACTION_DELAY_MS = 200;
/**
 * Longest wait for that quiet time: under a steady stream of updates the changes are folded anyway (turns on a
 * changed snapshot cost more than on a fresh one).
 */
const COMPACTION_MAX_WAITS = 10;
/** Longest slice of compaction work between two yields to the event loop. */
const COMPACTION_SLICE_MS = 4;

/** Updates and their background compaction, on top of {@link KnowledgeEngineBuilds}. */
export abstract class KnowledgeEngineUpdates extends KnowledgeEngineBuilds {
  /** Updates applied so far (the compaction waits until this stops moving). */
  private appliedCount = 0;

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
    this.appliedCount++;
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
   * Waits until no update came for {@link COMPACTION_DELAY_MS} (checked at that period, so a compaction starts
   * between one and two periods after the last update), at most {@link COMPACTION_MAX_WAITS} periods.
   */
  private async quietPeriod(): Promise<void> {
    for (let wait = 0; wait < COMPACTION_MAX_WAITS; wait++) {
      const seen = this.appliedCount;
      await new Promise((resolve) => setTimeout(resolve, COMPACTION_DELAY_MS));
      if (this.appliedCount === seen) return;
    }
  }

  /**
   * Folds the applied changes into a fresh snapshot once updates pause ({@link quietPeriod}), in slices of at
   * most {@link COMPACTION_SLICE_MS} between yields. Changes applied meanwhile are applied again on top of the
   * result before it is installed, so what serves is always exactly the registry after the latest update.
   */
  private async compact(): Promise<void> {
    for (;;) {
      await this.quietPeriod();
      if (!this.snapshot || !hasSnapshotChanges(this.snapshot) || this.appliedChanges.length === 0) return;
      const target = this.appliedChanges[this.appliedChanges.length - 1]!.snapshot;
      // The fresh postings are written by a worker thread where there is one (large registries, Node).
      const thread = CompactionThread.start(target.entryCount);
      let compacted: KnowledgeIndexSnapshot;
      try {
        compacted = await runCompactionSteps(
          compactSnapshotSteps(target, thread),
          thread,
          COMPACTION_SLICE_MS,
          yieldToEventLoop,
        );
      } finally {
        thread?.close();
      }
      await this.updateQueue.catch(() => {});
      // Changes applied meanwhile go again on top of the result, in slices too (a long compaction can have many
      // to catch up with), until none is left; then the result is installed with no yield in between.
      let sliceStart: number;
      let caughtUp = target;
      let reapplied = false;
      for (;;) {
        const position = this.appliedChanges.findIndex((applied) => applied.snapshot === caughtUp);
        if (position < 0) return; // a rebuild replaced the registry meanwhile
        const later = this.appliedChanges.slice(position + 1);
        if (later.length === 0) break;
        sliceStart = performance.now();
        for (const applied of later) {
          compacted = applySnapshotChanges(compacted, applied.removed, applied.upserted);
          caughtUp = applied.snapshot;
          reapplied = true;
          if (performance.now() - sliceStart >= COMPACTION_SLICE_MS) {
            await yieldToEventLoop();
            sliceStart = performance.now();
          }
        }
      }
      if (this.snapshot !== caughtUp) return;
      this.snapshot = compacted;
      this.appliedChanges = reapplied ? [{ snapshot: compacted, removed: [], upserted: [] }] : [];
    }
  }
}
