/**
 * The conversation-memory contract shared by the in-memory and Redis stores.
 *
 * @module
 */

import type { ChatMessage } from "../types.js";

/** Identifies one conversation: the session id, scoped by the user id when one is given. */
export type ConversationSessionKey = {
  sessionId: string;
  userId?: string;
};

/** Health of a store. */
export type MemoryStoreStatus = {
  /** `ok` after the last operation succeeded, `degraded` after it failed. */
  state: "ok" | "degraded";
  lastError: string | null;
  lastErrorAt: number | null;
  /** Times the backing server was seen restarting with a new identity (its data may be gone). */
  resetCount: number;
  /** Sessions dropped so far to stay within the store's session bound (stores without one omit it). */
  evictionCount?: number;
  details?: Record<string, unknown>;
};

/** Called when a store detects that its backing server restarted (stored conversations may be lost). */
export type MemoryResetListener = (details: Record<string, unknown>) => void;

/** What an eviction listener receives: the dropped session, why, and the store's eviction count so far. */
export type MemoryEvictionDetails = {
  session: ConversationSessionKey;
  /** `max-sessions`: the least recently used session made room for a new one. */
  reason: "max-sessions";
  evictionCount: number;
};

/** Called when a store drops a whole session to stay within its bound. */
export type MemoryEvictionListener = (details: MemoryEvictionDetails) => void;

/**
 * Storage of conversation messages. Implementations must make `appendMessages` atomic (all messages of a turn
 * or none) and answer `getRecentMessages` in one round trip. Errors are thrown to the caller: the NeuroLink client
 * decides to fail reads open and to report write failures, never to substitute another store.
 */
export interface ConversationMemoryStore {
  /** Short name for status reports, e.g. `memory` or `redis`. */
  readonly kind: string;
  /** The last `limit` messages of a session, oldest first; `[]` for an unknown session. */
  getRecentMessages(session: ConversationSessionKey, limit: number): Promise<ChatMessage[]>;
  /** Appends messages to a session atomically, trimming it to the store's bound. */
  appendMessages(session: ConversationSessionKey, messages: readonly ChatMessage[]): Promise<void>;
  /** Deletes a session. */
  clearSession(session: ConversationSessionKey): Promise<void>;
  /** Current health. */
  getStatus(): MemoryStoreStatus;
  /** Registers a listener for server restarts, when the store can detect them. */
  addResetListener?(listener: MemoryResetListener): void;
  /** Registers a listener for sessions the store drops to stay within a bound, when it has one. */
  addEvictionListener?(listener: MemoryEvictionListener): void;
  /** Releases connections and timers. Safe to call twice. */
  close(): Promise<void>;
}
