/**
 * `lexground/neurolink`: a NeuroLink-compatible client with lexical knowledge grounding, provider fallback and
 * conversation memory, on the Vercel AI SDK v6. Switch `import { NeuroLink } from "@juspay/neurolink"` to
 * `import { NeuroLink } from "lexground/neurolink"` and keep the grounding code.
 *
 * @module
 */

export { MissingPeerDependencyError } from "../peerDependency.js";
export {
  appendKnowledgeGroundingBlockToSystemPrompt,
  cloneOptionsForCallIsolation,
  type ResolvedCallOptions,
  resolveDynamicArgument,
  resolveDynamicOptions,
} from "./dynamic.js";
export {
  AllAttemptsFailedError,
  type AttemptFailurePhase,
  type AttemptRecord,
  AttemptTimeoutError,
  ConversationMemoryError,
  DynamicArgumentError,
  EmptyOutputError,
  FirstContentTimeoutError,
  GenerateTimeoutError,
  InvalidOptionsError,
  KnowledgeNotConfiguredError,
  KnowledgeUnavailableError,
  NeuroLinkError,
  type NeuroLinkErrorCode,
  ProviderCallError,
  ProviderNotConfiguredError,
  StreamAbandonedError,
  StreamIdleTimeoutError,
  StreamInterruptedError,
  UnknownProviderError,
} from "./errors.js";
export { ModelPool } from "./fallback.js";
export { InMemoryConversationStore, type InMemoryConversationStoreOptions } from "./memory/inMemory.js";
export { RedisConversationMemoryStore, type RedisConversationStoreOptions } from "./memory/redis.js";
export type {
  ConversationMemoryStore,
  ConversationSessionKey,
  MemoryEvictionDetails,
  MemoryEvictionListener,
  MemoryResetListener,
  MemoryStoreStatus,
} from "./memory/types.js";
export {
  DEFAULT_GENERATE_TIMEOUT_MS,
  KNOWLEDGE_HOOK_FAILED_WARNING,
  KNOWLEDGE_NO_SOURCES_WARNING,
  MEMORY_EVICTION_WARNING,
  NeuroLink,
  parseTimeout,
} from "./neurolink.js";
export { PROVIDER_ALIASES, PROVIDER_NAMES, PROVIDER_PACKAGES } from "./providerCatalog.js";
export {
  isLanguageModelObject,
  type ModelRequest,
  ProviderResolver,
  type ResolvedModel,
  splitProviderModel,
} from "./providers.js";
export type {
  CallContext,
  ChatMessage,
  ConversationMemoryConfig,
  CustomProvider,
  DynamicArgument,
  DynamicOptions,
  DynamicResolutionContext,
  FallbackTarget,
  GenerateOptions,
  GenerateResult,
  LanguageModelObject,
  MemoryCallOptions,
  MemoryStatus,
  MemoryWriteFailure,
  ModelChainEntry,
  ModelPoolConfig,
  ModelPoolMember,
  NeuroLinkEventName,
  NeuroLinkEvents,
  NeuroLinkLogger,
  NeurolinkConstructorConfig,
  OpenAICompatibleSettings,
  ProviderFallbackCallback,
  ProviderName,
  ProviderSettings,
  ProvidersConfig,
  RedisMemoryOptions,
  StreamChunk,
  StreamFinalResult,
  StreamOptions,
  StreamResult,
  TokenUsage,
} from "./types.js";
