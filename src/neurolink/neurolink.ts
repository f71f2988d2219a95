/**
 * The NeuroLink-compatible client: grounded `generate` and `stream` over the Vercel AI SDK, with fallback across
 * providers and models, and conversation memory.
 *
 * Per call, in this order (the seed's turn lifecycle):
 * 1. the options are cloned, so nothing reaches the caller's object;
 * 2. `retrieveKnowledgeGrounding` runs once, when the call opts in, with history from `conversationMessages` or
 *    conversation memory;
 * 3. a returned block is appended to `systemPrompt` (a function-valued prompt is wrapped);
 * 4. dynamic arguments are resolved and the request is prepared once;
 * 5. the provider/fallback loop runs every attempt with that same request;
 * 6. `result.knowledge` carries the grounding metadata; the user input and the answer (never the block) are
 *    stored in conversation memory.
 *
 * @module
 */

import type { ModelMessage } from "ai";
import type { KnowledgeGroundingOutcome } from "../types/knowledge.js";
import {
  type OpenedStream,
  openStreamAttempt,
  type PreparedRequest,
  runGenerateAttempt,
} from "./attempts.js";
import {
  type CallState,
  contentText,
  DEFAULT_FIRST_CONTENT_TIMEOUT_MS,
  DEFAULT_GENERATE_TIMEOUT_MS,
  DEFAULT_STREAM_IDLE_TIMEOUT_MS,
  noop,
  parseTimeout,
  requireAiSdk,
  typedRejection,
  validateCallOptions,
} from "./callOptions.js";
import {
  appendKnowledgeGroundingBlockToSystemPrompt,
  cloneOptionsForCallIsolation,
  type ResolvedCallOptions,
  resolveDynamicOptions,
} from "./dynamic.js";
import {
  type AttemptRecord,
  EmptyOutputError,
  errorMessageOf,
  InvalidOptionsError,
  NeuroLinkError,
  StreamAbandonedError,
} from "./errors.js";
import { type AttemptTarget, planAttemptTargets, runWithFallback } from "./fallback.js";
import { NeuroLinkKnowledge } from "./neurolinkKnowledge.js";
import type {
  GenerateOptions,
  GenerateResult,
  NeuroLinkEvents,
  StreamChunk,
  StreamFinalResult,
  StreamOptions,
  StreamResult,
} from "./types.js";

export { DEFAULT_GENERATE_TIMEOUT_MS, parseTimeout } from "./callOptions.js";
export { KNOWLEDGE_HOOK_FAILED_WARNING, KNOWLEDGE_NO_SOURCES_WARNING } from "./neurolinkKnowledge.js";
export { MEMORY_EVICTION_WARNING } from "./neurolinkState.js";

const DEFAULT_MAX_ATTEMPTS = 8;

/**
 * NeuroLink-compatible client with lexical knowledge grounding.
 *
 * @example
 * ```ts
 * const neurolink = new NeuroLink({ knowledgeGrounding: { enabled: true, sources } });
 * const result = await neurolink.generate({
 *   input: { text: "How do I enable the multi-step flow?" },
 *   provider: "openai",
 *   useKnowledgeGrounding: true,
 *   knowledgeContext: { enabledIntegrations: ["integration-a"] },
 * });
 * console.log(result.content, result.knowledge?.selectedIds);
 * ```
 */
export class NeuroLink extends NeuroLinkKnowledge {
  /** Clone, retrieve once, append the block, resolve dynamic arguments, prepare the request once. */
  private async prepareCall(
    optionsOrPrompt: GenerateOptions | StreamOptions | string,
    method: "generate" | "stream",
  ): Promise<{
    options: GenerateOptions | StreamOptions;
    resolved: ResolvedCallOptions;
    grounding: KnowledgeGroundingOutcome | undefined;
    request: PreparedRequest;
  }> {
    if (typeof optionsOrPrompt === "string") {
      // The string shorthand cannot opt in, so it never grounds.
      optionsOrPrompt = { input: { text: optionsOrPrompt } };
    }
    let options: GenerateOptions | StreamOptions;
    try {
      validateCallOptions(optionsOrPrompt, method);
      options = cloneOptionsForCallIsolation(optionsOrPrompt);
    } catch (error) {
      if (NeuroLinkError.isInstance(error)) throw error;
      // A throwing getter or a revoked proxy in the options.
      throw new InvalidOptionsError("options", `could not be read: ${errorMessageOf(error)}`, {
        cause: error,
      });
    }
    const state: CallState = {};
    const grounding = await this.retrieveKnowledgeGrounding(options, () =>
      this.memoryHistory(options, state),
    );
    if (grounding?.ephemeralContext) {
      options = {
        ...options,
        systemPrompt: appendKnowledgeGroundingBlockToSystemPrompt(
          options.systemPrompt,
          grounding.ephemeralContext.content,
        ),
      };
    }
    const resolved = await resolveDynamicOptions(options);
    const history =
      options.conversationMessages !== undefined
        ? options.conversationMessages
        : await this.memoryHistory(options, state);
    const messages: ModelMessage[] = [];
    for (const message of history) {
      if (message?.role !== "user" && message?.role !== "assistant") continue;
      const text = contentText(message.content);
      if (text.length > 0) messages.push({ role: message.role, content: text });
    }
    messages.push({ role: "user", content: resolved.input.text });
    const system =
      typeof resolved.systemPrompt === "string" && resolved.systemPrompt.length > 0
        ? resolved.systemPrompt
        : undefined;
    const request: PreparedRequest = {
      system,
      messages,
      maxRetries: Math.max(0, Math.floor(resolved.maxRetries ?? this.config.maxRetries ?? 0)),
      ...(resolved.temperature === undefined ? {} : { temperature: resolved.temperature }),
      ...(resolved.maxTokens === undefined ? {} : { maxOutputTokens: resolved.maxTokens }),
      ...(resolved.topP === undefined ? {} : { topP: resolved.topP }),
      ...(resolved.topK === undefined ? {} : { topK: resolved.topK }),
      ...(resolved.stopSequences === undefined ? {} : { stopSequences: resolved.stopSequences }),
      ...(resolved.seed === undefined ? {} : { seed: resolved.seed }),
      ...(resolved.providerOptions === undefined ? {} : { providerOptions: resolved.providerOptions }),
      ...(resolved.headers === undefined ? {} : { headers: resolved.headers }),
    };
    return { options, resolved, grounding, request };
  }

  private fallbackHooks(resolved: ResolvedCallOptions) {
    const providerFallback =
      resolved.disableInternalFallback === true
        ? undefined
        : (resolved.providerFallback ?? this.config.providerFallback);
    return {
      resolver: this.resolver,
      targets: planAttemptTargets(resolved, this.config, this.resolver, this.modelPool),
      ...(providerFallback === undefined ? {} : { providerFallback }),
      maxAttempts: Math.max(1, Math.floor(this.config.maxAttempts ?? DEFAULT_MAX_ATTEMPTS)),
      ...(resolved.abortSignal === undefined ? {} : { callerSignal: resolved.abortSignal }),
      onFallback: (event: NeuroLinkEvents["model:fallback"]) => this.emit("model:fallback", event),
      onFailure: (target: AttemptTarget) => {
        if (target.poolIndex !== undefined) this.modelPool?.markFailure(target.poolIndex);
      },
      onSuccess: (target: AttemptTarget) => {
        if (target.poolIndex !== undefined) this.modelPool?.markSuccess(target.poolIndex);
      },
    };
  }

  // ---------------------------------------------------------------- generate

  /**
   * Generates a complete answer. A string is shorthand for `{ input: { text } }` (and never grounds). Falls back
   * to the next target on any error except a caller abort. Rejects only with a {@link NeuroLinkError} (a single
   * failed provider attempt is a `ProviderCallError`, several an `AllAttemptsFailedError`, the provider's error
   * as `cause`), or with the caller's `abortSignal.reason` when the caller aborts.
   */
  async generate(optionsOrPrompt: GenerateOptions | string): Promise<GenerateResult> {
    try {
      return await this.generateTurn(optionsOrPrompt);
    } catch (error) {
      throw typedRejection(error, "generate", optionsOrPrompt);
    }
  }

  private async generateTurn(optionsOrPrompt: GenerateOptions | string): Promise<GenerateResult> {
    const startTime = Date.now();
    await requireAiSdk();
    const { options, resolved, grounding, request } = await this.prepareCall(optionsOrPrompt, "generate");
    const timeoutMs =
      parseTimeout(resolved.timeout, "timeout") ?? parseTimeout(this.config.timeout, "config.timeout");
    const generateTimeoutMs =
      parseTimeout((resolved as GenerateOptions).generateTimeoutMs, "generateTimeoutMs") ??
      parseTimeout(this.config.generateTimeoutMs, "config.generateTimeoutMs") ??
      DEFAULT_GENERATE_TIMEOUT_MS;
    const outcome = await runWithFallback({
      ...this.fallbackHooks(resolved),
      attempt: (target) =>
        runGenerateAttempt(target, request, {
          ...(resolved.abortSignal === undefined ? {} : { callerSignal: resolved.abortSignal }),
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
          generateTimeoutMs,
        }),
      phaseOf: () => "generate",
    });
    const result: GenerateResult = {
      content: outcome.value.text,
      provider: outcome.resolved.provider,
      model: outcome.resolved.model,
      ...(outcome.value.usage === undefined ? {} : { usage: outcome.value.usage }),
      ...(outcome.value.finishReason === undefined ? {} : { finishReason: outcome.value.finishReason }),
      attempts: outcome.attempts,
      responseTime: 0,
    };
    if (grounding) result.knowledge = grounding.metadata;
    const memoryWriteError = await this.storeTurn(options, result.content);
    if (memoryWriteError) result.memoryWriteError = memoryWriteError;
    result.responseTime = Date.now() - startTime;
    return result;
  }

  // ---------------------------------------------------------------- stream

  /**
   * Streams an answer. Resolves once a provider has produced its first content chunk: failures before that
   * (thrown errors, error parts, the first-content deadline, an empty stream) fall back to the next target, so
   * `await stream()` rejects only when every attempt failed. After the first chunk there is no fallback: a
   * failure ends the stream with {@link StreamInterruptedError}. Consume `stream` (or `textStream`) to the end;
   * the turn is stored in memory before iteration completes, and `result` resolves with the final content.
   * Rejections are typed as for {@link NeuroLink.generate}.
   */
  async stream(options: StreamOptions): Promise<StreamResult> {
    try {
      return await this.streamTurn(options);
    } catch (error) {
      throw typedRejection(error, "stream", options);
    }
  }

  private async streamTurn(options: StreamOptions): Promise<StreamResult> {
    const startTime = Date.now();
    await requireAiSdk();
    const prepared = await this.prepareCall(options, "stream");
    const { resolved, grounding, request } = prepared;
    const callOptions = prepared.options;
    const timeoutMs =
      parseTimeout(resolved.timeout, "timeout") ?? parseTimeout(this.config.timeout, "config.timeout");
    const firstContentTimeoutMs =
      parseTimeout((resolved as StreamOptions).firstContentTimeoutMs, "firstContentTimeoutMs") ??
      parseTimeout(this.config.firstContentTimeoutMs, "config.firstContentTimeoutMs") ??
      DEFAULT_FIRST_CONTENT_TIMEOUT_MS;
    const streamIdleTimeoutMs =
      parseTimeout((resolved as StreamOptions).streamIdleTimeoutMs, "streamIdleTimeoutMs") ??
      parseTimeout(this.config.streamIdleTimeoutMs, "config.streamIdleTimeoutMs") ??
      DEFAULT_STREAM_IDLE_TIMEOUT_MS;
    const outcome = await runWithFallback<OpenedStream>({
      ...this.fallbackHooks(resolved),
      attempt: (target) =>
        openStreamAttempt(target, request, {
          ...(resolved.abortSignal === undefined ? {} : { callerSignal: resolved.abortSignal }),
          firstContentTimeoutMs,
          streamIdleTimeoutMs,
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
        }),
      phaseOf: (error) => (EmptyOutputError.isInstance(error) ? "empty-output" : "before-first-content"),
    });
    const opened = outcome.value;
    const attempts: AttemptRecord[] = outcome.attempts;

    let resolveFinal: (value: StreamFinalResult) => void = noop;
    let rejectFinal: (error: unknown) => void = noop;
    const final = new Promise<StreamFinalResult>((resolve, reject) => {
      resolveFinal = resolve;
      rejectFinal = reject;
    });
    // Hosts that only iterate the stream never read `result`; its rejection must not be "unhandled".
    final.catch(noop);

    const produce = async function* (this: NeuroLink): AsyncGenerator<StreamChunk, void, undefined> {
      let content = opened.firstText;
      let completed = false;
      try {
        yield { content: opened.firstText };
        for await (const text of opened.rest(() => content)) {
          content += text;
          yield { content: text };
        }
        completed = true;
      } catch (error) {
        rejectFinal(error);
        throw error;
      } finally {
        if (!completed) {
          opened.cancel();
          // Stopped by the consumer: the turn is incomplete and is not stored.
          rejectFinal(new StreamAbandonedError(content));
        }
      }
      const finalResult: StreamFinalResult = {
        content,
        provider: opened.target.provider,
        model: opened.target.model,
        ...(opened.final.usage === undefined ? {} : { usage: opened.final.usage }),
        ...(opened.final.finishReason === undefined ? {} : { finishReason: opened.final.finishReason }),
        attempts,
        responseTime: 0,
      };
      if (grounding) finalResult.knowledge = grounding.metadata;
      const memoryWriteError = await this.storeTurn(callOptions, content);
      if (memoryWriteError) finalResult.memoryWriteError = memoryWriteError;
      finalResult.responseTime = Date.now() - startTime;
      resolveFinal(finalResult);
    }.bind(this);

    let generator: AsyncGenerator<StreamChunk, void, undefined> | undefined;
    const chunks = (): AsyncGenerator<StreamChunk, void, undefined> => {
      generator ??= produce();
      return generator;
    };
    const stream: AsyncIterable<StreamChunk> = { [Symbol.asyncIterator]: chunks };
    const textStream: AsyncIterable<string> = {
      async *[Symbol.asyncIterator]() {
        for await (const chunk of chunks()) yield chunk.content;
      },
    };
    const result: StreamResult = {
      stream,
      textStream,
      provider: opened.target.provider,
      model: opened.target.model,
      attempts,
      result: final,
      metadata: { fallback: attempts.length > 1, startTime },
    };
    if (grounding) result.knowledge = grounding.metadata;
    return result;
  }
}
