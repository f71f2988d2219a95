/**
 * Validating a grounding configuration: every option a host can set, so bad values become `bad-config` issues
 * (with a path such as `retrieval.fieldWeights.title`) instead of NaN scores or a throw.
 */
import type {
  KnowledgeContextConfig,
  KnowledgeGroundingConfig,
  KnowledgeRetrievalConfig,
  KnowledgeValidationIssue,
} from "../types/knowledge.js";
import { prefixIssues, readGroundingConfig } from "./configRead.js";
import {
  describeChoices,
  KNOWLEDGE_ANALYZER_NAMES,
  KNOWLEDGE_CONFIDENCE_RULES,
  KNOWLEDGE_EXPANSION_CONFIDENCES,
  KNOWLEDGE_FIELD_NAMES,
  KNOWLEDGE_PASSAGE_MODES,
  KNOWLEDGE_SCORING_MODES,
} from "./defaults.js";
import { describeType, isUnreadable, readProperty, shapeOf } from "./hostValues.js";
import { isKnowledgePresetName, KNOWLEDGE_PRESET_NAMES } from "./presets.js";
import { isUint8Array } from "./runtime.js";
import { isIndexBackend } from "./searchBackend.js";

/** Whether `value` is one of `choices` (an option's allowed values from defaults.ts). */
function isOneOf(choices: readonly string[], value: unknown): boolean {
  return typeof value === "string" && choices.includes(value);
}

type Check = (value: number) => boolean;
const isCount: Check = (value) => Number.isInteger(value) && value >= 0;
const isNonNegative: Check = (value) => Number.isFinite(value) && value >= 0;
const isFiniteNumber: Check = (value) => Number.isFinite(value);

/** The checks of one validation run; each failure is a `bad-config` error at its path. */
type ConfigChecks = {
  /** Reports that the option at `path` is wrong (`message` follows the path). */
  fail: (path: string, message: string) => void;
  /** A number option, when set, must pass `check` (`expectation` says how, for the message). */
  number: (path: string, value: unknown, check: Check, expectation: string) => void;
  /** An option with a fixed set of values, when set, must be one of `choices`. */
  choice: (path: string, value: unknown, choices: readonly string[]) => void;
};

/** The checks of a run that adds its issues to `issues`. */
function configChecks(issues: KnowledgeValidationIssue[]): ConfigChecks {
  const fail = (path: string, message: string): void => {
    issues.push({ level: "error", code: "bad-config", message: `${path} ${message}`, path });
  };
  const number = (path: string, value: unknown, check: Check, expectation: string): void => {
    if (value === undefined) return;
    if (typeof value !== "number" || !check(value))
      fail(path, `must be ${expectation}, got ${describeValue(value)}`);
  };
  const choice = (path: string, value: unknown, choices: readonly string[]): void => {
    if (value !== undefined && !isOneOf(choices, value))
      fail(path, `must be ${describeChoices(choices)}, got ${describeValue(value)}`);
  };
  return { fail, number, choice };
}

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
  const checks = configChecks(issues);
  if (!config || typeof config !== "object" || Array.isArray(config)) {
    checks.fail("config", `must be an object, got ${describeType(config)}`);
    return issues;
  }
  const record = config as Partial<KnowledgeGroundingConfig> & Record<string, unknown>;
  validateHostOptions(record, checks);
  if (record.retrieval !== undefined) validateRetrievalOptions(record.retrieval, checks);
  if (record.context !== undefined) validateContextOptions(record.context, checks);
  validateShadowOptions(record, checks.fail, issues);
  return issues;
}

/**
 * Checks the options about the host and the index: timeout, blocked domains, sources, strictness, logger,
 * telemetry, backend, prebuilt artifact and preset.
 */
function validateHostOptions(
  record: Partial<KnowledgeGroundingConfig> & Record<string, unknown>,
  { fail, number }: ConfigChecks,
): void {
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
  if (record.telemetry !== undefined) validateTelemetryOptions(record.telemetry, fail);
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
}

/** Checks `telemetry`: an object with an optional OpenTelemetry `tracer` and an optional boolean `isEnabled`. */
function validateTelemetryOptions(telemetry: unknown, fail: ConfigChecks["fail"]): void {
  if (telemetry === null || typeof telemetry !== "object") {
    fail("telemetry", `must be an object such as { tracer }, got ${describeType(telemetry)}`);
    return;
  }
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

/** Checks `retrieval`: limits, boosts, BM25 parameters, analyzer and scoring, cut-offs, expansion, field weights. */
function validateRetrievalOptions(
  retrieval: KnowledgeRetrievalConfig,
  { fail, number, choice }: ConfigChecks,
): void {
  if (!retrieval || typeof retrieval !== "object" || Array.isArray(retrieval)) {
    fail("retrieval", `must be an object, got ${describeType(retrieval)}`);
    return;
  }
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
  if (weights === undefined) return;
  if (!weights || typeof weights !== "object" || Array.isArray(weights)) {
    fail("retrieval.fieldWeights", `must be an object, got ${describeType(weights)}`);
    return;
  }
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

/** Checks `context`: the token budget, citations, and the passage options. */
function validateContextOptions(context: KnowledgeContextConfig, { fail, number }: ConfigChecks): void {
  if (!context || typeof context !== "object" || Array.isArray(context)) {
    fail("context", `must be an object, got ${describeType(context)}`);
    return;
  }
  number("context.maxTokens", context.maxTokens, isNonNegative, "a finite number >= 0");
  if (context.includeCitations !== undefined && typeof context.includeCitations !== "boolean") {
    fail("context.includeCitations", `must be a boolean, got ${describeValue(context.includeCitations)}`);
  }
  validatePassageOptions(context, fail);
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

/** A value for a message: numbers as they are, strings quoted, anything else its type. */
function describeValue(value: unknown): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  return describeType(value);
}
