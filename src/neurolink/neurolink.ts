/**
 * The NeuroLink-compatible client: grounded `generate` and `stream` over the Vercel AI SDK, with fallback across
 * providers and models, and conversation memory.
 *
 * Per call, in this order (the seed's turn lifecycle):
 * 1. the options are cloned, so nothing reaches the caller's object;
 * 2. `retrieveKnowledgeGrounding` runs once, when the call opts in, with history from `conversationMessages` or
 *    conversation memory;
 * 3. a returned block is appended to `systemPrompt` (a function-valued prompt is wrapped);
 * 4. dynamic arguments are resolved and the request is prepared once;
 * 5. the provider/fallback loop runs every attempt with that same request;
 * 6. `result.knowledge` carries the grounding metadata; the user input and the answer (never the block) are
 *    stored in conversation memory.
 *
 * @module
 */

import { EventEmitter } from "node:events";
import type { ModelMessage } from "ai";
import { readGroundingConfig } from "../knowledge/configRead.js";
import { DEFAULT_RECENT_TURNS } from "../knowledge/defaults.js";
import { KnowledgeGroundingEngine, KnowledgeRegistryError } from "../knowledge/engine.js";
import { describeError, isUnreadable, readProperty, shapeOf } from "../knowledge/hostValues.js";
import { asShadowOutcome, shadowEventOf } from "../knowledge/shadow.js";
import { hostOpenTelemetryTracer } from "../openTelemetry.js";
import { MissingPeerDependencyError } from "../peerDependency.js";
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
import {
  loadAiSdk,
  type OpenedStream,
  openStreamAttempt,
  type PreparedRequest,
  runGenerateAttempt,
} from "./attempts.js";
import {
  appendKnowledgeGroundingBlockToSystemPrompt,
  cloneOptionsForCallIsolation,
  type ResolvedCallOptions,
  resolveDynamicOptions,
} from "./dynamic.js";
import {
  type AttemptRecord,
  EmptyOutputError,
  errorMessageOf,
  InvalidOptionsError,
  KnowledgeNotConfiguredError,
  KnowledgeUnavailableError,
  NeuroLinkError,
  ProviderNotConfiguredError,
  StreamAbandonedError,
} from "./errors.js";
import { type AttemptTarget, chainEntryToTarget, ModelPool, runWithFallback } from "./fallback.js";
import { InMemoryConversationStore } from "./memory/inMemory.js";
import { RedisConversationMemoryStore, redisMemoryDurations } from "./memory/redis.js";
import type {
  ConversationMemoryStore,
  ConversationSessionKey,
  MemoryEvictionDetails,
} from "./memory/types.js";
import { isLanguageModelObject, ProviderResolver } from "./providers.js";
import type {
  ChatMessage,
  GenerateOptions,
  GenerateResult,
  LanguageModelObject,
  MemoryStatus,
  MemoryWriteFailure,
  NeuroLinkEventName,
  NeuroLinkEvents,
  NeuroLinkLogger,
  NeurolinkConstructorConfig,
  StreamChunk,
  StreamFinalResult,
  StreamOptions,
  StreamResult,
} from "./types.js";

const DEFAULT_MAX_ATTEMPTS = 8;
const DEFAULT_FIRST_CONTENT_TIMEOUT_MS = 60_000;
const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 60_000;
/** Default deadline of one generate attempt, in ms (`generateTimeoutMs`; 0 disables). */
export const DEFAULT_GENERATE_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_TURNS_PER_SESSION = 50;
const DEFAULT_MAX_SESSIONS = 50;

/** The exact warning of the original when grounding is enabled without sources. */
export const KNOWLEDGE_NO_SOURCES_WARNING =
  "[KnowledgeGrounding] enabled but no sources were provided; grounding disabled for this instance";
/**
 * Logged once per instance at the first session the memory store evicts to stay within its bound; every eviction
 * also emits `memory:evicted` and counts in `getMemoryStatus().evictionCount`.
 */
export const MEMORY_EVICTION_WARNING =
  "[NeuroLink] conversation memory is full: the least recently used session was dropped (raise conversationMemory.maxSessions or use Redis; further evictions emit memory:evicted and are counted in getMemoryStatus())";
/** Logged when the grounding hook throws; the turn continues ungrounded. */
export const KNOWLEDGE_HOOK_FAILED_WARNING = "[KnowledgeGrounding] grounding hook failed open";

function noop(): void {}

/** Text of a message's content: a string as is; text parts of an array joined; anything else empty. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const part of content) {
    if (part && typeof part === "object" && (part as { type?: unknown }).type === "text") {
      const value = (part as { text?: unknown }).text;
      if (typeof value === "string") text += value;
    }
  }
  return text;
}

/** The session of a call: none without a non-empty `sessionId`; an empty `userId` means no user. */
function sessionOf(options: GenerateOptions): ConversationSessionKey | undefined {
  const sessionId = options.context?.sessionId;
  if (typeof sessionId !== "string" || sessionId.length === 0) return undefined;
  return withUser(sessionId, options.context?.userId);
}

/** A session key with the user when `userId` is a non-empty string (the same rule for turns and for lookups). */
function withUser(sessionId: string, userId: unknown): ConversationSessionKey {
  return typeof userId === "string" && userId.length > 0 ? { sessionId, userId } : { sessionId };
}

function validateCallOptions(options: GenerateOptions, method: "generate" | "stream"): void {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionsError("options", `${method}() expects an options object`);
  }
  if (typeof options.input !== "object" || options.input === null) {
    throw new InvalidOptionsError("input", `${method}() expects \`input: { text }\``);
  }
  if (typeof options.input.text !== "string") {
    throw new InvalidOptionsError("input.text", "`input.text` must be a string");
  }
  if (options.conversationMessages !== undefined && !Array.isArray(options.conversationMessages)) {
    throw new InvalidOptionsError(
      "conversationMessages",
      "`conversationMessages` must be an array when given",
    );
  }
  if (options.abortSignal !== undefined && !(options.abortSignal instanceof AbortSignal)) {
    throw new InvalidOptionsError("abortSignal", "`abortSignal` must be an AbortSignal");
  }
  if (options.knowledgeShadow !== undefined && typeof options.knowledgeShadow !== "boolean") {
    throw new InvalidOptionsError("knowledgeShadow", "`knowledgeShadow` must be a boolean when given");
  }
}

/** The caller's abort signal of a call, read defensively (the options may be anything). */
function callerSignalOf(options: unknown): AbortSignal | undefined {
  try {
    const signal = (options as { abortSignal?: unknown } | null)?.abortSignal;
    return signal instanceof AbortSignal ? signal : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a call rejects with: our errors and the caller's own abort reason as they are; anything else (a failure no
 * specific class describes) wrapped in a {@link NeuroLinkError} with code `UNEXPECTED_ERROR` and the original as
 * `cause`, so a host never has to handle a raw value.
 */
function typedRejection(error: unknown, method: "generate" | "stream", options: unknown): unknown {
  if (NeuroLinkError.isInstance(error)) return error;
  const signal = callerSignalOf(options);
  if (signal?.aborted && error === signal.reason) return error;
  return new NeuroLinkError("UNEXPECTED_ERROR", `${method}() failed: ${errorMessageOf(error)}`, {
    cause: error,
  });
}

/**
 * Makes sure the AI SDK is installed before a call does any work: without `ai` no provider can be called, so the
 * call fails at once with {@link ProviderNotConfiguredError} (`setting` `"ai"`, the `MissingPeerDependencyError`
 * naming the install command as `cause`), as for a provider whose own package is missing.
 */
async function requireAiSdk(): Promise<void> {
  try {
    await loadAiSdk();
  } catch (error) {
    if (!MissingPeerDependencyError.isInstance(error)) throw error;
    throw new ProviderNotConfiguredError({
      provider: undefined,
      setting: error.packageName,
      message: error.message,
      cause: error,
    });
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A timeout in ms from a number or a duration string such as `"500ms"`, `"30s"`, `"2m"` (NeuroLink accepts both). */
export function parseTimeout(value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return value;
  if (typeof value === "string") {
    const match = /^(\d+(?:\.\d+)?) ?(ms|s|m|h)?$/.exec(value.trim());
    if (match) return Number(match[1]) * (DURATION_UNITS[match[2] ?? "ms"] ?? 1);
  }
  throw new InvalidOptionsError(path, 'must be a non-negative number of ms or a duration such as "30s"');
}

/** Per-call state shared by retrieval and prompt building, so memory is read at most once per call. */
type CallState = {
  memoryHistory?: Promise<ChatMessage[]>;
};

/**
 * NeuroLink-compatible client with lexical knowledge grounding.
 *
 * @example
 * ```ts
 * const neurolink = new NeuroLink({ knowledgeGrounding: { enabled: true, sources } });
 * const result = await neurolink.generate({
 *   input: { text: "How do I enable the multi-step flow?" },
 *   provider: "openai",
 *   useKnowledgeGrounding: true,
 *   knowledgeContext: { enabledIntegrations: ["integration-a"] },
 * });
 * console.log(result.content, result.knowledge?.selectedIds);
 * ```
 */
export class NeuroLink {
  private knowledgeGroundingEngine: KnowledgeGroundingEngine | undefined;
  /** `knowledgeGrounding` as the engine read it (a plain copy), for an engine created later by rebuildKnowledge(). */
  private knowledgeGroundingConfig: Readonly<KnowledgeGroundingConfig> | undefined;
  private readonly config: NeurolinkConstructorConfig;
  private readonly logger: NeuroLinkLogger;
  private readonly resolver: ProviderResolver;
  private readonly modelPool: ModelPool | undefined;
  private readonly memoryStore: ConversationMemoryStore | undefined;
  private readonly memoryHistoryLimit: number;
  private readonly events = new EventEmitter();
  private evictionWarned = false;

  constructor(config: NeurolinkConstructorConfig = {}) {
    const configShape = shapeOf(config);
    if (isUnreadable(configShape)) {
      throw new InvalidOptionsError("config", `could not be read: ${describeError(configShape.error)}`);
    }
    this.config = config ?? {};
    const logger = readProperty(this.config, "logger");
    this.logger =
      logger !== null && typeof logger === "object" && !isUnreadable(logger)
        ? (logger as NeuroLinkLogger)
        : console;
    this.setUpKnowledgeGrounding();

    // A throwing getter or revoked proxy anywhere in the client options becomes a typed error naming the
    // config, never a raw TypeError (the knowledge options above are read once and never throw).
    try {
      const defaultProvider = typeof this.config.provider === "string" ? this.config.provider : undefined;
      this.resolver = new ProviderResolver({
        ...(this.config.providers === undefined ? {} : { providers: this.config.providers }),
        ...(this.config.env === undefined ? {} : { env: this.config.env }),
        ...(defaultProvider === undefined ? {} : { defaultProvider }),
        ...(this.config.customProviders === undefined
          ? {}
          : { customProviders: this.config.customProviders }),
      });

      const pool = this.config.modelPool;
      if (pool !== undefined) {
        if (!Array.isArray(pool.members))
          throw new InvalidOptionsError("modelPool.members", "must be an array");
        pool.members.forEach((member, index) => {
          if (typeof member?.provider !== "string" || member.provider.length === 0) {
            throw new InvalidOptionsError(
              `modelPool.members[${index}].provider`,
              "must be a non-empty string",
            );
          }
        });
        this.modelPool = pool.members.length > 0 ? new ModelPool(pool) : undefined;
      }

      const memory = this.config.conversationMemory;
      const maxTurns = Math.max(1, Math.floor(memory?.maxTurnsPerSession ?? DEFAULT_MAX_TURNS_PER_SESSION));
      this.memoryHistoryLimit = maxTurns * 2;
      if (memory?.enabled !== false) {
        if (memory?.store) {
          this.memoryStore = memory.store;
        } else if (memory?.storageType === "redis") {
          // Validated here first so that an error names the option's place in this config.
          redisMemoryDurations(memory.redis ?? {}, "conversationMemory.redis.");
          this.memoryStore = new RedisConversationMemoryStore({
            ...memory.redis,
            maxMessagesPerSession: this.memoryHistoryLimit,
            ...(this.config.env === undefined ? {} : { env: this.config.env }),
          });
        } else {
          this.memoryStore = new InMemoryConversationStore({
            maxSessions: memory?.maxSessions ?? DEFAULT_MAX_SESSIONS,
            maxMessagesPerSession: this.memoryHistoryLimit,
          });
        }
        this.memoryStore.addResetListener?.((details) => {
          this.emit("memory:reset", { store: this.memoryStore?.kind ?? "unknown", details });
        });
        this.memoryStore.addEvictionListener?.((details) => this.onMemoryEvicted(details));
      }
    } catch (error) {
      if (NeuroLinkError.isInstance(error)) throw error;
      throw new InvalidOptionsError("config", `could not be read: ${describeError(error)}`, { cause: error });
    }
  }

  // ---------------------------------------------------------------- events

  /** Subscribes to an event. */
  on<E extends NeuroLinkEventName>(event: E, listener: (payload: NeuroLinkEvents[E]) => void): this {
    this.events.on(event, listener);
    return this;
  }

  /** Unsubscribes from an event. */
  off<E extends NeuroLinkEventName>(event: E, listener: (payload: NeuroLinkEvents[E]) => void): this {
    this.events.off(event, listener);
    return this;
  }

  /** Subscribes to the next occurrence of an event. */
  once<E extends NeuroLinkEventName>(event: E, listener: (payload: NeuroLinkEvents[E]) => void): this {
    this.events.once(event, listener);
    return this;
  }

  private emit<E extends NeuroLinkEventName>(event: E, payload: NeuroLinkEvents[E]): void {
    try {
      this.events.emit(event, payload);
    } catch (error) {
      // A throwing host listener must not break the turn.
      this.logger.warn(`[NeuroLink] listener of "${event}" threw`, error);
    }
  }

  // ---------------------------------------------------------------- knowledge

  /**
   * Creates the grounding engine as NeuroLink does (when `enabled` is truthy and `sources` is a non-empty array;
   * enabled without sources logs {@link KNOWLEDGE_NO_SOURCES_WARNING}), without ever throwing: `knowledgeGrounding`
   * is read once, and options that cannot be read (throwing getters, revoked proxies) keep the engine, whose status
   * lists them. The engine logs through our logger.
   */
  private setUpKnowledgeGrounding(): void {
    const raw = readProperty(this.config, "knowledgeGrounding");
    if (raw === undefined || raw === null) return;
    const read = readGroundingConfig(raw);
    this.knowledgeGroundingConfig = read.config;
    if (!read.config.enabled) return;
    const sources = read.config.sources;
    const length = shapeOf(sources) === "array" ? readProperty(sources as object, "length") : 0;
    // A self-contained index artifact serves on its own, without sources (lexground).
    const hasArtifact = read.config.indexArtifact !== undefined;
    if ((typeof length === "number" && length > 0) || hasArtifact || read.issues.length > 0) {
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

  // ---------------------------------------------------------------- memory

  /** Health of conversation memory: `degraded` after a failed read or write, until the next success. */
  getMemoryStatus(): MemoryStatus {
    const store = this.memoryStore;
    if (!store) {
      return { enabled: false, store: null, state: "disabled", lastError: null, lastErrorAt: null };
    }
    const status = store.getStatus();
    return {
      enabled: true,
      store: store.kind,
      state: status.state,
      lastError: status.lastError,
      lastErrorAt: status.lastErrorAt,
      resetCount: status.resetCount,
      ...(status.evictionCount === undefined ? {} : { evictionCount: status.evictionCount }),
      ...(status.details === undefined ? {} : { details: status.details }),
    };
  }

  /** Reports an evicted session: an event every time, one warning per instance (hosts may not listen). */
  private onMemoryEvicted(details: MemoryEvictionDetails): void {
    const store = this.memoryStore?.kind ?? "unknown";
    if (!this.evictionWarned) {
      this.evictionWarned = true;
      this.logger.warn(MEMORY_EVICTION_WARNING);
    }
    const { sessionId, userId } = details.session;
    this.emit("memory:evicted", {
      store,
      sessionId,
      ...(userId === undefined ? {} : { userId }),
      reason: details.reason,
      evictionCount: details.evictionCount,
    });
  }

  /** The stored messages of a session, oldest first (errors are thrown, unlike during a turn). */
  async getConversationHistory(context: { sessionId: string; userId?: string }): Promise<ChatMessage[]> {
    if (!this.memoryStore) return [];
    return this.memoryStore.getRecentMessages(
      withUser(context?.sessionId, context?.userId),
      this.memoryHistoryLimit,
    );
  }

  /** Deletes a session's stored messages. */
  async clearConversationSession(context: { sessionId: string; userId?: string }): Promise<void> {
    await this.memoryStore?.clearSession(withUser(context?.sessionId, context?.userId));
  }

  /** Closes conversation memory connections. The instance should not be used afterwards. */
  async close(): Promise<void> {
    await this.memoryStore?.close();
    this.events.removeAllListeners();
  }

  /**
   * Reads the session's stored history for a call (shared with grounding). Fails open: on any error it returns
   * `[]`, reports `memory:error`, and the store's status turns `degraded`.
   */
  private async fetchRecentRoutingHistory(options: GenerateOptions): Promise<ChatMessage[]> {
    const session = sessionOf(options);
    if (!session || !this.memoryStore || options.memory?.read === false) return [];
    try {
      return await this.memoryStore.getRecentMessages(session, this.memoryHistoryLimit);
    } catch (error) {
      this.emit("memory:error", { operation: "read", sessionId: session.sessionId, error });
      this.logger.debug?.("[NeuroLink] conversation memory read failed open", error);
      return [];
    }
  }

  private memoryHistory(options: GenerateOptions, state: CallState): Promise<ChatMessage[]> {
    state.memoryHistory ??= this.fetchRecentRoutingHistory(options);
    return state.memoryHistory;
  }

  /** Stores the user input and the answer; a failure is returned (and emitted), never thrown. */
  private async storeTurn(options: GenerateOptions, answer: string): Promise<MemoryWriteFailure | undefined> {
    const session = sessionOf(options);
    if (!session || !this.memoryStore || options.memory?.write === false) return undefined;
    const timestamp = new Date().toISOString();
    try {
      await this.memoryStore.appendMessages(session, [
        { role: "user", content: options.input.text, timestamp },
        { role: "assistant", content: answer, timestamp },
      ]);
      return undefined;
    } catch (error) {
      this.emit("memory:error", { operation: "write", sessionId: session.sessionId, error });
      return {
        sessionId: session.sessionId,
        code: NeuroLinkError.isInstance(error) ? error.code : "MEMORY_UNAVAILABLE",
        message: errorMessageOf(error),
      };
    }
  }

  // ---------------------------------------------------------------- grounding

  /**
   * Retrieves knowledge for a call, without touching the options. Returns undefined (and does not read history)
   * when there is no engine, the engine is disabled, `useKnowledgeGrounding` is not exactly true, or the query is
   * empty. Never throws: a failing hook is logged and the call continues ungrounded.
   */
  private async retrieveKnowledgeGrounding(
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

  /** Clone, retrieve once, append the block, resolve dynamic arguments, prepare the request once. */
  private async prepareCall(
    optionsOrPrompt: GenerateOptions | StreamOptions | string,
    method: "generate" | "stream",
  ): Promise<{
    options: GenerateOptions | StreamOptions;
    resolved: ResolvedCallOptions;
    grounding: KnowledgeGroundingOutcome | undefined;
    request: PreparedRequest;
  }> {
    if (typeof optionsOrPrompt === "string") {
      // The string shorthand cannot opt in, so it never grounds.
      optionsOrPrompt = { input: { text: optionsOrPrompt } };
    }
    let options: GenerateOptions | StreamOptions;
    try {
      validateCallOptions(optionsOrPrompt, method);
      options = cloneOptionsForCallIsolation(optionsOrPrompt);
    } catch (error) {
      if (NeuroLinkError.isInstance(error)) throw error;
      // A throwing getter or a revoked proxy in the options.
      throw new InvalidOptionsError("options", `could not be read: ${errorMessageOf(error)}`, {
        cause: error,
      });
    }
    const state: CallState = {};
    const grounding = await this.retrieveKnowledgeGrounding(options, () =>
      this.memoryHistory(options, state),
    );
    if (grounding?.ephemeralContext) {
      options = {
        ...options,
        systemPrompt: appendKnowledgeGroundingBlockToSystemPrompt(
          options.systemPrompt,
          grounding.ephemeralContext.content,
        ),
      };
    }
    const resolved = await resolveDynamicOptions(options);
    const history =
      options.conversationMessages !== undefined
        ? options.conversationMessages
        : await this.memoryHistory(options, state);
    const messages: ModelMessage[] = [];
    for (const message of history) {
      if (message?.role !== "user" && message?.role !== "assistant") continue;
      const text = contentText(message.content);
      if (text.length > 0) messages.push({ role: message.role, content: text });
    }
    messages.push({ role: "user", content: resolved.input.text });
    const system =
      typeof resolved.systemPrompt === "string" && resolved.systemPrompt.length > 0
        ? resolved.systemPrompt
        : undefined;
    const request: PreparedRequest = {
      system,
      messages,
      maxRetries: Math.max(0, Math.floor(resolved.maxRetries ?? this.config.maxRetries ?? 0)),
      ...(resolved.temperature === undefined ? {} : { temperature: resolved.temperature }),
      ...(resolved.maxTokens === undefined ? {} : { maxOutputTokens: resolved.maxTokens }),
      ...(resolved.topP === undefined ? {} : { topP: resolved.topP }),
      ...(resolved.topK === undefined ? {} : { topK: resolved.topK }),
      ...(resolved.stopSequences === undefined ? {} : { stopSequences: resolved.stopSequences }),
      ...(resolved.seed === undefined ? {} : { seed: resolved.seed }),
      ...(resolved.providerOptions === undefined ? {} : { providerOptions: resolved.providerOptions }),
      ...(resolved.headers === undefined ? {} : { headers: resolved.headers }),
    };
    return { options, resolved, grounding, request };
  }

  /** The ordered targets of a call: primary (or pool members), model chain, fallback option. */
  private planTargets(resolved: ResolvedCallOptions): AttemptTarget[] {
    const model = resolved.model;
    let targets: AttemptTarget[];
    let primaryProvider: string | undefined;
    if (isLanguageModelObject(model)) {
      targets = [{ request: { model }, source: "primary" }];
      primaryProvider = resolved.provider ?? this.config.provider;
    } else if (resolved.provider !== undefined || model !== undefined) {
      targets = [
        {
          request: {
            ...(resolved.provider === undefined ? {} : { provider: resolved.provider }),
            ...(model === undefined ? {} : { model }),
          },
          source: "primary",
        },
      ];
      primaryProvider =
        resolved.provider ?? (typeof model === "string" ? this.resolver.split(model).provider : undefined);
    } else if (this.modelPool) {
      targets = this.modelPool.plan();
    } else if (isLanguageModelObject(this.config.model)) {
      targets = [{ request: { model: this.config.model as LanguageModelObject }, source: "primary" }];
    } else {
      const configured = this.config.model;
      targets = [{ request: typeof configured === "string" ? { model: configured } : {}, source: "primary" }];
    }
    if (resolved.disableInternalFallback === true) return targets.slice(0, 1);
    const chainPath = resolved.modelChain === undefined ? "config.modelChain" : "modelChain";
    const chain = resolved.modelChain ?? this.config.modelChain ?? [];
    if (!Array.isArray(chain)) throw new InvalidOptionsError(chainPath, "must be an array");
    chain.forEach((entry: unknown, index) => {
      if (typeof entry !== "string" && (typeof entry !== "object" || entry === null)) {
        throw new InvalidOptionsError(
          `${chainPath}[${index}]`,
          "must be a model id, `{ provider, model }` or an AI SDK model",
        );
      }
    });
    for (const entry of chain) {
      targets.push(
        chainEntryToTarget(entry, primaryProvider, "model-chain", (value) => this.resolver.split(value)),
      );
    }
    if (resolved.fallbackProvider !== undefined || resolved.fallbackModel !== undefined) {
      const provider = resolved.fallbackProvider ?? primaryProvider;
      targets.push({
        request: {
          ...(provider === undefined ? {} : { provider }),
          ...(resolved.fallbackModel === undefined ? {} : { model: resolved.fallbackModel }),
        },
        source: "fallback-option",
      });
    }
    return targets;
  }

  private fallbackHooks(resolved: ResolvedCallOptions) {
    const providerFallback =
      resolved.disableInternalFallback === true
        ? undefined
        : (resolved.providerFallback ?? this.config.providerFallback);
    return {
      resolver: this.resolver,
      targets: this.planTargets(resolved),
      ...(providerFallback === undefined ? {} : { providerFallback }),
      maxAttempts: Math.max(1, Math.floor(this.config.maxAttempts ?? DEFAULT_MAX_ATTEMPTS)),
      ...(resolved.abortSignal === undefined ? {} : { callerSignal: resolved.abortSignal }),
      onFallback: (event: NeuroLinkEvents["model:fallback"]) => this.emit("model:fallback", event),
      onFailure: (target: AttemptTarget) => {
        if (target.poolIndex !== undefined) this.modelPool?.markFailure(target.poolIndex);
      },
      onSuccess: (target: AttemptTarget) => {
        if (target.poolIndex !== undefined) this.modelPool?.markSuccess(target.poolIndex);
      },
    };
  }

  // ---------------------------------------------------------------- generate

  /**
   * Generates a complete answer. A string is shorthand for `{ input: { text } }` (and never grounds). Falls back
   * to the next target on any error except a caller abort. Rejects only with a {@link NeuroLinkError} (a single
   * failed provider attempt is a `ProviderCallError`, several an `AllAttemptsFailedError`, the provider's error
   * as `cause`), or with the caller's `abortSignal.reason` when the caller aborts.
   */
  async generate(optionsOrPrompt: GenerateOptions | string): Promise<GenerateResult> {
    try {
      return await this.generateTurn(optionsOrPrompt);
    } catch (error) {
      throw typedRejection(error, "generate", optionsOrPrompt);
    }
  }

  private async generateTurn(optionsOrPrompt: GenerateOptions | string): Promise<GenerateResult> {
    const startTime = Date.now();
    await requireAiSdk();
    const { options, resolved, grounding, request } = await this.prepareCall(optionsOrPrompt, "generate");
    const timeoutMs =
      parseTimeout(resolved.timeout, "timeout") ?? parseTimeout(this.config.timeout, "config.timeout");
    const generateTimeoutMs =
      parseTimeout((resolved as GenerateOptions).generateTimeoutMs, "generateTimeoutMs") ??
      parseTimeout(this.config.generateTimeoutMs, "config.generateTimeoutMs") ??
      DEFAULT_GENERATE_TIMEOUT_MS;
    const outcome = await runWithFallback({
      ...this.fallbackHooks(resolved),
      attempt: (target) =>
        runGenerateAttempt(target, request, {
          ...(resolved.abortSignal === undefined ? {} : { callerSignal: resolved.abortSignal }),
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
          generateTimeoutMs,
        }),
      phaseOf: () => "generate",
    });
    const result: GenerateResult = {
      content: outcome.value.text,
      provider: outcome.resolved.provider,
      model: outcome.resolved.model,
      ...(outcome.value.usage === undefined ? {} : { usage: outcome.value.usage }),
      ...(outcome.value.finishReason === undefined ? {} : { finishReason: outcome.value.finishReason }),
      attempts: outcome.attempts,
      responseTime: 0,
    };
    if (grounding) result.knowledge = grounding.metadata;
    const memoryWriteError = await this.storeTurn(options, result.content);
    if (memoryWriteError) result.memoryWriteError = memoryWriteError;
    result.responseTime = Date.now() - startTime;
    return result;
  }

  // ---------------------------------------------------------------- stream

  /**
   * Streams an answer. Resolves once a provider has produced its first content chunk: failures before that
   * (thrown errors, error parts, the first-content deadline, an empty stream) fall back to the next target, so
   * `await stream()` rejects only when every attempt failed. After the first chunk there is no fallback: a
   * failure ends the stream with {@link StreamInterruptedError}. Consume `stream` (or `textStream`) to the end;
   * the turn is stored in memory before iteration completes, and `result` resolves with the final content.
   * Rejections are typed as for {@link NeuroLink.generate}.
   */
  async stream(options: StreamOptions): Promise<StreamResult> {
    try {
      return await this.streamTurn(options);
    } catch (error) {
      throw typedRejection(error, "stream", options);
    }
  }

  private async streamTurn(options: StreamOptions): Promise<StreamResult> {
    const startTime = Date.now();
    await requireAiSdk();
    const prepared = await this.prepareCall(options, "stream");
    const { resolved, grounding, request } = prepared;
    const callOptions = prepared.options;
    const timeoutMs =
      parseTimeout(resolved.timeout, "timeout") ?? parseTimeout(this.config.timeout, "config.timeout");
    const firstContentTimeoutMs =
      parseTimeout((resolved as StreamOptions).firstContentTimeoutMs, "firstContentTimeoutMs") ??
      parseTimeout(this.config.firstContentTimeoutMs, "config.firstContentTimeoutMs") ??
      DEFAULT_FIRST_CONTENT_TIMEOUT_MS;
    const streamIdleTimeoutMs =
      parseTimeout((resolved as StreamOptions).streamIdleTimeoutMs, "streamIdleTimeoutMs") ??
      parseTimeout(this.config.streamIdleTimeoutMs, "config.streamIdleTimeoutMs") ??
      DEFAULT_STREAM_IDLE_TIMEOUT_MS;
    const outcome = await runWithFallback<OpenedStream>({
      ...this.fallbackHooks(resolved),
      attempt: (target) =>
        openStreamAttempt(target, request, {
          ...(resolved.abortSignal === undefined ? {} : { callerSignal: resolved.abortSignal }),
          firstContentTimeoutMs,
          streamIdleTimeoutMs,
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
        }),
      phaseOf: (error) => (EmptyOutputError.isInstance(error) ? "empty-output" : "before-first-content"),
    });
    const opened = outcome.value;
    const attempts: AttemptRecord[] = outcome.attempts;

    let resolveFinal: (value: StreamFinalResult) => void = noop;
    let rejectFinal: (error: unknown) => void = noop;
    const final = new Promise<StreamFinalResult>((resolve, reject) => {
      resolveFinal = resolve;
      rejectFinal = reject;
    });
    // Hosts that only iterate the stream never read `result`; its rejection must not be "unhandled".
    final.catch(noop);

    const produce = async function* (this: NeuroLink): AsyncGenerator<StreamChunk, void, undefined> {
      let content = opened.firstText;
      let completed = false;
      try {
        yield { content: opened.firstText };
        for await (const text of opened.rest(() => content)) {
          content += text;
          yield { content: text };
        }
        completed = true;
      } catch (error) {
        rejectFinal(error);
        throw error;
      } finally {
        if (!completed) {
          opened.cancel();
          // Stopped by the consumer: the turn is incomplete and is not stored.
          rejectFinal(new StreamAbandonedError(content));
        }
      }
      const finalResult: StreamFinalResult = {
        content,
        provider: opened.target.provider,
        model: opened.target.model,
        ...(opened.final.usage === undefined ? {} : { usage: opened.final.usage }),
        ...(opened.final.finishReason === undefined ? {} : { finishReason: opened.final.finishReason }),
        attempts,
        responseTime: 0,
      };
      if (grounding) finalResult.knowledge = grounding.metadata;
      const memoryWriteError = await this.storeTurn(callOptions, content);
      if (memoryWriteError) finalResult.memoryWriteError = memoryWriteError;
      finalResult.responseTime = Date.now() - startTime;
      resolveFinal(finalResult);
    }.bind(this);

    let generator: AsyncGenerator<StreamChunk, void, undefined> | undefined;
    const chunks = (): AsyncGenerator<StreamChunk, void, undefined> => {
      generator ??= produce();
      return generator;
    };
    const stream: AsyncIterable<StreamChunk> = { [Symbol.asyncIterator]: chunks };
    const textStream: AsyncIterable<string> = {
      async *[Symbol.asyncIterator]() {
        for await (const chunk of chunks()) yield chunk.content;
      },
    };
    const result: StreamResult = {
      stream,
      textStream,
      provider: opened.target.provider,
      model: opened.target.model,
      attempts,
      result: final,
      metadata: { fallback: attempts.length > 1, startTime },
    };
    if (grounding) result.knowledge = grounding.metadata;
    return result;
  }
}
