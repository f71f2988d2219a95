/**
 * `lexground/ai-sdk`: knowledge grounding for any Vercel AI SDK v6 model, as a `LanguageModelMiddleware`.
 *
 * ```ts
 * import { generateText, wrapLanguageModel } from "ai";
 * import { groundingMiddleware } from "lexground/ai-sdk";
 *
 * const model = wrapLanguageModel({ model: openai("gpt-4o-mini"), middleware: groundingMiddleware({ engine }) });
 * const result = await generateText({
 *   model,
 *   system: "You are the support assistant.",
 *   prompt: "How do I enable the multi-step flow?",
 *   providerOptions: { lexground: { enabledIntegrations: ["shopify"] } },
 * });
 * result.providerMetadata?.lexground; // { selectedIds, confidence, citations, ... }
 * ```
 *
 * The middleware is a plain object: this module imports nothing from `ai` at run time and only types from
 * `@ai-sdk/provider`, so `lexground` keeps no hard dependency on the AI SDK. The `searchKnowledge` tool (which
 * imports nothing at run time either) lives at `lexground/ai-sdk/tool`.
 *
 * @module
 */

import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3Middleware,
  LanguageModelV3StreamResult,
} from "@ai-sdk/provider";
import { DEFAULT_RECENT_TURNS } from "../knowledge/defaults.js";
import { asShadowOutcome, shadowEventOf } from "../knowledge/shadow.js";
import type {
  KnowledgeConversationTurn,
  KnowledgeGroundingMetadata,
  KnowledgeGroundingOutcome,
  KnowledgeIndexSnapshot,
  KnowledgeRequestScope,
  KnowledgeShadowEvent,
} from "../types/knowledge.js";
import { GroundingMemo, memoKeyOf, type StepGrounding } from "./aiSdkMemo.js";
import { finishWithMetadata, type GroundingProviderMetadata, withMetadata } from "./aiSdkMetadata.js";
import { insertGroundingBlock, turnFromPrompt } from "./aiSdkPrompt.js";
import {
  GroundingIntegrationError,
  groundSafely,
  type KnowledgeEngineLike,
  type KnowledgeEngineSource,
  parseScope,
  resolveEngine,
} from "./engine.js";

export type { GroundingProviderMetadata } from "./aiSdkMetadata.js";

export { insertGroundingBlock } from "./aiSdkPrompt.js";
export {
  GroundingIntegrationError,
  type KnowledgeEngineLike,
  type KnowledgeEngineSource,
} from "./engine.js";

/** Default `providerOptions` namespace read by {@link groundingMiddleware}. */
export const DEFAULT_PROVIDER_OPTIONS_KEY = "lexground";
/** Default number of remembered retrievals (one per distinct turn). */
export const DEFAULT_GROUNDING_MEMO_LIMIT = 256;
/** Default lifetime of a remembered retrieval, in milliseconds. */
export const DEFAULT_GROUNDING_MEMO_TTL_MS = 60_000;

/** What {@link GroundingMiddlewareOptions.onGrounding} receives besides the metadata and the outcome. */
export type GroundingCallInfo = {
  /** The last user message's text: the retrieval query. */
  query: string;
  /** The scope the retrieval ran with (`providerOptions[key]`, else the middleware's `scope`). */
  scope: KnowledgeRequestScope | undefined;
  /** Whether the call that triggered the retrieval was `generate` or `stream`. */
  type: "generate" | "stream";
  /** Whether the turn ran in shadow mode (nothing added to the prompt; the would-be block in `report`). */
  shadow: boolean;
  /**
   * For a turn in shadow mode or with shadow alternatives: what each configuration retrieved and the block it
   * would have added (the same report as the client's `knowledge:shadow` event); otherwise null.
   */
  report: KnowledgeShadowEvent | null;
};

/**
 * Options of {@link groundingMiddleware}: exactly one of `engine` and `config`, and optional tuning.
 */
export type GroundingMiddlewareOptions = KnowledgeEngineSource & {
  /**
   * `providerOptions` namespace holding the per-call scope, e.g. `providerOptions.lexground.enabledIntegrations`.
   * Default `"lexground"`. Providers only read their own namespace, so the key is left in place. The grounding
   * metadata is returned under the same key in `providerMetadata`.
   */
  providerOptionsKey?: string;
  /**
   * How many earlier user/assistant messages (those before the last user message, with text) join the query.
   * Default 4; the engine never uses more than {@link DEFAULT_RECENT_TURNS}.
   */
  recentTurns?: number;
  /** Scope used when a call gives none in `providerOptions`. Default: no scope (integration-free entries only). */
  scope?: KnowledgeRequestScope;
  /**
   * Shadow mode (lexground): every turn is grounded and reported (`onGrounding`, `providerMetadata`), but nothing
   * is added to the prompt, which reaches the model exactly as without the middleware. A call overrides it with
   * `providerOptions[providerOptionsKey].shadow`. Default: the engine's `shadow` setting (false).
   */
  shadow?: boolean;
  /**
   * Called after each retrieval (once per user turn, not on every tool-loop step), including retrievals that
   * failed open (`metadata.failureReason` set). Errors thrown by the callback are ignored: telemetry must not break
   * a turn.
   */
  onGrounding?: (
    metadata: KnowledgeGroundingMetadata,
    outcome: KnowledgeGroundingOutcome,
    info: GroundingCallInfo,
  ) => void;
  /** How many distinct turns' retrievals are remembered. Default 256; 0 disables reuse across steps. */
  memoLimit?: number;
  /**
   * How long a remembered retrieval may be reused, in milliseconds (it is also dropped as soon as the engine
   * serves a different snapshot). Default 60 000.
   */
  memoTtlMs?: number;
  /** Clock for the memo's lifetime. Default `Date.now`. */
  now?: () => number;
};

/** The middleware returned by {@link groundingMiddleware}: a plain `LanguageModelV3Middleware` plus its engine. */
export type GroundingMiddleware = LanguageModelV3Middleware & {
  /** The engine the middleware grounds with (the one given, or the one built from `config`). */
  readonly engine: KnowledgeEngineLike;
};

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function checkOptions(options: GroundingMiddlewareOptions): void {
  const path = "groundingMiddleware options";
  const key = options.providerOptionsKey;
  if (key !== undefined && (typeof key !== "string" || key.length === 0)) {
    throw new GroundingIntegrationError(`${path}.providerOptionsKey`, "must be a non-empty string");
  }
  if (options.recentTurns !== undefined && !isCount(options.recentTurns)) {
    throw new GroundingIntegrationError(`${path}.recentTurns`, "must be an integer >= 0");
  }
  if (options.memoLimit !== undefined && !isCount(options.memoLimit)) {
    throw new GroundingIntegrationError(`${path}.memoLimit`, "must be an integer >= 0");
  }
  const ttl = options.memoTtlMs;
  if (ttl !== undefined && (typeof ttl !== "number" || Number.isNaN(ttl) || ttl < 0)) {
    throw new GroundingIntegrationError(`${path}.memoTtlMs`, "must be a number >= 0");
  }
  if (options.shadow !== undefined && typeof options.shadow !== "boolean") {
    throw new GroundingIntegrationError(`${path}.shadow`, "must be a boolean");
  }
  for (const name of ["onGrounding", "now"] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== "function") {
      throw new GroundingIntegrationError(`${path}.${name}`, "must be a function");
    }
  }
  parseScope(options.scope, `${path}.scope`);
}

/**
 * Reads a call's `providerOptions[key]`: the scope (see {@link parseScope}) and `shadow`, a boolean. An object
 * holding only `shadow` gives no scope, so the middleware's `scope` still applies.
 */
function parseCallOptions(
  value: unknown,
  path: string,
): { scope: KnowledgeRequestScope | undefined; shadow: boolean | undefined } {
  if (value === null || typeof value !== "object" || Array.isArray(value) || !("shadow" in value)) {
    return { scope: parseScope(value, path), shadow: undefined };
  }
  const { shadow, ...rest } = value as Record<string, unknown>;
  if (shadow !== undefined && typeof shadow !== "boolean") {
    throw new GroundingIntegrationError(`${path}.shadow`, "must be a boolean");
  }
  return {
    scope: Object.keys(rest).length === 0 ? undefined : parseScope(rest, path),
    shadow: shadow as boolean | undefined,
  };
}

/**
 * Creates an AI SDK v6 middleware that grounds every call of the wrapped model in the knowledge base.
 *
 * Per call (`doGenerate`/`doStream`, so per tool-loop step):
 * 1. The query is the text of the last user message; the recent turns are the user/assistant messages with text
 *    before it (the last `recentTurns`). A prompt with no user text is passed through untouched.
 * 2. The scope is `providerOptions[providerOptionsKey]` (`{ enabledIntegrations }`), else the `scope` option. A
 *    malformed scope throws a {@link GroundingIntegrationError} naming the place.
 * 3. Retrieval runs once per user turn: steps of a tool loop, retries and fallback attempts that repeat the same
 *    query, turns and scope reuse the first step's retrieval (see `memoLimit`, `memoTtlMs`), so they all see the
 *    same block.
 * 4. A non-empty block is appended to the leading system message (one is added first when there is none), except in
 *    shadow mode (`shadow`, or `providerOptions[providerOptionsKey].shadow` per call): then nothing is added and
 *    the would-be block is reported through `onGrounding` and `providerMetadata`.
 * 5. Fail-open: when grounding fails (engine error, timeout, index not ready) the parameters pass through unchanged.
 *
 * The caller sees what happened through `onGrounding` (once per retrieval) and through
 * `providerMetadata[providerOptionsKey]` ({@link GroundingProviderMetadata}) on each step's result and on the
 * stream's `finish` part. Both are per call, so they stay correct when one middleware serves concurrent requests
 * (a "last grounding" getter would not).
 *
 * Wrap the middleware outside a fallback or retry model (`wrapLanguageModel({ model: fallback, middleware })`) so
 * that every attempt receives the same grounded prompt.
 */
export function groundingMiddleware(options: GroundingMiddlewareOptions): GroundingMiddleware {
  if (typeof options !== "object" || options === null) {
    throw new GroundingIntegrationError("groundingMiddleware options", "must be an object");
  }
  checkOptions(options);
  const engine = resolveEngine(options, "groundingMiddleware options");
  const key = options.providerOptionsKey ?? DEFAULT_PROVIDER_OPTIONS_KEY;
  const recentTurnLimit = options.recentTurns ?? DEFAULT_RECENT_TURNS;
  const defaultScope = parseScope(options.scope, "groundingMiddleware options.scope");
  const memoLimit = options.memoLimit ?? DEFAULT_GROUNDING_MEMO_LIMIT;
  const memoTtlMs = options.memoTtlMs ?? DEFAULT_GROUNDING_MEMO_TTL_MS;
  const now = options.now ?? Date.now;
  const onGrounding = options.onGrounding;
  const instanceShadow = options.shadow;
  // Links the parameters handed to the model with their grounding, for wrapGenerate/wrapStream.
  const groundingByParams = new WeakMap<LanguageModelV3CallOptions, StepGrounding>();

  const currentSnapshot = (): KnowledgeIndexSnapshot | null | undefined => {
    try {
      return engine.getSnapshot?.();
    } catch {
      return undefined;
    }
  };

  const memo = new GroundingMemo(memoLimit, memoTtlMs, now, currentSnapshot);

  const notify = (outcome: KnowledgeGroundingOutcome, info: GroundingCallInfo): void => {
    if (!onGrounding) return;
    try {
      onGrounding(outcome.metadata, outcome, info);
    } catch {
      // A failing telemetry callback must not fail the turn.
    }
  };

  const groundTurn = async (
    memoKey: string,
    query: string,
    recentTurns: KnowledgeConversationTurn[],
    info: Omit<GroundingCallInfo, "shadow" | "report">,
    shadow: boolean | undefined,
  ): Promise<StepGrounding> => {
    const reusable = memo.reusable(memoKey);
    if (reusable) return { outcome: await reusable, reused: true };
    const promise: Promise<KnowledgeGroundingOutcome> = groundSafely(engine, {
      query,
      recentTurns,
      ...(info.scope === undefined ? {} : { scope: info.scope }),
      ...(shadow === undefined ? {} : { shadow }),
    }).then((grounded) => {
      // Whatever the engine returned, a turn in shadow mode never gets a block into its prompt.
      const outcome = shadow === true ? asShadowOutcome(grounded) : grounded;
      memo.settled(memoKey, promise);
      notify(outcome, {
        ...info,
        shadow: outcome.metadata?.shadow === true,
        report: shadowEventOf(query, outcome),
      });
      return outcome;
    });
    memo.remember(memoKey, promise);
    return { outcome: await promise, reused: false };
  };

  const transformParams = async ({
    params,
    type,
  }: {
    type: "generate" | "stream";
    params: LanguageModelV3CallOptions;
  }): Promise<LanguageModelV3CallOptions> => {
    // Read and validate the scope first: a malformed scope is the caller's error and is reported, not ignored.
    const call = parseCallOptions(params.providerOptions?.[key], `providerOptions.${key}`);
    const scope = call.scope ?? defaultScope;
    const shadow = call.shadow ?? instanceShadow;
    const prompt = Array.isArray(params.prompt) ? params.prompt : [];
    const turn = turnFromPrompt(prompt, recentTurnLimit);
    if (turn === null) return params;
    const { query, recentTurns } = turn;
    const memoKey = memoKeyOf(turn, scope, shadow);

    let grounding: StepGrounding;
    try {
      grounding = await groundTurn(memoKey, query, recentTurns, { query, scope, type }, shadow);
    } catch {
      // Only a bug of this module can get here; the turn still goes ahead ungrounded.
      return params;
    }
    const block = grounding.outcome.ephemeralContext?.content;
    const next =
      typeof block === "string" && block.length > 0
        ? { ...params, prompt: insertGroundingBlock(prompt, block) }
        : params;
    groundingByParams.set(next, grounding);
    return next;
  };

  const wrapGenerate = async ({
    doGenerate,
    params,
  }: {
    doGenerate: () => PromiseLike<LanguageModelV3GenerateResult>;
    params: LanguageModelV3CallOptions;
  }): Promise<LanguageModelV3GenerateResult> => {
    const result = await doGenerate();
    const grounding = groundingByParams.get(params);
    if (!grounding) return result;
    return { ...result, providerMetadata: withMetadata(result.providerMetadata, key, grounding) };
  };

  const wrapStream = async ({
    doStream,
    params,
  }: {
    doStream: () => PromiseLike<LanguageModelV3StreamResult>;
    params: LanguageModelV3CallOptions;
  }): Promise<LanguageModelV3StreamResult> => {
    const result = await doStream();
    const grounding = groundingByParams.get(params);
    if (!grounding) return result;
    return { ...result, stream: result.stream.pipeThrough(finishWithMetadata(key, grounding)) };
  };

  return {
    specificationVersion: "v3",
    transformParams,
    wrapGenerate,
    wrapStream,
    engine,
  };
}
