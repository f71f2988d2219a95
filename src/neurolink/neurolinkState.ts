/**
 * The client's state (every field, in one place), its constructor (providers, model pool, conversation memory,
 * the grounding engine), its events and conversation memory. `NeuroLink` (neurolink.ts) builds on it: knowledge
 * in `neurolinkKnowledge.ts`, calls (`generate`, `stream`) in `neurolink.ts`.
 */
import { EventEmitter } from "node:events";
import type { KnowledgeGroundingEngine } from "../knowledge/engine.js";
import { describeError, isUnreadable, readProperty, shapeOf } from "../knowledge/hostValues.js";
import type { KnowledgeGroundingConfig } from "../types/knowledge.js";
import { type CallState, sessionOf, withUser } from "./callOptions.js";
import { errorMessageOf, InvalidOptionsError, NeuroLinkError } from "./errors.js";
import { ModelPool } from "./fallback.js";
import { InMemoryConversationStore } from "./memory/inMemory.js";
import { RedisConversationMemoryStore, redisMemoryDurations } from "./memory/redis.js";
import type { ConversationMemoryStore, MemoryEvictionDetails } from "./memory/types.js";
import { ProviderResolver } from "./providers.js";
import type {
  ChatMessage,
  GenerateOptions,
  MemoryStatus,
  MemoryWriteFailure,
  NeuroLinkEventName,
  NeuroLinkEvents,
  NeuroLinkLogger,
  NeurolinkConstructorConfig,
} from "./types.js";

const DEFAULT_MAX_TURNS_PER_SESSION = 50;
const DEFAULT_MAX_SESSIONS = 50;

/**
 * Logged once per instance at the first session the memory store evicts to stay within its bound; every eviction
 * also emits `memory:evicted` and counts in `getMemoryStatus().evictionCount`.
 */
export const MEMORY_EVICTION_WARNING =
  "[NeuroLink] conversation memory is full: the least recently used session was dropped (raise conversationMemory.maxSessions or use Redis; further evictions emit memory:evicted and are counted in getMemoryStatus())";

/**
 * The state, events and memory of a {@link NeuroLink} (not exported from the package: that class is the public
 * one). Every field is declared here, at the top.
 */
export abstract class NeuroLinkState {
  protected knowledgeGroundingEngine: KnowledgeGroundingEngine | undefined;
  /** `knowledgeGrounding` as the engine read it (a plain copy), for an engine created later by rebuildKnowledge(). */
  protected knowledgeGroundingConfig: Readonly<KnowledgeGroundingConfig> | undefined;
  protected readonly config: NeurolinkConstructorConfig;
  protected readonly logger: NeuroLinkLogger;
  protected readonly resolver: ProviderResolver;
  protected readonly modelPool: ModelPool | undefined;
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

  protected emit<E extends NeuroLinkEventName>(event: E, payload: NeuroLinkEvents[E]): void {
    try {
      this.events.emit(event, payload);
    } catch (error) {
      // A throwing host listener must not break the turn.
      this.logger.warn(`[NeuroLink] listener of "${event}" threw`, error);
    }
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
  protected async fetchRecentRoutingHistory(options: GenerateOptions): Promise<ChatMessage[]> {
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

  protected memoryHistory(options: GenerateOptions, state: CallState): Promise<ChatMessage[]> {
    state.memoryHistory ??= this.fetchRecentRoutingHistory(options);
    return state.memoryHistory;
  }

  /** Stores the user input and the answer; a failure is returned (and emitted), never thrown. */
  protected async storeTurn(
    options: GenerateOptions,
    answer: string,
  ): Promise<MemoryWriteFailure | undefined> {
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

  /** Creates the grounding engine (see `neurolinkKnowledge.ts`); never throws. */
  protected abstract setUpKnowledgeGrounding(): void;
}
