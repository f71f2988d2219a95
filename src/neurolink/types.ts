/**
 * Public types of the NeuroLink client: constructor configuration, per-call options (static and dynamic),
 * results, conversation messages, fallback targets and memory status. Names follow NeuroLink's so that code
 * written against `@juspay/neurolink` keeps compiling after switching the import to `lexground/neurolink`.
 *
 * @module
 */

import type { LanguageModelV2, LanguageModelV3 } from "@ai-sdk/provider";
import type {
  KnowledgeGroundingConfig,
  KnowledgeGroundingMetadata,
  KnowledgeRequestScope,
  KnowledgeShadowEvent,
} from "../types/knowledge.js";
import type { AttemptRecord } from "./errors.js";
import type { ConversationMemoryStore } from "./memory/types.js";

/** Providers built in. Aliases accepted by `provider`: see {@link PROVIDER_ALIASES}. */
export type ProviderName = "openai" | "anthropic" | "google" | "openai-compatible";

/** An AI SDK language model object (spec v3, or v2 which the AI SDK still accepts). */
export type LanguageModelObject = LanguageModelV3 | LanguageModelV2;

/** One message of a conversation, as stored in memory or passed as `conversationMessages`. */
export type ChatMessage = {
  role: "user" | "assistant" | "system" | "tool_call" | "tool_result";
  /**
   * The text. Non-string content (for example an array of multimodal parts) is tolerated: grounding treats it as
   * empty text, the model prompt keeps its text parts.
   */
  content: string | ReadonlyArray<unknown>;
  id?: string;
  /** ISO timestamp. */
  timestamp?: string;
};

/** What a context-aware dynamic argument receives. */
export type DynamicResolutionContext = {
  /** The call's `dynamicContext` (any shape the host chooses), `{}` when absent. */
  requestContext: Record<string, unknown>;
  /** The call's abort signal. */
  signal?: AbortSignal;
};

/** A value given directly, or computed per call (sync or async, optionally from the resolution context). */
export type DynamicArgument<T> =
  | T
  | (() => T)
  | (() => Promise<T>)
  | ((context: DynamicResolutionContext) => T)
  | ((context: DynamicResolutionContext) => Promise<T>);

/** A provider/model pair to try; `model` may be omitted to use the provider's default model. */
export type FallbackTarget = {
  provider?: ProviderName | string;
  model?: string;
};

/**
 * One entry of a model chain: a `FallbackTarget`, an AI SDK model object, or a string. A string
 * `"<provider>/<model>"` whose prefix is a known provider (e.g. `"anthropic/claude-3-5-haiku-latest"`,
 * `"ollama/llama3.2:3b"`) selects both; any other string is a model id on the primary call's provider.
 */
export type ModelChainEntry = string | FallbackTarget | LanguageModelObject;

/**
 * Called when an attempt fails and no configured target is left. Return the next `{provider, model}` to try, or
 * `null` to give up. Never called for a caller abort. Same signature as NeuroLink's `providerFallback`.
 */
export type ProviderFallbackCallback = (error: unknown) => Promise<FallbackTarget | null>;

/** One member of a {@link ModelPoolConfig}. */
export type ModelPoolMember = {
  provider: ProviderName | string;
  model?: string;
};

/**
 * A pool of interchangeable provider/model members used when a call names no provider or model. Members that
 * fail are put in cooldown and skipped by later calls until it expires (all members are tried anyway when every
 * one is cooling down).
 */
export type ModelPoolConfig = {
  members: ModelPoolMember[];
  /** `priority` (default): first available member first; `round-robin`: rotate the starting member per call. */
  strategy?: "priority" | "round-robin";
  /** How long a failed member is skipped, in ms. Default 60 000. */
  cooldownMs?: number;
};

/** Settings of one built-in provider, overriding environment variables. */
export type ProviderSettings = {
  apiKey?: string;
  baseURL?: string;
  /** Default model of this provider. */
  model?: string;
  headers?: Record<string, string>;
  /** A custom fetch, e.g. for proxies or tests. */
  fetch?: typeof globalThis.fetch;
};

/** Settings of the OpenAI-compatible provider (Ollama, vLLM, LM Studio, llama.cpp server, ...). */
export type OpenAICompatibleSettings = ProviderSettings & {
  /** Name reported as the provider, e.g. `"ollama"`. Default `"openai-compatible"`. */
  name?: string;
  /** Ask the server for usage in streams (`stream_options.include_usage`). Default true. */
  includeUsage?: boolean;
};

/** Explicit provider settings; each field overrides the corresponding environment variables. */
export type ProvidersConfig = {
  openai?: ProviderSettings;
  anthropic?: ProviderSettings;
  google?: ProviderSettings;
  "openai-compatible"?: OpenAICompatibleSettings;
};

/**
 * A provider registered by name: an AI SDK provider (anything with `languageModel(modelId)`, e.g.
 * `createMistral()`) or a function from model id to model.
 */
export type CustomProvider =
  | { languageModel: (modelId: string) => LanguageModelObject }
  | ((modelId: string) => LanguageModelObject);

/** Minimal logger; `console` fits. */
export type NeuroLinkLogger = {
  warn: (message: string, ...details: unknown[]) => void;
  error?: (message: string, ...details: unknown[]) => void;
  debug?: (message: string, ...details: unknown[]) => void;
};

/** Conversation memory configuration. */
export type ConversationMemoryConfig = {
  /** Default true: history of a call's `context.sessionId` is read and the turn stored. False turns memory off. */
  enabled?: boolean;
  /** `memory` (default, bounded in-process store) or `redis` (shared across replicas; needs `redis`). */
  storageType?: "memory" | "redis";
  /**
   * Most sessions kept by the in-memory store. Past it the least recently used session is dropped, which emits
   * `memory:evicted` and counts in `getMemoryStatus().evictionCount`. Default 50.
   */
  maxSessions?: number;
  /** Most turns (user + assistant pairs) kept per session, and read into each prompt. Default 50. */
  maxTurnsPerSession?: number;
  /** Redis settings when `storageType` is `redis`. */
  redis?: RedisMemoryOptions;
  /** A ready store instance; overrides `storageType`. */
  store?: ConversationMemoryStore;
};

/**
 * Options of the Redis conversation store. Durations must be non-negative numbers (else `InvalidOptionsError`
 * naming the option); values past 2^31 − 1 ms (Node's timer limit) and `Infinity` are taken as that limit.
 */
export type RedisMemoryOptions = {
  /** `redis://[[user]:password@]host:port[/db]`. Default `REDIS_URL` or `redis://127.0.0.1:6379`. */
  url?: string;
  /** Key prefix. Default `"lexground:conversation:"`. */
  keyPrefix?: string;
  /** Session time to live in seconds, refreshed on every write. Default 86 400. */
  ttlSeconds?: number;
  /** Deadline of one Redis command (our own timer; a paused server is caught only by it). Default 1000 ms. */
  commandTimeoutMs?: number;
  /** TCP connect timeout. Default 1000 ms. */
  connectTimeoutMs?: number;
  /** Longest pause between reconnection attempts. Default 2000 ms. */
  maxReconnectDelayMs?: number;
};

/** Constructor configuration (NeuroLink's `NeurolinkConstructorConfig` plus lexground's provider settings). */
export type NeurolinkConstructorConfig = {
  /** Knowledge grounding: the engine is created only when `enabled` and `sources` is a non-empty array. */
  knowledgeGrounding?: KnowledgeGroundingConfig;
  /** Conversation memory. Default: enabled, in-memory. */
  conversationMemory?: ConversationMemoryConfig;
  /** Default provider for calls that name none. Default: `LEXGROUND_PROVIDER`, else detected from API keys. */
  provider?: ProviderName | string;
  /** Default model id, or an AI SDK model used for every call that names none. */
  model?: string | LanguageModelObject;
  /** Explicit provider settings (override environment variables). */
  providers?: ProvidersConfig;
  /**
   * Extra providers by name, usable wherever a provider name is (`provider`, model chains, pool members). A name
   * here takes precedence over a built-in one. `defaultModel` entries give their model when a call names none.
   */
  customProviders?: Record<string, CustomProvider>;
  /** Default model chain tried after the primary target fails. */
  modelChain?: ModelChainEntry[];
  /** A pool of members used when a call names no provider or model. */
  modelPool?: ModelPoolConfig;
  /** Default dynamic fallback callback. */
  providerFallback?: ProviderFallbackCallback;
  /** Most attempts per call, callback-driven ones included. Default 8. */
  maxAttempts?: number;
  /** AI SDK retries inside one attempt (with backoff) before falling back. Default 0: fallback is the retry. */
  maxRetries?: number;
  /** Default first-content deadline of streams in ms (0 disables). Default 60 000. */
  firstContentTimeoutMs?: number;
  /**
   * Default longest silence of a stream after its first content, in ms (0 disables): the provider sending nothing
   * at all for that long (no text, reasoning or other part) while the stream is being read ends it with
   * `StreamInterruptedError`. Default 60 000.
   */
  streamIdleTimeoutMs?: number;
  /** Default per-attempt deadline of calls, in ms or as a duration string. Default none. */
  timeout?: number | string;
  /**
   * Default deadline of each `generate()` attempt in ms (0 disables): an attempt that has not returned its whole
   * answer by then (a stalled server, or one trickling bytes without ever finishing) is aborted with
   * `GenerateTimeoutError` and the next target tried. Streams have their own deadlines. Default 120 000.
   */
  generateTimeoutMs?: number;
  /** Receives the constructor warning and fail-open notices. Default `console`. */
  logger?: NeuroLinkLogger;
  /** Environment read for provider settings. Default `process.env`. */
  env?: Record<string, string | undefined>;
};

/** Per-call memory switches (NeuroLink's `MemoryCallOptions` subset). */
export type MemoryCallOptions = {
  /** Read the session history into the prompt. Default true. */
  read?: boolean;
  /** Store this turn. Default true. */
  write?: boolean;
};

/** Telemetry and session context of a call. */
export type CallContext = {
  /** Conversation session whose memory is read and written. */
  sessionId?: string;
  userId?: string;
  [key: string]: unknown;
};

/** Fields shared by `generate` and `stream` options. */
type CallOptionsBase = {
  /** The user turn. `text` is the query of knowledge grounding and the last user message of the prompt. */
  input: { text: string };
  /** Provider of this call; with `model` omitted its default model is used. */
  provider?: DynamicArgument<ProviderName | string>;
  /** Model id (on `provider`), or an AI SDK model object used as is. */
  model?: DynamicArgument<string> | LanguageModelObject;
  /** System prompt; the knowledge block is appended after it. May be a (async) function. */
  systemPrompt?: DynamicArgument<string>;
  temperature?: DynamicArgument<number>;
  maxTokens?: DynamicArgument<number>;
  topP?: number;
  topK?: number;
  stopSequences?: string[];
  seed?: number;
  /**
   * Deadline of each attempt: ms, or a duration string (`"30s"`, `"2m"`). A stalled attempt is cancelled and the
   * next one tried.
   */
  timeout?: DynamicArgument<number | string>;
  /** Previous messages. When given (even `[]`), conversation memory is not read for this call. */
  conversationMessages?: ChatMessage[];
  /** Session context: `sessionId` selects the conversation memory. */
  context?: CallContext;
  /** Passed to dynamic argument functions as `requestContext`. */
  dynamicContext?: Record<string, unknown>;
  /** Opt this call into knowledge grounding (must be exactly `true`). */
  useKnowledgeGrounding?: boolean;
  /** Scope of the knowledge retrieval for this call. */
  knowledgeContext?: KnowledgeRequestScope;
  /**
   * Shadow mode for this call (lexground): when true, grounding runs (if the call opts in) and is reported in
   * `result.knowledge` (`shadow: true`) and the `knowledge:shadow` event, but nothing is added to the prompt;
   * false grounds for real even when the instance's `knowledgeGrounding.shadow` is on. Default: the instance's.
   */
  knowledgeShadow?: boolean;
  /** Cancels the call. An abort never falls back. */
  abortSignal?: AbortSignal;
  /** Ordered targets tried after the primary one fails (overrides the instance's chain). */
  modelChain?: ModelChainEntry[];
  /** One extra fallback target (NeuroLink's `fallbackProvider`). */
  fallbackProvider?: string;
  /** Model of `fallbackProvider`, or a fallback model on the primary provider. */
  fallbackModel?: string;
  /** Dynamic fallback callback (overrides the instance's). */
  providerFallback?: ProviderFallbackCallback;
  /** Only the primary target is tried. */
  disableInternalFallback?: boolean;
  /** AI SDK retries inside one attempt. */
  maxRetries?: number;
  /** Provider-specific options passed through to the AI SDK. */
  providerOptions?: Record<string, Record<string, unknown>>;
  /** Extra HTTP headers for the provider request. */
  headers?: Record<string, string>;
  /** Per-call memory switches. */
  memory?: MemoryCallOptions;
};

/** Options of `generate()`. */
export type GenerateOptions = CallOptionsBase & {
  /** Deadline of each generate attempt in ms; 0 disables. Default: the instance's (120 000). */
  generateTimeoutMs?: number;
};

/** Options of `stream()`. */
export type StreamOptions = CallOptionsBase & {
  /** Deadline for the first content chunk in ms; 0 disables. Default: the instance's (60 000). */
  firstContentTimeoutMs?: number;
  /** Longest silence after the first content chunk in ms; 0 disables. Default: the instance's (60 000). */
  streamIdleTimeoutMs?: number;
};

/**
 * `generate`/`stream` options with function-valued fields. `useKnowledgeGrounding` and `knowledgeContext` stay
 * static because retrieval runs before dynamic arguments are resolved.
 */
export type DynamicOptions = GenerateOptions;

/** Token usage in NeuroLink's shape. */
export type TokenUsage = {
  input: number;
  output: number;
  total: number;
};

/** A memory write that failed for this turn (the answer itself is fine). */
export type MemoryWriteFailure = {
  sessionId: string;
  code: string;
  message: string;
};

/** Result of `generate()`. */
export type GenerateResult = {
  content: string;
  /** Provider that answered. */
  provider: string;
  /** Model that answered. */
  model: string;
  usage?: TokenUsage;
  finishReason?: string;
  /** Knowledge-grounding diagnostics, present whenever grounding ran (also no-match and fail-open). */
  knowledge?: KnowledgeGroundingMetadata;
  /** Every attempt of this call, failed ones first. */
  attempts: AttemptRecord[];
  /** Wall time of the call in ms. */
  responseTime: number;
  /** Set when storing this turn in conversation memory failed. */
  memoryWriteError?: MemoryWriteFailure;
};

/** A chunk of a NeuroLink stream. */
export type StreamChunk = { content: string };

/** What `result` of a stream resolves to once the stream has been consumed. */
export type StreamFinalResult = GenerateResult;

/** Result of `stream()`. */
export type StreamResult = {
  /** Content chunks. Consume it once, either this or `textStream`. */
  stream: AsyncIterable<StreamChunk>;
  /** The same content as plain strings (a view of `stream`). */
  textStream: AsyncIterable<string>;
  /** Provider of the attempt that produced content. */
  provider: string;
  /** Model of the attempt that produced content. */
  model: string;
  /** Knowledge-grounding diagnostics, set before consumption. */
  knowledge?: KnowledgeGroundingMetadata;
  /** Attempts so far (failed ones, then the streaming one). */
  attempts: AttemptRecord[];
  /** Resolves after the stream ends (and the turn is stored); rejects if the stream fails mid-way. */
  result: Promise<StreamFinalResult>;
  /** Stream metadata. */
  metadata: { fallback: boolean; startTime: number };
};

/** Health of conversation memory. */
export type MemoryStatus = {
  enabled: boolean;
  /** Store kind, e.g. `memory` or `redis`. */
  store: string | null;
  /** `ok`; `degraded` after the last operation failed (reads fail open, writes report errors); `disabled`. */
  state: "ok" | "degraded" | "disabled";
  lastError: string | null;
  lastErrorAt: number | null;
  /** Times the backing server was seen restarting (its data may be gone). */
  resetCount?: number;
  /** Sessions the store dropped to stay within its bound (in-memory store: `maxSessions`). */
  evictionCount?: number;
  /** Store-specific details. */
  details?: Record<string, unknown>;
};

/** Events emitted by a {@link NeuroLink} instance. */
export type NeuroLinkEvents = {
  /** Grounding failed open (hook error, timeout, index not ready); the call continued ungrounded. */
  "grounding:error": { reason: string; error?: unknown };
  /**
   * A grounded call ran in shadow mode, or with shadow alternatives (lexground): what each configuration
   * retrieved and the block it would have added (the primary's `injected` says whether its block was added).
   * Raised before the provider is called.
   */
  "knowledge:shadow": KnowledgeShadowEvent;
  /** An attempt failed and another is being tried. */
  "model:fallback": {
    from: { provider: string; model: string };
    to: { provider: string; model: string };
    error: unknown;
    attempt: number;
  };
  /** A memory operation failed. */
  "memory:error": { operation: "read" | "write"; sessionId: string; error: unknown };
  /** The memory server restarted; stored conversations may be lost. */
  "memory:reset": { store: string; details?: Record<string, unknown> };
  /**
   * A whole session was dropped to stay within the store's bound (in-memory store: `maxSessions`, least recently
   * used first); its history is gone. `evictionCount` is the store's total so far.
   */
  "memory:evicted": {
    store: string;
    sessionId: string;
    userId?: string;
    reason: "max-sessions";
    evictionCount: number;
  };
};

/** Names of {@link NeuroLinkEvents}. */
export type NeuroLinkEventName = keyof NeuroLinkEvents;
