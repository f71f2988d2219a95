/**
 * lexground: lexical knowledge grounding for LLM turns. The engine and every public type, with no runtime
 * dependencies. The NeuroLink-compatible client is `lexground/neurolink`; the AI SDK middleware is
 * `lexground/ai-sdk`.
 *
 * @module
 */

export { deserializeIndexSnapshot, loadIndexArtifact } from "./knowledge/artifact.js";
export {
  contentKeySources,
  INDEX_ARTIFACT_FORMAT_VERSION,
  type IndexArtifactExpectations,
  KnowledgeArtifactError,
  type KnowledgeArtifactErrorCode,
  type KnowledgeArtifactSource,
  type KnowledgeIndexArtifactHeader,
  readIndexArtifactHeader,
  readIndexArtifactHeaderFrom,
} from "./knowledge/artifactHeader.js";
export type { ArtifactIndexOptions } from "./knowledge/artifactLexical.js";
export { serializeIndexSnapshot, serializeIndexSnapshotChunks } from "./knowledge/artifactWriter.js";
export {
  encodeCitationPart,
  formatKnowledgeCitation,
  parseKnowledgeCitation,
} from "./knowledge/citation.js";
export { resolveContext, resolveGroundingConfiguration, resolveRetrieval } from "./knowledge/config.js";
export { type KnowledgeGroundingConfigRead, readGroundingConfig } from "./knowledge/configRead.js";
export { validateGroundingConfig } from "./knowledge/configValidation.js";
export {
  assembleKnowledgeContext,
  buildOpening,
  citationMarker,
  estimateTokens,
  KNOWLEDGE_CONTEXT_CLOSE,
  KNOWLEDGE_CONTEXT_OPEN,
  neutralizeDelimiters,
  neutralizeEntryText,
  renderEntry,
  singleLine,
} from "./knowledge/context.js";
export {
  applyScoreCutoffs,
  expansionAllowed,
  expansionSourceCount,
  type KnowledgeCutoffOutcome,
} from "./knowledge/cutoffs.js";
export {
  CACHE_SCHEMA_VERSION,
  CONFIDENCE_DOMINANCE_RATIO,
  CONFIDENCE_MIN_FIELDS,
  DEFAULT_ALIAS_BOOST,
  DEFAULT_BM25_B,
  DEFAULT_BM25_K1,
  DEFAULT_CANDIDATE_LIMIT,
  DEFAULT_EXACT_BOOST,
  DEFAULT_FIELD_WEIGHTS,
  DEFAULT_LONG_BODY_TOKENS,
  DEFAULT_MAX_CONTEXT_TOKENS,
  DEFAULT_MAX_PASSAGES,
  DEFAULT_PASSAGE_TOKENS,
  DEFAULT_RECENT_TURNS,
  DEFAULT_RELATION_LIMIT,
  DEFAULT_RESULT_LIMIT,
  DEFAULT_TIMEOUT_MS,
  ELIGIBILITY_CACHE_LIMIT,
  ELIGIBILITY_CACHE_MAX_BYTES,
  FALLBACK_VERSION,
  HISTORY_TURN_CHARS,
  KNOWLEDGE_ENTRY_KINDS,
  KNOWLEDGE_FIELD_NAMES,
  KNOWLEDGE_INDEX_CACHE_LIMIT,
  KNOWLEDGE_INDEX_CACHE_MAX_ENTRIES,
  KNOWLEDGE_STATUSES,
  MAX_ALIASES_PER_ENTRY,
  MAX_BODY_CHARS,
  MAX_ENTRIES,
  MAX_FIELD_CHARS,
  MAX_KEYWORDS_PER_ENTRY,
  MAX_PASSAGE_SCAN_CHARS,
  MAX_PASSAGES_CONSIDERED,
  MAX_QUERY_CHARS,
  MAX_QUERY_TOKENS,
  MAX_RELATIONS_PER_ENTRY,
  MAX_TIMER_DELAY_MS,
  MAX_TOKEN_LENGTH,
} from "./knowledge/defaults.js";
export {
  BUILD_FAILED,
  INDEX_NOT_READY,
  KnowledgeGroundingEngine,
  KnowledgeGroundingTimeoutError,
  KnowledgeRegistryError,
  VALIDATION_FAILED,
} from "./knowledge/engine.js";
export {
  buildIndexArtifact,
  buildIndexArtifactChunks,
  buildKnowledgeIndexCacheKey,
  clearKnowledgeIndexCache,
  getKnowledgeIndexCacheSize,
  getOrBuildKnowledgeIndexSnapshot,
  getOrLoadKnowledgeIndexArtifact,
  type KnowledgeIndexArtifactSource,
  type KnowledgeIndexBuildResult,
} from "./knowledge/indexCache.js";
export {
  buildDocument,
  buildIndexSnapshot,
  type KnowledgeIndexBuildOptions,
  KnowledgeLexicalIndex,
  type KnowledgeLexicalIndexOptions,
} from "./knowledge/knowledgeIndex.js";
export { normalizePhrases, normalizeText, tokenize } from "./knowledge/normalize.js";
export { clearPassageCache, PASSAGE_ELISION_MARKER } from "./knowledge/passages.js";
export {
  applyPreset,
  DEFAULT_PRESET,
  isKnowledgePresetName,
  KNOWLEDGE_PRESET_NAMES,
  KNOWLEDGE_PRESETS,
  type KnowledgePreset,
  type KnowledgePresetApplication,
} from "./knowledge/presets.js";
export {
  manifestToSources,
  normalizeAndValidate,
  resolveEntry,
} from "./knowledge/resolve.js";
export {
  candidateQuery,
  classifyConfidence,
  isAuthorized,
  retrieve,
  retrieveFrom,
  snapshotSearchBackend,
} from "./knowledge/retrieval.js";
export type {
  KnowledgeBackendBuildResult,
  KnowledgeBackendIndex,
  KnowledgeBackendPublishResult,
  KnowledgeBackendStatus,
  KnowledgeCandidateEvidence,
  KnowledgeCandidateQuery,
  KnowledgeIndexBackend,
  KnowledgeSearchBackend,
  KnowledgeSelectionEntries,
} from "./knowledge/searchBackend.js";
export { MissingPeerDependencyError } from "./peerDependency.js";
export type * from "./types/knowledge.js";
