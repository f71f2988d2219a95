/**
 * Knowledge grounding in the client: the engine created from `knowledgeGrounding`, its readiness, status,
 * rebuilds and updates, and the retrieval of one call's block (fail-open, strict when configured).
 */
import { readGroundingConfig } from "../knowledge/configRead.js";
import { DEFAULT_RECENT_TURNS } from "../knowledge/defaults.js";
import { KnowledgeGroundingEngine, KnowledgeRegistryError } from "../knowledge/engine.js";
import { isUnreadable, readProperty, shapeOf } from "../knowledge/hostValues.js";
import { asShadowOutcome, shadowEventOf } from "../knowledge/shadow.js";
import { hostOpenTelemetryTracer } from "../openTelemetry.js";
import type {
  KnowledgeConversationTurn,
  KnowledgeEngineStatus,
  KnowledgeEntryInput,
  KnowledgeGroundingConfig,
  KnowledgeGroundingOutcome,
  KnowledgeRebuildResult,
  KnowledgeSource,
  KnowledgeUpdateResult,
  KnowledgeUpsertOptions,
} from "../types/knowledge.js";
import { errorMessageOf, KnowledgeNotConfiguredError, KnowledgeUnavailableError } from "./errors.js";
import { NeuroLinkState } from "./neurolinkState.js";
import type { ChatMessage, GenerateOptions } from "./types.js";

/** The exact warning of the original when grounding is enabled without sources. */
export const KNOWLEDGE_NO_SOURCES_WARNING =
  "[KnowledgeGrounding] enabled but no sources were provided; grounding disabled for this instance";
/** Logged when the grounding hook throws; the turn continues ungrounded. */
export const KNOWLEDGE_HOOK_FAILED_WARNING = "[KnowledgeGrounding] grounding hook failed open";

/** The knowledge methods of a {@link NeuroLink}, on top of {@link NeuroLinkState}. */
export abstract class NeuroLinkKnowledge extends NeuroLinkState {
  // ---------------------------------------------------------------- knowledge

  /**
   * Creates the grounding engine as NeuroLink does (when `enabled` is truthy and `sources` is a non-empty array,
   * or, lexground, an `indexArtifact` or a `backend` serves without sources; enabled with none of them logs
   * {@link KNOWLEDGE_NO_SOURCES_WARNING}), without ever throwing: `knowledgeGrounding`
   * is read once, and options that cannot be read (throwing getters, revoked proxies) keep the engine, whose status
   * lists them. The engine logs through our logger.
   */
  protected setUpKnowledgeGrounding(): void {
    const raw = readProperty(this.config, "knowledgeGrounding");
    if (raw === undefined || raw === null) return;
    const read = readGroundingConfig(raw);
    this.knowledgeGroundingConfig = read.config;
    if (!read.config.enabled) return;
    const sources = read.config.sources;
    const length = shapeOf(sources) === "array" ? readProperty(sources as object, "length") : 0;
    // A self-contained index artifact serves on its own, without sources, and so does an external backend: a
    // fleet's readers serve what a writer published (lexground).
    const servesWithoutSources = read.config.indexArtifact !== undefined || read.config.backend !== undefined;
    if ((typeof length === "number" && length > 0) || servesWithoutSources || read.issues.length > 0) {
      this.knowledgeGroundingEngine = new KnowledgeGroundingEngine(read.config, Date.now, {
        logger: this.logger,
        readIssues: read.issues,
        tracer: hostOpenTelemetryTracer(),
      });
    } else {
      this.logger.warn(KNOWLEDGE_NO_SOURCES_WARNING);
    }
  }

  /**
   * Resolves with the knowledge status once the constructor's index build has settled (null when grounding is not
   * configured). Never rejects, unless `knowledgeGrounding.strict` is true: then it rejects with
   * {@link KnowledgeUnavailableError} when validation (of the sources or the configuration) or the build kept the
   * index from serving, so a host can fail at start-up with `await neurolink.knowledgeReady()`.
   */
  async knowledgeReady(): Promise<KnowledgeEngineStatus | null> {
    const engine = this.knowledgeGroundingEngine;
    if (!engine) return null;
    try {
      await engine.ready();
    } catch (error) {
      throw KnowledgeRegistryError.isInstance(error) ? new KnowledgeUnavailableError(error) : error;
    }
    return engine.getStatus();
  }

  /** Engine status, or null when grounding was not configured (or enabled without sources). */
  getKnowledgeStatus(): KnowledgeEngineStatus | null {
    return this.knowledgeGroundingEngine?.getStatus() ?? null;
  }

  /**
   * Rebuilds the knowledge index from `sources` (or the configured ones) and resolves with the new status. The
   * previous snapshot keeps serving while building and when the new sources are invalid. On an instance that
   * was enabled without sources, the first non-empty `sources` creates the engine.
   */
  async rebuildKnowledge(sources?: KnowledgeSource[]): Promise<KnowledgeRebuildResult> {
    const engine = this.knowledgeGroundingEngine;
    if (engine) return engine.rebuild(sources);
    const config = this.knowledgeGroundingConfig;
    if (!config?.enabled) {
      throw new KnowledgeNotConfiguredError(
        "Knowledge grounding is not enabled on this instance: pass `knowledgeGrounding: { enabled: true, sources }` to the constructor",
      );
    }
    // A revoked proxy or throwing length is left to the engine, which reports it as an issue at `sources`.
    const shape = shapeOf(sources);
    const length = shape === "array" ? readProperty(sources as object, "length") : undefined;
    if (!isUnreadable(shape) && !isUnreadable(length) && !(typeof length === "number" && length > 0)) {
      throw new KnowledgeNotConfiguredError(
        "Knowledge grounding has no sources: pass a non-empty `sources` array to rebuildKnowledge()",
      );
    }
    const created = new KnowledgeGroundingEngine(
      { ...config, sources } as KnowledgeGroundingConfig,
      Date.now,
      {
        logger: this.logger,
        tracer: hostOpenTelemetryTracer(),
      },
    );
    this.knowledgeGroundingEngine = created;
    try {
      await created.ready();
    } catch {
      // A strict engine's ready() rejects; rebuildKnowledge() reports the outcome instead, as rebuild() does.
    }
    const unavailable = created.unavailableError();
    return unavailable
      ? { ...created.getStatus(), live: false, reason: unavailable.reason }
      : { ...created.getStatus(), live: created.getStatus().ready };
  }

  /**
   * Adds entries, or replaces the entries with their ids, without rebuilding the index (see the engine's
   * `upsert`): `changes` is a list of entries (new ones go to `options.sourceId`, default the first source) or of
   * sources. Validated as a build is; an invalid change is refused (`live: false`, its `issues`) and the previous
   * snapshot keeps serving; a valid one goes live atomically, with the answers of a full build of the changed
   * registry. Throws {@link KnowledgeNotConfiguredError} when knowledge grounding is not configured.
   */
  async updateKnowledge(
    changes: KnowledgeSource[] | KnowledgeEntryInput[],
    options?: KnowledgeUpsertOptions,
  ): Promise<KnowledgeUpdateResult> {
    return this.knowledgeEngineForUpdates("updateKnowledge").upsert(changes, options);
  }

  /** Removes the entries with these ids without rebuilding the index (see the engine's `remove`). */
  async removeKnowledge(ids: readonly string[]): Promise<KnowledgeUpdateResult> {
    return this.knowledgeEngineForUpdates("removeKnowledge").remove(ids);
  }

  private knowledgeEngineForUpdates(method: string): KnowledgeGroundingEngine {
    const engine = this.knowledgeGroundingEngine;
    if (!engine) {
      throw new KnowledgeNotConfiguredError(
        `Knowledge grounding is not configured on this instance: pass \`knowledgeGrounding: { enabled: true, sources }\` to the constructor (or call rebuildKnowledge(sources)) before ${method}()`,
      );
    }
    return engine;
  }

  // ---------------------------------------------------------------- grounding

  /**
   * Retrieves knowledge for a call, without touching the options. Returns undefined (and does not read history)
   * when there is no engine, the engine is disabled, `useKnowledgeGrounding` is not exactly true, or the query is
   * empty. Never throws: a failing hook is logged and the call continues ungrounded.
   */
  protected async retrieveKnowledgeGrounding(
    options: GenerateOptions,
    loadHistory: () => Promise<ChatMessage[]> = () => this.fetchRecentRoutingHistory(options),
  ): Promise<KnowledgeGroundingOutcome | undefined> {
    const engine = this.knowledgeGroundingEngine;
    if (!engine?.isEnabled()) return undefined;
    if (options.useKnowledgeGrounding !== true) return undefined;
    const query = options.input?.text;
    if (typeof query !== "string" || query.length === 0) return undefined;
    let outcome: KnowledgeGroundingOutcome;
    try {
      const history =
        options.conversationMessages !== undefined ? options.conversationMessages : await loadHistory();
      const recentTurns: KnowledgeConversationTurn[] = history
        .filter((message) => message?.role === "user" || message?.role === "assistant")
        .slice(-DEFAULT_RECENT_TURNS)
        .map((message) => ({
          role: message.role as "user" | "assistant",
          text: typeof message.content === "string" ? message.content : "",
        }));
      const shadow = options.knowledgeShadow;
      outcome = await engine.ground({
        query,
        recentTurns,
        scope: options.knowledgeContext,
        ...(shadow === undefined ? {} : { shadow }),
      });
      // Whatever the engine returned, a call in shadow mode never gets a block into its prompt.
      if (shadow === true) outcome = asShadowOutcome(outcome);
      const reason = outcome.metadata.failureReason;
      if (reason !== undefined) this.emit("grounding:error", { reason });
      const report = shadowEventOf(query, outcome);
      if (report) this.emit("knowledge:shadow", report);
    } catch (error) {
      this.logger.warn(KNOWLEDGE_HOOK_FAILED_WARNING, error);
      this.emit("grounding:error", { reason: errorMessageOf(error), error });
      return undefined;
    }
    // strict: a turn that asked for grounding fails rather than answer without the knowledge it cannot have
    // (not in shadow mode: that turn was never going to carry the knowledge).
    const strict = engine.getConfig().strict === true && outcome.metadata.shadow !== true;
    const unavailable = strict ? engine.unavailableError() : null;
    if (unavailable) throw new KnowledgeUnavailableError(unavailable);
    return outcome;
  }
}
