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
  LanguageModelV3Message,
  LanguageModelV3Middleware,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  SharedV3ProviderMetadata,
} from "@ai-sdk/provider";
import { DEFAULT_RECENT_TURNS, HISTORY_TURN_CHARS, MAX_QUERY_CHARS } from "../knowledge/defaults.js";
import { LruCache } from "../knowledge/lruCache.js";
import { asShadowOutcome, shadowEventOf } from "../knowledge/shadow.js";
import type {
  KnowledgeConversationTurn,
  KnowledgeGroundingMetadata,
  KnowledgeGroundingOutcome,
  KnowledgeIndexSnapshot,
  KnowledgeRequestScope,
  KnowledgeShadowEvent,
} from "../types/knowledge.js";
import {
  citationMarker,
  GroundingIntegrationError,
  groundSafely,
  type KnowledgeEngineLike,
  type KnowledgeEngineSource,
  parseScope,
  resolveEngine,
} from "./engine.js";

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

/**
 * The grounding metadata placed in `providerMetadata[providerOptionsKey]` of every grounded step's result (and of
 * the stream's `finish` part): the engine's content-free metadata plus the citation markers of the block.
 */
export type GroundingProviderMetadata = {
  retrievalMode: "lexical";
  selectedIds: string[];
  expandedIds: string[];
  candidateCount: number;
  contextTokens: number;
  truncated: boolean;
  durationMs: number;
  confidence?: KnowledgeGroundingMetadata["confidence"];
  failureReason?: string;
  /** Citation markers (`[KB:id@version]`) of the entries included in the block. */
  citations: string[];
  /** Whether a block was added to the prompt. */
  grounded: boolean;
  /** True when this step reused the retrieval of an earlier step of the same turn instead of retrieving again. */
  reused: boolean;
  /** Present (true) when the turn ran in shadow mode: nothing was added to the prompt (lexground). */
  shadow?: boolean;
  /** In shadow mode: the citation markers of the block that would have been added (lexground). */
  shadowCitations?: string[];
};

/** The middleware returned by {@link groundingMiddleware}: a plain `LanguageModelV3Middleware` plus its engine. */
export type GroundingMiddleware = LanguageModelV3Middleware & {
  /** The engine the middleware grounds with (the one given, or the one built from `config`). */
  readonly engine: KnowledgeEngineLike;
};

type MemoEntry = {
  promise: Promise<KnowledgeGroundingOutcome>;
  createdAt: number;
  settled: boolean;
  /** The snapshot serving when the retrieval settled (`undefined` when the engine does not expose it). */
  snapshot: KnowledgeIndexSnapshot | null | undefined;
};

type StepGrounding = { outcome: KnowledgeGroundingOutcome; reused: boolean };

/**
 * Retrievals remembered per distinct turn, so the steps of one tool loop (one `transformParams` call each, with
 * the same last user message) reuse the first step's grounding: while it is younger than the lifetime and the
 * engine still serves the snapshot it was retrieved from. Bounded; least recently used dropped.
 */
class GroundingMemo {
  private readonly entries: LruCache<string, MemoEntry>;

  constructor(
    limit: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly currentSnapshot: () => KnowledgeIndexSnapshot | null | undefined,
  ) {
    // Refreshed on reuse; a limit of 0 keeps nothing, so every step grounds anew.
    this.entries = new LruCache(limit);
  }

  /** The remembered retrieval of `key` if it may be reused; a stale one is forgotten. */
  reusable(key: string): Promise<KnowledgeGroundingOutcome> | undefined {
    const existing = this.entries.get(key);
    if (!existing) return undefined;
    const fresh = this.now() - existing.createdAt <= this.ttlMs;
    const sameSnapshot = !existing.settled || existing.snapshot === this.currentSnapshot();
    if (fresh && sameSnapshot) return existing.promise;
    this.entries.delete(key);
    return undefined;
  }

  /** Remembers a retrieval that has just started. */
  remember(key: string, promise: Promise<KnowledgeGroundingOutcome>): void {
    this.entries.set(key, { promise, createdAt: this.now(), settled: false, snapshot: undefined });
  }

  /** Notes the snapshot that served `promise`, once it resolved, if it is still the one remembered for `key`. */
  settled(key: string, promise: Promise<KnowledgeGroundingOutcome>): void {
    const stored = this.entries.peek(key);
    if (stored?.promise === promise) {
      stored.settled = true;
      stored.snapshot = this.currentSnapshot();
    }
  }
}

/** What one model call asks: the last user message's text, and the conversation turns before it. */
type PromptTurn = { query: string; recentTurns: KnowledgeConversationTurn[] };

/**
 * The turn a prompt asks about: the last user message (its text is the query) and up to `recentTurnLimit` earlier
 * user and assistant messages with text, oldest first. Null when there is no user message or it has no text.
 */
function turnFromPrompt(prompt: LanguageModelV3Prompt, recentTurnLimit: number): PromptTurn | null {
  let lastUser = -1;
  for (let index = prompt.length - 1; index >= 0; index--) {
    if (prompt[index]?.role === "user") {
      lastUser = index;
      break;
    }
  }
  if (lastUser < 0) return null;
  const query = messageText(prompt[lastUser]!);
  if (query.trim().length === 0) return null;
  const recentTurns: KnowledgeConversationTurn[] = [];
  if (recentTurnLimit > 0) {
    for (let index = lastUser - 1; index >= 0 && recentTurns.length < recentTurnLimit; index--) {
      const message = prompt[index]!;
      if (message.role !== "user" && message.role !== "assistant") continue;
      const text = messageText(message);
      if (text.length > 0) recentTurns.unshift({ role: message.role, text });
    }
  }
  return { query, recentTurns };
}

/**
 * The memo key of a turn: what the engine actually reads (it truncates the query and each turn), so equal keys
 * mean equal retrievals. Integrations are compared case-insensitively by the engine, hence the normalization.
 */
function memoKeyOf(
  turn: PromptTurn,
  scope: KnowledgeRequestScope | undefined,
  shadow: boolean | undefined,
): string {
  const integrations = scope?.enabledIntegrations
    ? [...new Set(scope.enabledIntegrations.map((name) => name.toLowerCase()))].sort()
    : [];
  return JSON.stringify([
    turn.query.slice(0, MAX_QUERY_CHARS),
    turn.recentTurns
      .slice(-DEFAULT_RECENT_TURNS)
      .map((recent) => [recent.role, recent.text.slice(0, HISTORY_TURN_CHARS)]),
    integrations,
    shadow ?? null,
  ]);
}

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

/** The text parts of a message, joined by newlines; `""` for system and tool messages. */
function messageText(message: LanguageModelV3Message): string {
  if (message.role !== "user" && message.role !== "assistant") return "";
  if (!Array.isArray(message.content)) return "";
  const texts: string[] = [];
  for (const part of message.content) {
    if (part && part.type === "text" && typeof part.text === "string" && part.text.length > 0) {
      texts.push(part.text);
    }
  }
  return texts.join("\n");
}

/**
 * Inserts the block into the prompt: appended (after a blank line) to the last system message of the leading run of
 * system messages, so it follows the host's static instructions (which keeps provider prefix caches warm), or as a
 * new first system message when the prompt starts with no system message. Never after a user message: some
 * providers (Google) reject system messages that do not lead the conversation.
 */
export function insertGroundingBlock(prompt: LanguageModelV3Prompt, block: string): LanguageModelV3Prompt {
  let lastLeadingSystem = -1;
  while (prompt[lastLeadingSystem + 1]?.role === "system") lastLeadingSystem++;
  if (lastLeadingSystem < 0) return [{ role: "system", content: block }, ...prompt];
  const system = prompt[lastLeadingSystem] as Extract<LanguageModelV3Message, { role: "system" }>;
  const content =
    typeof system.content === "string" && system.content.length > 0 ? `${system.content}\n\n${block}` : block;
  const copy = prompt.slice();
  copy[lastLeadingSystem] = { ...system, content };
  return copy;
}

function toProviderMetadata(grounding: StepGrounding): GroundingProviderMetadata {
  const { metadata, ephemeralContext } = grounding.outcome;
  const result: GroundingProviderMetadata = {
    retrievalMode: "lexical",
    selectedIds: Array.isArray(metadata.selectedIds) ? metadata.selectedIds.slice() : [],
    expandedIds: Array.isArray(metadata.expandedIds) ? metadata.expandedIds.slice() : [],
    candidateCount: metadata.candidateCount ?? 0,
    contextTokens: metadata.contextTokens ?? 0,
    truncated: metadata.truncated === true,
    durationMs: metadata.durationMs ?? 0,
    citations: (ephemeralContext?.citations ?? []).map((citation) =>
      citationMarker(citation.id, citation.version),
    ),
    grounded: ephemeralContext !== null && ephemeralContext !== undefined,
    reused: grounding.reused,
  };
  // providerMetadata must be JSON: optional fields are left out rather than set to undefined.
  if (metadata.confidence !== undefined) result.confidence = metadata.confidence;
  if (metadata.failureReason !== undefined) result.failureReason = metadata.failureReason;
  if (metadata.shadow === true) {
    result.shadow = true;
    result.shadowCitations = (grounding.outcome.shadowContext?.citations ?? []).map((citation) =>
      citationMarker(citation.id, citation.version),
    );
  }
  return result;
}

function withMetadata(
  providerMetadata: SharedV3ProviderMetadata | undefined,
  key: string,
  grounding: StepGrounding,
): SharedV3ProviderMetadata {
  return { ...providerMetadata, [key]: toProviderMetadata(grounding) };
}

/** A stream transform that adds the grounding metadata to the `finish` part and passes every other part through. */
function finishWithMetadata(
  key: string,
  grounding: StepGrounding,
): TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart> {
  return new TransformStream({
    transform(part, controller) {
      if (part.type === "finish") {
        controller.enqueue({
          ...part,
          providerMetadata: withMetadata(part.providerMetadata, key, grounding),
        });
      } else {
        controller.enqueue(part);
      }
    },
  });
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
