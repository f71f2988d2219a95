/**
 * What every framework adapter shares: the engine an adapter grounds with (given, or built from a configuration),
 * the typed error for bad adapter input, and validation of a per-call scope. No framework is imported here.
 *
 * @module
 */

import { validateGroundingConfig } from "../knowledge/configValidation.js";
import { emptyMetadata, KnowledgeGroundingEngine } from "../knowledge/engine.js";
import { hasErrorMarker } from "../knowledge/errors.js";
import { hostOpenTelemetryTracer } from "../openTelemetry.js";
import type {
  KnowledgeGroundingConfig,
  KnowledgeGroundingInput,
  KnowledgeGroundingMetadata,
  KnowledgeGroundingOutcome,
  KnowledgeIndexSnapshot,
  KnowledgeRequestScope,
  KnowledgeResolvedRetrieval,
} from "../types/knowledge.js";

/**
 * The part of {@link KnowledgeGroundingEngine} an adapter needs. A `KnowledgeGroundingEngine` satisfies it; so can a
 * host's own wrapper (for example one that adds tracing) as long as `ground()` keeps the engine's contract.
 * `getSnapshot` and `getResolvedRetrieval` are optional: without them, adapters still ground but cannot report
 * per-entry scores, and the AI SDK middleware cannot notice a rebuilt index.
 */
export type KnowledgeEngineLike = {
  /** Grounds one turn; expected never to throw (adapters fail open if it does). */
  ground(input: KnowledgeGroundingInput): Promise<KnowledgeGroundingOutcome>;
  /** The snapshot currently serving, if any. */
  getSnapshot?(): KnowledgeIndexSnapshot | null;
  /** Retrieval settings after defaults are applied. */
  getResolvedRetrieval?(): KnowledgeResolvedRetrieval;
};

/** Where an adapter gets its engine: exactly one of an existing engine and a configuration to build one from. */
export type KnowledgeEngineSource =
  | {
      /** The engine to use; share one engine between the client, the middleware, the tools and the retriever. */
      engine: KnowledgeEngineLike;
      config?: undefined;
    }
  | {
      /** A configuration to build a private engine from (its build starts at once). */
      config: KnowledgeGroundingConfig;
      engine?: undefined;
    };

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
const INTEGRATION_ERROR_MARKER = Symbol.for("lexground.GroundingIntegrationError");

/**
 * Raised for invalid adapter input: options of `groundingMiddleware`, `KnowledgeRetriever` or
 * `searchKnowledgeTool`, or a malformed per-call scope. `path` names the offending place, e.g.
 * `providerOptions.lexground.enabledIntegrations[1]`. Runtime grounding failures never raise it: they fail open.
 */
export class GroundingIntegrationError extends Error {
  override readonly name = "GroundingIntegrationError";
  /** Stable machine-readable code. */
  readonly code = "INVALID_INTEGRATION_INPUT";
  readonly [INTEGRATION_ERROR_MARKER] = true;
  /** The offending place, e.g. `options.recentTurns`. */
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(`${path} ${message}`, options);
    this.path = path;
  }

  /** True for a `GroundingIntegrationError` from any copy of the package. */
  static isInstance(error: unknown): error is GroundingIntegrationError {
    return hasErrorMarker(error, INTEGRATION_ERROR_MARKER);
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "string" ? JSON.stringify(value) : typeof value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Returns the engine of `source`: the given one, or a new {@link KnowledgeGroundingEngine} built from the given
 * configuration (its build starts at once). Throws {@link GroundingIntegrationError} when neither or both are
 * given, when `engine` has no `ground` method, or when the configuration has errors (a host's startup mistake is
 * reported at startup rather than as ungrounded turns later).
 */
export function resolveEngine(source: unknown, path = "options"): KnowledgeEngineLike {
  let engine: unknown;
  let config: unknown;
  let groundMethod: unknown;
  try {
    // Host options may be revoked proxies or carry throwing getters: read each once, here, as a typed error.
    if (!isRecord(source))
      throw new GroundingIntegrationError(path, `must be an object, got ${describe(source)}`);
    ({ engine, config } = source);
    groundMethod = (engine as { ground?: unknown } | null | undefined)?.ground;
  } catch (error) {
    if (GroundingIntegrationError.isInstance(error)) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new GroundingIntegrationError(path, `could not be read: ${reason}`, { cause: error });
  }
  if (engine !== undefined && config !== undefined) {
    throw new GroundingIntegrationError(path, "must give either engine or config, not both");
  }
  if (engine !== undefined) {
    if (typeof groundMethod !== "function") {
      throw new GroundingIntegrationError(
        `${path}.engine`,
        `must be a KnowledgeGroundingEngine (an object with a ground() method), got ${describe(engine)}`,
      );
    }
    return engine as KnowledgeEngineLike;
  }
  if (config === undefined) {
    throw new GroundingIntegrationError(path, "must give an engine or a config");
  }
  const errors = validateGroundingConfig(config).filter((issue) => issue.level === "error");
  if (errors.length > 0) {
    const where = errors[0]!.path;
    throw new GroundingIntegrationError(
      where && where !== "config" ? `${path}.config.${where}` : `${path}.config`,
      `is invalid: ${errors.map((issue) => issue.message).join("; ")}`,
    );
  }
  return new KnowledgeGroundingEngine(config as KnowledgeGroundingConfig, Date.now, {
    tracer: hostOpenTelemetryTracer(),
  });
}

/**
 * Validates a per-call scope. `undefined` and `null` mean "no scope"; otherwise it must be an object whose only key
 * is `enabledIntegrations`, an array of strings. An unknown key is an error so that a typo such as
 * `enabledIntegration` does not silently narrow the scope to integration-free entries.
 */
export function parseScope(value: unknown, path: string): KnowledgeRequestScope | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value))
    throw new GroundingIntegrationError(path, `must be an object, got ${describe(value)}`);
  for (const key of Object.keys(value)) {
    if (key !== "enabledIntegrations") {
      throw new GroundingIntegrationError(
        `${path}.${key}`,
        "is not a known option (known: enabledIntegrations)",
      );
    }
  }
  const enabled = value.enabledIntegrations;
  if (enabled === undefined) return {};
  if (!Array.isArray(enabled)) {
    throw new GroundingIntegrationError(
      `${path}.enabledIntegrations`,
      `must be an array of strings, got ${describe(enabled)}`,
    );
  }
  enabled.forEach((item: unknown, index) => {
    if (typeof item !== "string") {
      throw new GroundingIntegrationError(
        `${path}.enabledIntegrations[${index}]`,
        `must be a string, got ${describe(item)}`,
      );
    }
  });
  return { enabledIntegrations: (enabled as string[]).slice() };
}

/** Metadata of a grounding that failed open inside an adapter (the engine threw, which it should not). */
export function failedMetadata(reason: string, durationMs = 0): KnowledgeGroundingMetadata {
  return emptyMetadata(durationMs, reason);
}

/**
 * Calls `engine.ground()` and turns a throw or rejection (which a `KnowledgeGroundingEngine` never produces, but a
 * host's wrapper might) into an ungrounded outcome carrying the error as `failureReason`.
 *
 * A `KnowledgeGroundingEngine` also gets the host's OpenTelemetry tracer as the turn's `tracer` (when
 * `@opentelemetry/api` is installed), so the turn is a span under the active one (the AI SDK's) even when the
 * host configured no tracer. A host's own wrapper gets the input unchanged: it may forward or serialize it.
 */
export async function groundSafely(
  engine: KnowledgeEngineLike,
  input: KnowledgeGroundingInput,
): Promise<KnowledgeGroundingOutcome> {
  try {
    const tracer =
      engine instanceof KnowledgeGroundingEngine && input.tracer === undefined
        ? hostOpenTelemetryTracer()
        : null;
    const outcome = await engine.ground(tracer ? { ...input, tracer } : input);
    if (!isRecord(outcome) || !isRecord(outcome.metadata)) {
      return {
        ephemeralContext: null,
        metadata: failedMetadata("engine.ground() returned no outcome"),
        retrieval: null,
      };
    }
    return outcome;
  } catch (error) {
    return { ephemeralContext: null, metadata: failedMetadata(String(error)), retrieval: null };
  }
}

export { citationMarker } from "../knowledge/context.js";
