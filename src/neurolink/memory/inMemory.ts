/**
 * The default conversation store: process-local, bounded in sessions (least recently used dropped first) and in
 * messages per session. Fine for one process; replicas need the Redis store to share history. Dropping a session
 * to stay within the bound is counted and reported to eviction listeners, never silent.
 *
 * @module
 */

import { LruCache } from "../../knowledge/lruCache.js";
import type { ChatMessage } from "../types.js";
import { inMemorySessionKey, sessionKeyParts } from "./sessionKey.js";
import type {
  ConversationMemoryStore,
  ConversationSessionKey,
  MemoryEvictionListener,
  MemoryStoreStatus,
} from "./types.js";

/** Options of {@link InMemoryConversationStore}. */
export type InMemoryConversationStoreOptions = {
  /** Most sessions kept; past it the least recently used session is evicted (and reported). Default 50. */
  maxSessions?: number;
  /** Most messages kept per session (two per turn). Default 100. */
  maxMessagesPerSession?: number;
};

function copyMessage(message: ChatMessage): ChatMessage {
  const copy: ChatMessage = {
    role: message.role,
    content: typeof message.content === "string" ? message.content : [...message.content],
  };
  if (message.id !== undefined) copy.id = message.id;
  if (message.timestamp !== undefined) copy.timestamp = message.timestamp;
  return Object.freeze(copy);
}

/** A stored session: its key (to report an eviction) and its messages. */
type StoredSession = { session: ConversationSessionKey; messages: ChatMessage[] };

/** Bounded in-process conversation store. */
export class InMemoryConversationStore implements ConversationMemoryStore {
  readonly kind = "memory";
  // Least recently used sessions are dropped beyond `maxSessions`, and reported to the eviction listeners.
  private readonly sessions: LruCache<string, StoredSession>;
  private readonly maxSessions: number;
  private readonly maxMessagesPerSession: number;
  private readonly evictionListeners: MemoryEvictionListener[] = [];
  private evictionCount = 0;

  constructor(options: InMemoryConversationStoreOptions = {}) {
    this.maxSessions = Math.max(1, Math.floor(options.maxSessions ?? 50));
    this.sessions = new LruCache(this.maxSessions, (_, stored) => this.evicted(stored.session));
    this.maxMessagesPerSession = Math.max(1, Math.floor(options.maxMessagesPerSession ?? 100));
  }

  async getRecentMessages(session: ConversationSessionKey, limit: number): Promise<ChatMessage[]> {
    const key = inMemorySessionKey(session);
    const stored = limit <= 0 ? this.sessions.peek(key) : this.sessions.get(key);
    if (!stored || limit <= 0) return [];
    return stored.messages.slice(-limit);
  }

  async appendMessages(session: ConversationSessionKey, messages: readonly ChatMessage[]): Promise<void> {
    const key = inMemorySessionKey(session);
    const existing = this.sessions.peek(key);
    const next = (existing?.messages ?? []).concat(messages.map(copyMessage));
    const { userId, sessionId } = sessionKeyParts(session);
    this.sessions.set(key, {
      session: existing?.session ?? (userId === undefined ? { sessionId } : { sessionId, userId }),
      messages: next.length > this.maxMessagesPerSession ? next.slice(-this.maxMessagesPerSession) : next,
    });
  }

  /** Registers a listener called with each session evicted to stay within `maxSessions`. */
  addEvictionListener(listener: MemoryEvictionListener): void {
    this.evictionListeners.push(listener);
  }

  async clearSession(session: ConversationSessionKey): Promise<void> {
    this.sessions.delete(inMemorySessionKey(session));
  }

  /** Number of sessions held (for tests and diagnostics). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  getStatus(): MemoryStoreStatus {
    return {
      state: "ok",
      lastError: null,
      lastErrorAt: null,
      resetCount: 0,
      evictionCount: this.evictionCount,
      details: { sessions: this.sessions.size, maxSessions: this.maxSessions },
    };
  }

  async close(): Promise<void> {
    this.sessions.clear();
  }

  private evicted(session: ConversationSessionKey): void {
    this.evictionCount += 1;
    const details = {
      session: { ...session },
      reason: "max-sessions" as const,
      evictionCount: this.evictionCount,
    };
    for (const listener of this.evictionListeners) {
      try {
        listener(details);
      } catch {
        // A failing listener must not break the write that caused the eviction.
      }
    }
  }
}
