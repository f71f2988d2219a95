/**
 * The default conversation store: process-local, bounded in sessions (least recently used dropped first) and in
 * messages per session. Fine for one process; replicas need the Redis store to share history.
 *
 * @module
 */

import type { ChatMessage } from "../types.js";
import { inMemorySessionKey } from "./sessionKey.js";
import type { ConversationMemoryStore, ConversationSessionKey, MemoryStoreStatus } from "./types.js";

/** Options of {@link InMemoryConversationStore}. */
export type InMemoryConversationStoreOptions = {
  /** Most sessions kept. Default 50. */
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

/** Bounded in-process conversation store. */
export class InMemoryConversationStore implements ConversationMemoryStore {
  readonly kind = "memory";
  private readonly sessions = new Map<string, ChatMessage[]>();
  private readonly maxSessions: number;
  private readonly maxMessagesPerSession: number;

  constructor(options: InMemoryConversationStoreOptions = {}) {
    this.maxSessions = Math.max(1, Math.floor(options.maxSessions ?? 50));
    this.maxMessagesPerSession = Math.max(1, Math.floor(options.maxMessagesPerSession ?? 100));
  }

  async getRecentMessages(session: ConversationSessionKey, limit: number): Promise<ChatMessage[]> {
    const key = inMemorySessionKey(session);
    const messages = this.sessions.get(key);
    if (!messages || limit <= 0) return [];
    this.touch(key, messages);
    return messages.slice(-limit);
  }

  async appendMessages(session: ConversationSessionKey, messages: readonly ChatMessage[]): Promise<void> {
    const key = inMemorySessionKey(session);
    const existing = this.sessions.get(key) ?? [];
    const next = existing.concat(messages.map(copyMessage));
    this.touch(
      key,
      next.length > this.maxMessagesPerSession ? next.slice(-this.maxMessagesPerSession) : next,
    );
    while (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
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
      details: { sessions: this.sessions.size },
    };
  }

  async close(): Promise<void> {
    this.sessions.clear();
  }

  /** Map order is recency order: re-inserting moves the session to the most recent end. */
  private touch(key: string, messages: ChatMessage[]): void {
    this.sessions.delete(key);
    this.sessions.set(key, messages);
  }
}
