/**
 * Engine configuration: merging retrieval settings with defaults (`resolveRetrieval`) and validating every
 * number a host can set, so bad values become issues instead of NaN scores.
 */

import type {
  KnowledgeContextConfig,
  KnowledgeEffectiveConfiguration,
  KnowledgeGroundingConfig,
  KnowledgeResolvedContext,
  KnowledgeResolvedRetrieval,
  KnowledgeRetrievalConfig,
  KnowledgeValidationIssue,
} from "../types/knowledge.js";
import {
  DEFAULT_ALIAS_BOOST,
  DEFAULT_ANALYZER,
  DEFAULT_BM25_B,
  DEFAULT_BM25_K1,
  DEFAULT_CANDIDATE_LIMIT,
  DEFAULT_CONFIDENCE_RULE,
  DEFAULT_EXACT_BOOST,
  DEFAULT_LONG_BODY_TOKENS,
  DEFAULT_MAX_CONTEXT_TOKENS,
  DEFAULT_MAX_PASSAGES,
  DEFAULT_PASSAGE_TOKENS,
  DEFAULT_PASSAGES_MODE,
  DEFAULT_RELATION_LIMIT,
  DEFAULT_RESULT_LIMIT,
  DEFAULT_SCORING_MODE,
  DEFAULT_TIMEOUT_MS,
  describeChoices,
  KNOWLEDGE_ANALYZER_NAMES,
  KNOWLEDGE_CONFIDENCE_RULES,
  KNOWLEDGE_EXPANSION_CONFIDENCES,
  KNOWLEDGE_FIELD_NAMES,
  KNOWLEDGE_PASSAGE_MODES,
  KNOWLEDGE_SCORING_MODES,
  MAX_TIMER_DELAY_MS,
} from "./defaults.js";
import {
  copyList,
  describeError,
  describeType,
  isUnreadable,
  readProperty,
  shapeOf,
  UnreadableValue,
} from "./hostValues.js";
import { resolveFieldWeights } from "./knowledgeIndex.js";
import { applyPreset, isKnowledgePresetName, KNOWLEDGE_PRESET_NAMES } from "./presets.js";
import { isUint8Array } from "./runtime.js";
import { isIndexBackend } from "./searchBackend.js";

/** Whether `value` is one of `choices` (an option's allowed values from defaults.ts). */
function isOneOf(choices: readonly string[], value: unknown): boolean {
  return typeof value === "string" && choices.includes(value);
}

/**
 * Merges retrieval configuration with the defaults. Each value is `config ?? default`, so an explicit 0 is kept;
 * `fieldWeights` may be partial. The adaptive cut-offs and expansion rules have no default and appear only when
 * set. Values are not checked here; see {@link validateGroundingConfig}. A preset is applied before, with
 * `applyPreset` (or use {@link resolveGroundingConfiguration}).
 */
export function resolveRetrieval(config?: KnowledgeRetrievalConfig | null): KnowledgeResolvedRetrieval {
  const source = config && typeof config === "object" ? config : {};
  const resolved: KnowledgeResolvedRetrieval = {
    candidateLimit: source.candidateLimit ?? DEFAULT_CANDIDATE_LIMIT,
    resultLimit: source.resultLimit ?? DEFAULT_RESULT_LIMIT,
    relationLimit: source.relationLimit ?? DEFAULT_RELATION_LIMIT,
    fieldWeights: resolveFieldWeights(source.fieldWeights),
    exactBoost: source.exactBoost ?? DEFAULT_EXACT_BOOST,
    aliasBoost: source.aliasBoost ?? DEFAULT_ALIAS_BOOST,
    k1: source.k1 ?? DEFAULT_BM25_K1,
    b: source.b ?? DEFAULT_BM25_B,
    analyzer: source.analyzer ?? DEFAULT_ANALYZER,
    scoring: source.scoring ?? DEFAULT_SCORING_MODE,
    confidenceRule: source.confidenceRule ?? DEFAULT_CONFIDENCE_RULE,
  };
  if (source.minRelativeScore !== undefined) resolved.minRelativeScore = source.minRelativeScore;
  if (source.scoreGapRatio !== undefined) resolved.scoreGapRatio = source.scoreGapRatio;
  if (source.minResults !== undefined) resolved.minResults = source.minResults;
  if (source.expansionFromTop !== undefined) resolved.expansionFromTop = source.expansionFromTop;
  if (source.expansionMinConfidence !== undefined)
    resolved.expansionMinConfidence = source.expansionMinConfidence;
  return resolved;
}

/**
 * Merges context configuration with the defaults (`maxTokens` 4000, citations on, passages off with 200-token
 * passages, 3 per body, bodies over 600 tokens).
 */
export function resolveContext(config?: KnowledgeContextConfig | null): KnowledgeResolvedContext {
  const source = config && typeof config === "object" ? config : {};
  return {
    maxTokens: source.maxTokens ?? DEFAULT_MAX_CONTEXT_TOKENS,
    includeCitations: source.includeCitations !== false,
    passages: source.passages ?? DEFAULT_PASSAGES_MODE,
    passageTokens: source.passageTokens ?? DEFAULT_PASSAGE_TOKENS,
    maxPassages: source.maxPassages ?? DEFAULT_MAX_PASSAGES,
    longBodyTokens: source.longBodyTokens ?? DEFAULT_LONG_BODY_TOKENS,
  };
}

/**
 * The configuration an engine runs with: the preset (default `"neurolink"`) overlaid with the explicit
 * `retrieval` and `context` fields, then completed with the defaults. `context` is also returned as merged but not
 * defaulted (`contextConfig`), which is what `assembleKnowledgeContext` takes. Validate first: an unknown preset
 * name throws a `RangeError` here.
 */
export function resolveGroundingConfiguration(
  config: Pick<KnowledgeGroundingConfig, "preset" | "retrieval" | "context">,
): KnowledgeEffectiveConfiguration & { contextConfig: KnowledgeContextConfig } {
  const merged = applyPreset(config.preset, config.retrieval, config.context);
  return {
    preset: merged.preset,
    retrieval: resolveRetrieval(merged.retrieval),
    context: resolveContext(merged.context),
    contextConfig: merged.context,
  };
}
/** Top-level options read even when they are not own properties (a class instance with getters, for example). */
const KNOWN_CONFIG_FIELDS = [
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
] as const;
/** Options whose value is an object whose own fields are copied too. */
const NESTED_CONFIG_FIELDS: ReadonlySet<string> = new Set(["retrieval", "context", "telemetry"]);

/** The outcome of {@link readGroundingConfig}. */
export type KnowledgeGroundingConfigRead = {
  /**
   * A plain copy of the configuration: every option read once, `retrieval`, `retrieval.fieldWeights` and
   * `context` copied field by field, `blockedDomains` item by item. `sources` is kept as given (the engine copies
   * it when it builds), as are `logger` and `indexArtifact`. Options that could not be read are left out.
   */
  config: KnowledgeGroundingConfig;
  /** One `bad-config` error per option that could not be read (a throwing getter, a revoked proxy). */
  issues: KnowledgeValidationIssue[];
  /** `enabled` could not be read. The engine then counts as enabled, so turns report why they are ungrounded. */
  enabledUnreadable: boolean;
};

/**
 * Reads a configuration once into a plain object and never throws: each option (and each field of `retrieval`,
 * `retrieval.fieldWeights` and `context`, and each item of `blockedDomains`) is read exactly once, so what is
 * validated is what the engine uses, whatever getters or proxies the host's object has, and later changes to the
 * host's object have no effect. A read that throws becomes a `bad-config` issue at its path.
 */
export function readGroundingConfig(config: unknown): KnowledgeGroundingConfigRead {
  const issues: KnowledgeValidationIssue[] = [];
  const unreadable = (path: string, value: UnreadableValue): void => {
    issues.push({
      level: "error",
      code: "bad-config",
      message: `${path} could not be read: ${describeError(value.error)}`,
      path,
    });
  };
  const shape = shapeOf(config);
  if (isUnreadable(shape)) {
    unreadable("config", shape);
    return { config: { enabled: true, sources: [] }, issues, enabledUnreadable: true };
  }
  if (shape !== "record") {
    issues.push({
      level: "error",
      code: "bad-config",
      message: `config must be an object, got ${describeType(config)}`,
      path: "config",
    });
    return { config: { enabled: false, sources: [] }, issues, enabledUnreadable: false };
  }
  const source = config as object;
  const copy: Record<string, unknown> = {};
  /** Reads the given keys of `from` into `into` once; nested objects are copied by `nested`. */
  const copyFields = (
    from: object,
    keys: readonly string[],
    into: Record<string, unknown>,
    path: string,
    nested: (key: string, value: unknown, path: string) => unknown,
  ): void => {
    // Known options come first and own keys repeat them: each key is read once, also when its read throws.
    for (const key of new Set(keys)) {
      if (Object.hasOwn(into, key)) continue;
      const value = readProperty(from, key);
      const fieldPath = path === "" ? key : `${path}.${key}`;
      if (isUnreadable(value)) unreadable(fieldPath, value);
      else if (value !== undefined) into[key] = nested(key, value, fieldPath);
    }
  };
  const ownKeys = (from: object, path: string): string[] => {
    try {
      return Object.keys(from);
    } catch (caught) {
      unreadable(path === "" ? "config" : path, new UnreadableValue(caught));
      return [];
    }
  };
  /** A plain copy of a record's own fields (and of `fieldWeights` inside `retrieval`); other values as they are. */
  const copyRecord = (value: unknown, path: string, depth: number): unknown => {
    const valueShape = shapeOf(value);
    if (isUnreadable(valueShape)) {
      unreadable(path, valueShape);
      return undefined;
    }
    if (valueShape !== "record") return value;
    const record: Record<string, unknown> = {};
    copyFields(value as object, ownKeys(value as object, path), record, path, (key, item, itemPath) =>
      depth === 0 && key === "fieldWeights" ? copyRecord(item, itemPath, 1) : item,
    );
    return record;
  };
  const topLevelKeys = [...KNOWN_CONFIG_FIELDS, ...ownKeys(source, "")];
  copyFields(source, topLevelKeys, copy, "", (key, value, path) => {
    if (NESTED_CONFIG_FIELDS.has(key)) return copyRecord(value, path, 0);
    if (key === "shadowAlternatives") return readShadowAlternatives(value, path, issues);
    const valueShape = shapeOf(value);
    if (isUnreadable(valueShape)) {
      unreadable(path, valueShape);
      return undefined;
    }
    if (key === "blockedDomains" && valueShape === "array") {
      const list = copyList(value as object, Number.POSITIVE_INFINITY);
      if (!Array.isArray(list)) {
        if (isUnreadable(list)) unreadable(path, list);
        return undefined;
      }
      const unreadableIndex = list.findIndex((item) => isUnreadable(item));
      if (unreadableIndex < 0) return list;
      unreadable(`${path}[${unreadableIndex}]`, list[unreadableIndex] as UnreadableValue);
      return undefined;
    }
    return value;
  });
  const enabledUnreadable = issues.some((issue) => issue.path === "enabled");
  if (enabledUnreadable) copy.enabled = true;
  return { config: copy as KnowledgeGroundingConfig, issues, enabledUnreadable };
}

/** Issues of a nested configuration, re-pathed under `prefix` (its "config" path is `prefix` itself). */
function prefixIssues(
  issues: readonly KnowledgeValidationIssue[],
  prefix: string,
): KnowledgeValidationIssue[] {
  return issues.map((issue) => {
    const inner = issue.path ?? "config";
    const path = inner === "config" ? prefix : `${prefix}.${inner}`;
    const message = issue.message.startsWith(`${inner} `)
      ? `${path} ${issue.message.slice(inner.length + 1)}`
      : `${path}: ${issue.message}`;
    return { ...issue, path, message };
  });
}

/**
 * Reads `shadowAlternatives` once: each alternative that is an object is read like a configuration (so getters
 * and proxies are read once, and unreadable fields are issues at their path); other values are kept for the
 * validator to report.
 */
function readShadowAlternatives(value: unknown, path: string, issues: KnowledgeValidationIssue[]): unknown {
  const shape = shapeOf(value);
  if (isUnreadable(shape)) {
    issues.push(...prefixIssues([unreadableIssue(shape)], path));
    return undefined;
  }
  if (shape !== "record") return value;
  const copy: Record<string, unknown> = {};
  let names: string[];
  try {
    names = Object.keys(value as object);
  } catch (caught) {
    issues.push(...prefixIssues([unreadableIssue(new UnreadableValue(caught))], path));
    return undefined;
  }
  for (const name of names) {
    const item = readProperty(value as object, name);
    const itemPath = `${path}.${name}`;
    if (isUnreadable(item)) {
      issues.push(...prefixIssues([unreadableIssue(item)], itemPath));
      continue;
    }
    if (shapeOf(item) !== "record") {
      copy[name] = item;
      continue;
    }
    const read = readGroundingConfig(item);
    issues.push(...prefixIssues(read.issues, itemPath));
    copy[name] = read.config;
  }
  return copy;
}

function unreadableIssue(value: UnreadableValue): KnowledgeValidationIssue {
  return {
    level: "error",
    code: "bad-config",
    message: `config could not be read: ${describeError(value.error)}`,
    path: "config",
  };
}

/** Options an entry of `shadowAlternatives` may set. */
const SHADOW_ALTERNATIVE_FIELDS: ReadonlySet<string> = new Set(["preset", "retrieval", "context"]);

/** Checks `shadow` and `shadowAlternatives` (each alternative validated as a configuration, paths under its name). */
function validateShadowOptions(
  record: Record<string, unknown>,
  fail: (path: string, message: string) => void,
  issues: KnowledgeValidationIssue[],
): void {
  if (record.shadow !== undefined && typeof record.shadow !== "boolean") {
    fail("shadow", `must be a boolean, got ${describeValue(record.shadow)}`);
  }
  const alternatives = record.shadowAlternatives;
  if (alternatives === undefined) return;
  if (!alternatives || typeof alternatives !== "object" || Array.isArray(alternatives)) {
    fail(
      "shadowAlternatives",
      `must be an object of named configurations, got ${describeType(alternatives)}`,
    );
    return;
  }
  for (const [name, alternative] of Object.entries(alternatives)) {
    const path = `shadowAlternatives.${name}`;
    if (!alternative || typeof alternative !== "object" || Array.isArray(alternative)) {
      fail(path, `must be an object with preset, retrieval or context, got ${describeType(alternative)}`);
      continue;
    }
    for (const key of Object.keys(alternative)) {
      if (!SHADOW_ALTERNATIVE_FIELDS.has(key))
        fail(`${path}.${key}`, "is not an option of an alternative (known: preset, retrieval, context)");
    }
    issues.push(...prefixIssues(validateConfigValues(alternative), path));
  }
}

type Check = (value: number) => boolean;
const isCount: Check = (value) => Number.isInteger(value) && value >= 0;
const isNonNegative: Check = (value) => Number.isFinite(value) && value >= 0;
const isFiniteNumber: Check = (value) => Number.isFinite(value);

/**
 * Validates an engine configuration. Returns issues (code `bad-config`, with a path such as
 * `retrieval.fieldWeights.title`); an error-level issue means the engine must not build. Never throws: the
 * configuration is read once with {@link readGroundingConfig} and options that cannot be read are issues too.
 */
export function validateGroundingConfig(config: unknown): KnowledgeValidationIssue[] {
  const read = readGroundingConfig(config);
  return [...read.issues, ...validateConfigValues(read.config)];
}

/** Validates a configuration already read by {@link readGroundingConfig} (a plain object, or not an object). */
export function validateConfigValues(config: unknown): KnowledgeValidationIssue[] {
  const issues: KnowledgeValidationIssue[] = [];
  const fail = (path: string, message: string): void => {
    issues.push({ level: "error", code: "bad-config", message: `${path} ${message}`, path });
  };
  if (!config || typeof config !== "object" || Array.isArray(config)) {
    fail("config", `must be an object, got ${describeType(config)}`);
    return issues;
  }
  const record = config as Partial<KnowledgeGroundingConfig> & Record<string, unknown>;
  const number = (path: string, value: unknown, check: Check, expectation: string): void => {
    if (value === undefined) return;
    if (typeof value !== "number" || !check(value))
      fail(path, `must be ${expectation}, got ${describeValue(value)}`);
  };
  const choice = (path: string, value: unknown, choices: readonly string[]): void => {
    if (value !== undefined && !isOneOf(choices, value))
      fail(path, `must be ${describeChoices(choices)}, got ${describeValue(value)}`);
  };
  if (record.timeoutMs !== undefined) {
    number(
      "timeoutMs",
      record.timeoutMs,
      (value) => Number.isFinite(value) && value > 0,
      "a finite number > 0",
    );
  }
  if (record.blockedDomains !== undefined) {
    if (
      !Array.isArray(record.blockedDomains) ||
      record.blockedDomains.some((domain) => typeof domain !== "string")
    ) {
      fail("blockedDomains", `must be an array of strings, got ${describeValue(record.blockedDomains)}`);
    }
  }
  const sourcesShape = shapeOf(record.sources);
  // Unreadable sources are reported by source validation (`unreadable-input` at `sources`), when the engine builds.
  if (record.sources !== undefined && sourcesShape !== "array" && !isUnreadable(sourcesShape)) {
    fail("sources", `must be an array of sources, got ${describeValue(record.sources)}`);
  }
  if (record.strict !== undefined && typeof record.strict !== "boolean") {
    fail("strict", `must be a boolean, got ${describeValue(record.strict)}`);
  }
  if (record.logger !== undefined && record.logger !== null) {
    const warn = typeof record.logger === "object" ? readProperty(record.logger, "warn") : undefined;
    if (typeof warn !== "function") {
      fail("logger", `must be null or an object with a warn() method, got ${describeType(record.logger)}`);
    }
  }
  if (record.telemetry !== undefined) {
    const telemetry = record.telemetry;
    if (telemetry === null || typeof telemetry !== "object") {
      fail("telemetry", `must be an object such as { tracer }, got ${describeType(telemetry)}`);
    } else {
      const tracer = readProperty(telemetry, "tracer");
      const startActiveSpan =
        tracer !== null && typeof tracer === "object" ? readProperty(tracer, "startActiveSpan") : undefined;
      if (tracer !== undefined && typeof startActiveSpan !== "function") {
        fail(
          "telemetry.tracer",
          `must be an OpenTelemetry Tracer (with startActiveSpan()), got ${describeType(tracer)}`,
        );
      }
      const isEnabled = readProperty(telemetry, "isEnabled");
      if (isEnabled !== undefined && typeof isEnabled !== "boolean") {
        fail("telemetry.isEnabled", `must be a boolean, got ${describeValue(isEnabled)}`);
      }
    }
  }
  if (record.backend !== undefined && !isIndexBackend(record.backend)) {
    fail(
      "backend",
      `must be an index backend such as createPostgresBackend(…) from lexground/postgres, got ${describeType(record.backend)}`,
    );
  }
  if (
    record.indexArtifact !== undefined &&
    typeof record.indexArtifact !== "string" &&
    !isUint8Array(record.indexArtifact)
  ) {
    fail("indexArtifact", `must be a file path or a Uint8Array, got ${describeType(record.indexArtifact)}`);
  }
  if (record.preset !== undefined && !isKnowledgePresetName(record.preset)) {
    fail(
      "preset",
      `must be one of ${KNOWLEDGE_PRESET_NAMES.map((name) => JSON.stringify(name)).join(", ")}, got ${describeValue(record.preset)}`,
    );
  }
  const retrieval = record.retrieval;
  if (retrieval !== undefined) {
    if (!retrieval || typeof retrieval !== "object" || Array.isArray(retrieval)) {
      fail("retrieval", `must be an object, got ${describeType(retrieval)}`);
    } else {
      if (retrieval.mode !== undefined && retrieval.mode !== "lexical") {
        fail("retrieval.mode", `must be "lexical", got ${describeValue(retrieval.mode)}`);
      }
      number("retrieval.candidateLimit", retrieval.candidateLimit, isCount, "an integer >= 0");
      number("retrieval.resultLimit", retrieval.resultLimit, isCount, "an integer >= 0");
      number("retrieval.relationLimit", retrieval.relationLimit, isCount, "an integer >= 0");
      number("retrieval.exactBoost", retrieval.exactBoost, isFiniteNumber, "a finite number");
      number("retrieval.aliasBoost", retrieval.aliasBoost, isFiniteNumber, "a finite number");
      number("retrieval.k1", retrieval.k1, isNonNegative, "a finite number >= 0");
      number("retrieval.b", retrieval.b, (value) => value >= 0 && value <= 1, "a number in [0, 1]");
      choice("retrieval.analyzer", retrieval.analyzer, KNOWLEDGE_ANALYZER_NAMES);
      choice("retrieval.scoring", retrieval.scoring, KNOWLEDGE_SCORING_MODES);
      choice("retrieval.confidenceRule", retrieval.confidenceRule, KNOWLEDGE_CONFIDENCE_RULES);
      const isFraction: Check = (value) => value >= 0 && value <= 1;
      number("retrieval.minRelativeScore", retrieval.minRelativeScore, isFraction, "a number in [0, 1]");
      number("retrieval.scoreGapRatio", retrieval.scoreGapRatio, isFraction, "a number in [0, 1]");
      number(
        "retrieval.minResults",
        retrieval.minResults,
        (value) => Number.isInteger(value) && value >= 1,
        "an integer >= 1",
      );
      number("retrieval.expansionFromTop", retrieval.expansionFromTop, isCount, "an integer >= 0");
      choice(
        "retrieval.expansionMinConfidence",
        retrieval.expansionMinConfidence,
        KNOWLEDGE_EXPANSION_CONFIDENCES,
      );
      const weights = retrieval.fieldWeights;
      if (weights !== undefined) {
        if (!weights || typeof weights !== "object" || Array.isArray(weights)) {
          fail("retrieval.fieldWeights", `must be an object, got ${describeType(weights)}`);
        } else {
          for (const field of KNOWLEDGE_FIELD_NAMES) {
            number(`retrieval.fieldWeights.${field}`, weights[field], isNonNegative, "a finite number >= 0");
          }
          for (const key of Object.keys(weights)) {
            if (!(KNOWLEDGE_FIELD_NAMES as readonly string[]).includes(key)) {
              fail(
                `retrieval.fieldWeights.${key}`,
                `is not a field; expected one of ${KNOWLEDGE_FIELD_NAMES.join(", ")}`,
              );
            }
          }
        }
      }
    }
  }
  const context = record.context;
  if (context !== undefined) {
    if (!context || typeof context !== "object" || Array.isArray(context)) {
      fail("context", `must be an object, got ${describeType(context)}`);
    } else {
      number("context.maxTokens", context.maxTokens, isNonNegative, "a finite number >= 0");
      if (context.includeCitations !== undefined && typeof context.includeCitations !== "boolean") {
        fail("context.includeCitations", `must be a boolean, got ${describeValue(context.includeCitations)}`);
      }
      validatePassageOptions(context, fail);
    }
  }
  validateShadowOptions(record, fail, issues);
  return issues;
}

/** Checks the passage options of a context configuration (`context.passages` and its knobs). */
function validatePassageOptions(
  context: KnowledgeContextConfig,
  fail: (path: string, message: string) => void,
): void {
  if (context.passages !== undefined && !isOneOf(KNOWLEDGE_PASSAGE_MODES, context.passages)) {
    fail(
      "context.passages",
      `must be ${describeChoices(KNOWLEDGE_PASSAGE_MODES)}, got ${describeValue(context.passages)}`,
    );
  }
  const positiveInteger = (path: string, value: unknown): void => {
    if (value === undefined) return;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
      fail(path, `must be an integer >= 1, got ${describeValue(value)}`);
  };
  positiveInteger("context.passageTokens", context.passageTokens);
  positiveInteger("context.maxPassages", context.maxPassages);
  const longBody = context.longBodyTokens;
  if (longBody !== undefined && (typeof longBody !== "number" || !isNonNegative(longBody)))
    fail("context.longBodyTokens", `must be a finite number >= 0, got ${describeValue(longBody)}`);
}

function describeValue(value: unknown): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  return describeType(value);
}

/**
 * The timeout of one grounding operation. Values above {@link MAX_TIMER_DELAY_MS} (about 24.8 days) are that
 * maximum: Node would otherwise fire such a timer after 1 ms.
 */
export function resolveTimeout(config: Pick<KnowledgeGroundingConfig, "timeoutMs">): number {
  return Math.min(config.timeoutMs ?? DEFAULT_TIMEOUT_MS, MAX_TIMER_DELAY_MS);
}
