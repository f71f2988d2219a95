/**
 * Every default, limit and constant of the grounding engine, in one place. Values marked "parity" are NeuroLink's;
 * limits are lexground's own and bound the work any single input can cause.
 */
import type {
  KnowledgeAnalyzerName,
  KnowledgeConfidenceRule,
  KnowledgeEntryInput,
  KnowledgeEntryKind,
  KnowledgeFieldName,
  KnowledgeFieldWeights,
  KnowledgeGroundingConfig,
  KnowledgePassageMode,
  KnowledgeRetrievalConfidence,
  KnowledgeScoringMode,
  KnowledgeStatus,
} from "../types/knowledge.js";
import type { KnowledgeIndexBuildOptions } from "./knowledgeIndex.js";

/** Per-field BM25 weights (parity). */
export const DEFAULT_FIELD_WEIGHTS: Readonly<KnowledgeFieldWeights> = Object.freeze({
  title: 5,
  aliases: 5,
  keywords: 3,
  summary: 3,
  body: 1,
});
/** Candidates kept before the result cut; lexical search fetches twice this (parity). */
export const DEFAULT_CANDIDATE_LIMIT = 24;
/** Primary entries selected per turn (parity). */
export const DEFAULT_RESULT_LIMIT = 8;
/** Relationship-expanded entries added per turn (parity). */
export const DEFAULT_RELATION_LIMIT = 4;
/** Additive boost for an id or title phrase match (parity). */
export const DEFAULT_EXACT_BOOST = 100;
/** Additive boost for a reviewed alias phrase match (parity). */
export const DEFAULT_ALIAS_BOOST = 60;
/** Token budget of the rendered block (parity). */
export const DEFAULT_MAX_CONTEXT_TOKENS = 4000;
/** Whether long or oversized bodies are excerpted to their best passages: `"off"` (parity). */
export const DEFAULT_PASSAGES_MODE: KnowledgePassageMode = "off";
/** Largest passage, in estimated tokens (`ceil(chars / 4)`), when bodies are cut into passages (lexground). */
export const DEFAULT_PASSAGE_TOKENS = 200;
/** Passages kept per excerpted body (lexground). */
export const DEFAULT_MAX_PASSAGES = 3;
/** With passages on, bodies estimated above this many tokens are excerpted even when they fit (lexground). */
export const DEFAULT_LONG_BODY_TOKENS = 600;
/** Ceiling of one grounding operation in milliseconds (parity). */
export const DEFAULT_TIMEOUT_MS = 800;
/**
 * The longest timer delay Node honours (2^31 - 1 ms, about 24.8 days); a longer one fires after 1 ms. Engine
 * timeouts above it are treated as this maximum.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;
/** Recent conversation messages considered per turn (parity). */
export const DEFAULT_RECENT_TURNS = 4;
/** UTF-16 code units of each recent message that feed the lexical query (parity). */
export const HISTORY_TURN_CHARS = 400;
/** BM25 term-frequency saturation (parity). */
export const DEFAULT_BM25_K1 = 1.5;
/** BM25 length normalization (parity). */
export const DEFAULT_BM25_B = 0.75;
/** Version given to sources without one; appears in citations (parity). */
export const FALLBACK_VERSION = "0";
/** Version tag of the process-level cache key. */
export const CACHE_SCHEMA_VERSION = "knowledge-index-cache:v1";
/** Snapshots kept by the process-level cache (parity). */
export const KNOWLEDGE_INDEX_CACHE_LIMIT = 32;
/** Ratio by which a top candidate must lead the second for `medium` confidence (parity). */
export const CONFIDENCE_DOMINANCE_RATIO = 1.5;
/** Fields with lexical evidence needed for `medium` confidence (parity). */
export const CONFIDENCE_MIN_FIELDS = 2;

/** Analyzer for BM25 tokens when none is set: the seed's tokenizer only (parity). */
export const DEFAULT_ANALYZER: KnowledgeAnalyzerName = "none";
/** How per-field evidence is combined when not set: per-field BM25 summed by weight (parity). */
export const DEFAULT_SCORING_MODE: KnowledgeScoringMode = "sum";
/** Confidence rule when none is set: the seed's (parity). */
export const DEFAULT_CONFIDENCE_RULE: KnowledgeConfidenceRule = "seed";
/** Kind of an entry that does not set one (parity). */
export const DEFAULT_ENTRY_KIND: KnowledgeEntryKind = "text";
/** Status of an entry that does not set one (parity). */
export const DEFAULT_ENTRY_STATUS: KnowledgeStatus = "active";

// Enumerations: the allowed values of each option and entry field. Validation, the defaults above and the messages
// that list the choices all read them from here.

/** Values of `retrieval.analyzer`. */
export const KNOWLEDGE_ANALYZER_NAMES: readonly KnowledgeAnalyzerName[] = Object.freeze([
  "none",
  "english",
  "english-extended",
]);
/** Values of `retrieval.scoring`. */
export const KNOWLEDGE_SCORING_MODES: readonly KnowledgeScoringMode[] = Object.freeze(["sum", "bm25f"]);
/** Values of `retrieval.confidenceRule`. */
export const KNOWLEDGE_CONFIDENCE_RULES: readonly KnowledgeConfidenceRule[] = Object.freeze([
  "seed",
  "calibrated",
]);
/** Values of `retrieval.expansionMinConfidence` (every confidence class but `"none"`). */
export const KNOWLEDGE_EXPANSION_CONFIDENCES: readonly Exclude<KnowledgeRetrievalConfidence, "none">[] =
  Object.freeze(["high", "medium", "low"]);
/** Values of `context.passages`. */
export const KNOWLEDGE_PASSAGE_MODES: readonly KnowledgePassageMode[] = Object.freeze(["off", "auto"]);
/** Entry kinds accepted by validation. */
export const KNOWLEDGE_ENTRY_KINDS: readonly KnowledgeEntryKind[] = Object.freeze([
  "concept",
  "text",
  "configuration",
  "tool",
  "procedure",
  "policy",
  "troubleshooting",
]);
/** The allowed values as a validation message writes them: `"a", "b" or "c"`. */
export function describeChoices(choices: readonly string[]): string {
  const quoted = choices.map((choice) => JSON.stringify(choice));
  return quoted.length < 2 ? quoted.join("") : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}

/** Lifecycle statuses accepted by validation. */
export const KNOWLEDGE_STATUSES: readonly KnowledgeStatus[] = Object.freeze([
  "draft",
  "active",
  "deprecated",
]);

/**
 * The fields of an authored entry, in the order a compiled manifest writes them (identity first, the body last).
 * Validation reports any other key as `unknown-field`; the folder compiler reports it as an unknown field too.
 */
export const KNOWLEDGE_ENTRY_FIELDS = Object.freeze([
  "id",
  "title",
  "summary",
  "domain",
  "integrations",
  "kind",
  "status",
  "aliases",
  "keywords",
  "relatedEntryIds",
  "parentEntryId",
  "body",
] as const satisfies readonly (keyof KnowledgeEntryInput)[]);

/**
 * The options of a grounding configuration. Each is read once, also when it is not an own property (a class
 * instance with getters, for example); see `readGroundingConfig`.
 */
export const KNOWLEDGE_CONFIG_FIELDS = Object.freeze([
  "enabled",
  "sources",
  "blockedDomains",
  "retrieval",
  "context",
  "timeoutMs",
  "indexArtifact",
  "preset",
  "strict",
  "logger",
  "shadow",
  "shadowAlternatives",
  "telemetry",
  "backend",
] as const satisfies readonly (keyof KnowledgeGroundingConfig)[]);

/**
 * The keys that make an index-build argument `KnowledgeIndexBuildOptions`-shaped rather than a field-weights
 * object (the second argument of `buildIndexSnapshot` and the cache key may be either).
 */
export const INDEX_BUILD_OPTION_NAMES = Object.freeze([
  "fieldWeights",
  "k1",
  "b",
  "analyzer",
  "scoring",
  "threads",
] as const);

/**
 * The index-build argument as options: itself when it holds any of {@link INDEX_BUILD_OPTION_NAMES}, otherwise a
 * field-weights object (NeuroLink's form) wrapped as `{ fieldWeights }`; `{}` for anything that is not an object.
 */
export function toIndexBuildOptions(weightsOrOptions: unknown): KnowledgeIndexBuildOptions {
  if (typeof weightsOrOptions !== "object" || weightsOrOptions === null) return {};
  if (INDEX_BUILD_OPTION_NAMES.some((name) => name in weightsOrOptions)) {
    return weightsOrOptions as KnowledgeIndexBuildOptions;
  }
  return { fieldWeights: weightsOrOptions as Partial<KnowledgeFieldWeights> };
}

/** Scored fields in scoring order. */
export const KNOWLEDGE_FIELD_NAMES: readonly KnowledgeFieldName[] = Object.freeze([
  "title",
  "aliases",
  "keywords",
  "summary",
  "body",
]);

// Limits (lexground's own). They keep every per-turn and per-build cost bounded whatever the input.

/** The query is cut to this many UTF-16 code units before tokenizing. */
export const MAX_QUERY_CHARS = 32_768;
/** At most this many query tokens take part in phrase lookup, and at most this many distinct lexical tokens are scored. */
export const MAX_QUERY_TOKENS = 1_024;
/** Longer tokens are cut to this many UTF-16 code units (at a code point boundary), at index and query time alike. */
export const MAX_TOKEN_LENGTH = 128;
/**
 * Entries accepted in one source set. At this size an index of the synthetic benchmark's entries (200-word bodies)
 * holds about 360 million postings (12 bytes each), so memory, not this limit, is what a host plans for; see the
 * README's "A million entries".
 */
export const MAX_ENTRIES = 2_000_000;
/** Aliases accepted per entry. */
export const MAX_ALIASES_PER_ENTRY = 1_000;
/** Keywords accepted per entry. */
export const MAX_KEYWORDS_PER_ENTRY = 1_000;
/** Related entry ids accepted per entry. */
export const MAX_RELATIONS_PER_ENTRY = 1_000;
/** Characters accepted in an entry body. */
export const MAX_BODY_CHARS = 1_000_000;
/** Characters accepted in an id, title, summary, domain, alias, keyword, integration or version. */
export const MAX_FIELD_CHARS = 10_000;
/** Passages of one body that are considered for an excerpt (the rest of the body is not scanned). */
export const MAX_PASSAGES_CONSIDERED = 256;
/** Characters at the start of a body that are considered for an excerpt. */
export const MAX_PASSAGE_SCAN_CHARS = 262_144;
/** Characters of scanned body text whose passage indexes are kept across turns (least recently used dropped). */
export const PASSAGE_CACHE_MAX_CHARS = 8_000_000;
/** BM25 k1 when passages of one body are scored against the query. */
export const PASSAGE_BM25_K1 = 1.2;
/** BM25 b when passages of one body are scored against the query. */
export const PASSAGE_BM25_B = 0.75;
/** Distinct scopes whose eligibility bitmap is cached per snapshot. */
export const ELIGIBILITY_CACHE_LIMIT = 64;
/**
 * Bytes of eligibility bitmaps (one byte per entry each) cached per snapshot: with many entries fewer scopes are
 * kept (at 2,000,000 entries 16 instead of {@link ELIGIBILITY_CACHE_LIMIT}, 32 MB), never fewer than 4.
 */
export const ELIGIBILITY_CACHE_MAX_BYTES = 32 * 1024 * 1024;
/**
 * Entries of all snapshots held by the process-level cache together: past it, the least recently used snapshots
 * are dropped even under {@link KNOWLEDGE_INDEX_CACHE_LIMIT} (at a million entries, a rebuild keeps the previous
 * snapshot, not 31 of them, each several gigabytes). The snapshot just built or loaded is always kept.
 */
export const KNOWLEDGE_INDEX_CACHE_MAX_ENTRIES = 2_000_000;
