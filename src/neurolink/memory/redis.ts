/**
 * Conversation store on Redis, shared by every replica that points at the same server.
 *
 * Layout: one list per session, `<prefix>{<user>:<session>}:messages` (the braces are a cluster hash tag), each
 * element one JSON message. A turn is appended with `RPUSH` + `LTRIM` + `EXPIRE` in one `MULTI`, so replicas never
 * see half a turn; history is read with one `LRANGE key -N -1`.
 *
 * Failure behaviour (what the client above relies on):
 * - an `'error'` listener is always attached, so a dying server never crashes the process;
 * - the offline queue is disabled, so while the server is unreachable commands fail at once instead of piling up;
 * - no `CLIENT SETINFO` handshake (see `createClient` below), so a connection reset as it opens is never taken for
 *   a ready one;
 * - every command races our own timer, because a paused (SIGSTOP'd) server accepts writes to its socket and
 *   never answers, which no client-side socket state reveals;
 *   A write that hit the deadline has an unknown outcome: the server may still apply it when it resumes;
 * - each reconnection compares the server's `run_id`; a new one means the server restarted and its data may be
 *   gone, which is counted and reported to reset listeners.
 *
 * The `redis` package is imported lazily, on first use, so hosts without Redis never load it.
 *
 * @module
 */

import { importPeerDependency, PEER_DEPENDENCY_RANGES } from "../../peerDependency.js";
import { ConversationMemoryError, errorMessageOf } from "../errors.js";
import { durationOption, MAX_TIMER_DELAY_MS } from "../timers.js";
import type { ChatMessage, RedisMemoryOptions } from "../types.js";
import { redisSessionTag } from "./sessionKey.js";
import type {
  ConversationMemoryStore,
  ConversationSessionKey,
  MemoryResetListener,
  MemoryStoreStatus,
} from "./types.js";

/** Options of {@link RedisConversationMemoryStore}. */
export type RedisConversationStoreOptions = RedisMemoryOptions & {
  /** Most messages kept per session (two per turn). Default 100. */
  maxMessagesPerSession?: number;
  /** Environment read for `REDIS_URL`. Default `process.env`. */
  env?: Record<string, string | undefined>;
};

/** The part of a node-redis client this store uses. */
type RedisMultiLike = {
  rPush(key: string, elements: string[]): RedisMultiLike;
  lTrim(key: string, start: number, stop: number): RedisMultiLike;
  expire(key: string, seconds: number): RedisMultiLike;
  exec(): Promise<unknown>;
};

type RedisClientLike = {
  readonly isReady: boolean;
  readonly isOpen: boolean;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  connect(): Promise<unknown>;
  withAbortSignal(signal: AbortSignal): RedisClientLike;
  lRange(key: string, start: number, stop: number): Promise<string[]>;
  multi(): RedisMultiLike;
  del(key: string): Promise<number>;
  info(section?: string): Promise<string>;
  close(): Promise<unknown>;
  destroy(): void;
};

/** Longest session TTL, in seconds (about 68 years): larger values are taken as this. */
const MAX_TTL_SECONDS = 2_147_483_647;

/** The Redis store's durations after validation. */
export type RedisMemoryDurations = {
  ttlSeconds: number;
  commandTimeoutMs: number;
  connectTimeoutMs: number;
  maxReconnectDelayMs: number;
};

/**
 * Validates the duration options of the Redis store (`pathPrefix` names where they sit in the host's config):
 * NaN, negative values and non-numbers are an `InvalidOptionsError` naming the option; values past Node's timer
 * limit (2^31 ms, which Node would turn into 1 ms) and `Infinity` are taken as that limit, a long deadline; small
 * values are raised to a floor (1 ms, 10 ms between reconnections, 1 s of TTL), as before.
 */
export function redisMemoryDurations(options: RedisMemoryOptions, pathPrefix = ""): RedisMemoryDurations {
  // Each option is read once, in the order of the fields below (an options object with getters sees one read each).
  const read = (
    name: keyof RedisMemoryDurations,
    fallback: number,
    minimum: number,
    maximum = MAX_TIMER_DELAY_MS,
  ): number => durationOption(options?.[name], { path: `${pathPrefix}${name}`, fallback, minimum, maximum });
  return {
    ttlSeconds: Math.floor(read("ttlSeconds", 86_400, 1, MAX_TTL_SECONDS)),
    commandTimeoutMs: read("commandTimeoutMs", 1000, 1),
    connectTimeoutMs: read("connectTimeoutMs", 1000, 1),
    maxReconnectDelayMs: read("maxReconnectDelayMs", 2000, 10),
  };
}

const ROLES = new Set<ChatMessage["role"]>(["user", "assistant", "system", "tool_call", "tool_result"]);

function encodeMessage(message: ChatMessage): string {
  const record: Record<string, unknown> = { role: message.role, content: message.content };
  if (message.id !== undefined) record.id = message.id;
  record.timestamp = message.timestamp ?? new Date().toISOString();
  return JSON.stringify(record);
}

/** Elements that are not a message (foreign writers, manual edits) are skipped rather than failing the read. */
function decodeMessage(raw: string): ChatMessage | undefined {
  try {
    const value = JSON.parse(raw) as Record<string, unknown> | null;
    if (!value || typeof value !== "object") return undefined;
    const role = value.role as ChatMessage["role"];
    if (!ROLES.has(role)) return undefined;
    const content = value.content;
    if (typeof content !== "string" && !Array.isArray(content)) return undefined;
    const message: ChatMessage = { role, content };
    if (typeof value.id === "string") message.id = value.id;
    if (typeof value.timestamp === "string") message.timestamp = value.timestamp;
    return message;
  } catch {
    return undefined;
  }
}

function parseRunId(info: string): string | null {
  const match = /^run_id:([0-9a-f]+)\s*$/m.exec(info);
  return match?.[1] ?? null;
}

/** Redis-backed conversation store (node-redis v5). */
export class RedisConversationMemoryStore implements ConversationMemoryStore {
  readonly kind = "redis";
  private readonly url: string;
  private readonly keyPrefix: string;
  private readonly ttlSeconds: number;
  private readonly commandTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly maxReconnectDelayMs: number;
  private readonly maxMessagesPerSession: number;
  private client: RedisClientLike | undefined;
  private clientPromise: Promise<RedisClientLike> | undefined;
  /** Settles on the first `ready` or the first `error`: only the very first connection is waited for. */
  private initialConnection: Promise<void> | undefined;
  private closed = false;
  private state: "ok" | "degraded" = "ok";
  private lastError: string | null = null;
  private lastErrorAt: number | null = null;
  private runId: string | null = null;
  private resetCount = 0;
  private connectionErrors = 0;
  private readonly resetListeners: MemoryResetListener[] = [];

  constructor(options: RedisConversationStoreOptions = {}) {
    const env = options.env ?? process.env;
    this.url = options.url ?? env.REDIS_URL ?? "redis://127.0.0.1:6379";
    this.keyPrefix = options.keyPrefix ?? "lexground:conversation:";
    const durations = redisMemoryDurations(options);
    this.ttlSeconds = durations.ttlSeconds;
    this.commandTimeoutMs = durations.commandTimeoutMs;
    this.connectTimeoutMs = durations.connectTimeoutMs;
    this.maxReconnectDelayMs = durations.maxReconnectDelayMs;
    this.maxMessagesPerSession = Math.max(1, Math.floor(options.maxMessagesPerSession ?? 100));
  }

  /**
   * The Redis key of a session's message list: `<prefix>{<user>:<session>}:messages`, or
   * `<prefix>{<session>}:messages` without a user, each id percent-encoded (see {@link redisSessionTag}), so no
   * two (userId, sessionId) pairs share a key.
   */
  keyFor(session: ConversationSessionKey): string {
    return `${this.keyPrefix}{${redisSessionTag(session)}}:messages`;
  }

  async getRecentMessages(session: ConversationSessionKey, limit: number): Promise<ChatMessage[]> {
    if (limit <= 0) return [];
    const key = this.keyFor(session);
    const raw = await this.run("read", (client) => client.lRange(key, -limit, -1));
    const messages: ChatMessage[] = [];
    for (const element of raw) {
      const message = decodeMessage(element);
      if (message) messages.push(message);
    }
    return messages;
  }

  async appendMessages(session: ConversationSessionKey, messages: readonly ChatMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const key = this.keyFor(session);
    const encoded = messages.map(encodeMessage);
    await this.run("write", (client) =>
      client
        .multi()
        .rPush(key, encoded)
        .lTrim(key, -this.maxMessagesPerSession, -1)
        .expire(key, this.ttlSeconds)
        .exec(),
    );
  }

  async clearSession(session: ConversationSessionKey): Promise<void> {
    const key = this.keyFor(session);
    await this.run("write", (client) => client.del(key));
  }

  addResetListener(listener: MemoryResetListener): void {
    this.resetListeners.push(listener);
  }

  getStatus(): MemoryStoreStatus {
    return {
      state: this.state,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      resetCount: this.resetCount,
      details: {
        connected: this.client?.isReady ?? false,
        connectionErrors: this.connectionErrors,
        runId: this.runId,
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const client = this.client ?? (await this.clientPromise?.catch(() => undefined));
    if (!client) return;
    if (!client.isReady) {
      client.destroy();
      return;
    }
    // QUIT waits for the server; a paused one never answers, so the graceful close is bounded too.
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.close(),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, this.commandTimeoutMs);
        }),
      ]);
    } catch {
      // Closing a broken connection can fail; destroy below releases it either way.
    } finally {
      clearTimeout(timer);
      if (client.isOpen) client.destroy();
    }
  }

  private async run<T>(
    operation: "read" | "write",
    command: (client: RedisClientLike) => Promise<T>,
  ): Promise<T> {
    if (this.closed) {
      throw new ConversationMemoryError({
        code: "MEMORY_UNAVAILABLE",
        operation,
        message: "The Redis conversation store is closed",
      });
    }
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(
          new ConversationMemoryError({
            code: "MEMORY_TIMEOUT",
            operation,
            message: `Redis ${operation} did not answer within ${this.commandTimeoutMs}ms`,
          }),
        );
      }, this.commandTimeoutMs);
    });
    const work = (async () => {
      const client = await this.connectedClient();
      // The abort signal drops the command from the write queue if it was not sent yet when the deadline passed.
      return command(client.withAbortSignal(controller.signal));
    })();
    try {
      const result = await Promise.race([work, deadline]);
      this.state = "ok";
      return result;
    } catch (error) {
      const wrapped = ConversationMemoryError.isInstance(error)
        ? error
        : new ConversationMemoryError({
            code: "MEMORY_UNAVAILABLE",
            operation,
            message: `Redis ${operation} failed: ${errorMessageOf(error)}`,
            cause: error,
          });
      this.markFailed(wrapped.message);
      throw wrapped;
    } finally {
      clearTimeout(timer);
    }
  }

  private markFailed(message: string): void {
    this.state = "degraded";
    this.lastError = message;
    this.lastErrorAt = Date.now();
  }

  private async connectedClient(): Promise<RedisClientLike> {
    this.clientPromise ??= this.createClient();
    const client = await this.clientPromise;
    await this.initialConnection;
    return client;
  }

  private async createClient(): Promise<RedisClientLike> {
    let createClient: typeof import("redis").createClient;
    try {
      ({ createClient } = await importPeerDependency(
        {
          packageName: "redis",
          versionRange: PEER_DEPENDENCY_RANGES.redis,
          feature: "Redis conversation memory",
        },
        () => import("redis"),
      ));
    } catch (error) {
      throw new ConversationMemoryError({
        code: "MEMORY_UNAVAILABLE",
        operation: "connect",
        message: errorMessageOf(error),
        cause: error,
      });
    }
    const maxDelay = this.maxReconnectDelayMs;
    const client = createClient({
      url: this.url,
      disableOfflineQueue: true,
      // No CLIENT SETINFO handshake: node-redis ignores its failure, connection errors included, so a reconnection
      // reset before the server answered (a dying server) was called ready; commands then waited for the deadline
      // and the client never reconnected. Without it a connection is ready once open, and a reset reconnects.
      disableClientInfo: true,
      socket: {
        connectTimeout: this.connectTimeoutMs,
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 10), maxDelay),
      },
    }) as unknown as RedisClientLike;
    this.client = client;
    let settleInitial: () => void = () => {};
    this.initialConnection = new Promise<void>((resolve) => {
      settleInitial = resolve;
    });
    // Without this listener node-redis would throw from its EventEmitter and end the process when Redis dies.
    client.on("error", (error: unknown) => {
      this.connectionErrors += 1;
      this.markFailed(`Redis connection error: ${errorMessageOf(error)}`);
      settleInitial();
    });
    client.on("ready", () => {
      settleInitial();
      void this.checkServerIdentity(client);
    });
    client.connect().catch((error: unknown) => {
      this.markFailed(`Redis connect failed: ${errorMessageOf(error)}`);
      settleInitial();
    });
    return client;
  }

  /** A new `run_id` after a reconnection means a restarted server whose data may be gone. */
  private async checkServerIdentity(client: RedisClientLike): Promise<void> {
    try {
      const runId = parseRunId(await client.info("server"));
      if (!runId) return;
      const previous = this.runId;
      this.runId = runId;
      if (previous !== null && previous !== runId) {
        this.resetCount += 1;
        const details = { previousRunId: previous, runId, resetCount: this.resetCount };
        for (const listener of this.resetListeners) {
          try {
            listener(details);
          } catch {
            // A failing listener must not break the connection handling.
          }
        }
      }
    } catch {
      // Identity is diagnostic only; the next reconnection tries again.
    }
  }
}
