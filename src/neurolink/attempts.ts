/**
 * One provider attempt of a call: a `generateText` run, or a `streamText` run read up to its first content chunk.
 *
 * Every attempt has its own AbortController, linked to the caller's signal, so a stalled or timed-out attempt can
 * be cancelled without cancelling the call. Model implementations are free to ignore abort signals (the AI SDK's
 * own mock does), so each wait is also raced against the attempt's signal: a cancelled attempt always settles.
 *
 * @module
 */

import type { generateText, LanguageModelUsage, ModelMessage, streamText, TextStreamPart } from "ai";
import { importPeerDependency, PEER_DEPENDENCY_RANGES } from "../peerDependency.js";
import {
  AttemptTimeoutError,
  EmptyOutputError,
  FirstContentTimeoutError,
  GenerateTimeoutError,
  StreamIdleTimeoutError,
  StreamInterruptedError,
} from "./errors.js";
import type { ResolvedModel } from "./providers.js";
import { startDeadline } from "./timers.js";
import type { TokenUsage } from "./types.js";

/** The AI SDK functions an attempt calls. */
export type AiSdkFunctions = { generateText: typeof generateText; streamText: typeof streamText };

let aiSdk: Promise<AiSdkFunctions> | undefined;

/**
 * Loads the AI SDK (`ai`, an optional peer) on the first call rather than when `lexground/neurolink` is imported,
 * so a missing `ai` is a {@link MissingPeerDependencyError} naming it instead of Node's bare "Cannot find package"
 * while it links the modules. A failed load is not cached: installing `ai` later works without a restart.
 */
export function loadAiSdk(): Promise<AiSdkFunctions> {
  aiSdk ??= importPeerDependency(
    { packageName: "ai", versionRange: PEER_DEPENDENCY_RANGES.ai, feature: "lexground/neurolink" },
    () => import("ai"),
  ).then(
    (module) => ({ generateText: module.generateText, streamText: module.streamText }),
    (error: unknown) => {
      aiSdk = undefined;
      throw error;
    },
  );
  return aiSdk;
}

/** The provider-independent part of a call, built once per call and shared by every attempt. */
export type PreparedRequest = {
  /** Final system prompt (caller's prompt plus the knowledge block), or undefined. */
  system: string | undefined;
  /** History then the current user message. */
  messages: ModelMessage[];
  temperature?: number;
  maxOutputTokens?: number;
  topP?: number;
  topK?: number;
  stopSequences?: string[];
  seed?: number;
  maxRetries: number;
  providerOptions?: Record<string, Record<string, unknown>>;
  headers?: Record<string, string>;
};

/** Outcome of a successful generate attempt. */
export type GenerateAttemptResult = {
  text: string;
  usage: TokenUsage | undefined;
  finishReason: string | undefined;
};

function noop(): void {}

/** Rejects with the signal's reason as soon as it aborts, whatever the wrapped promise does. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(noop);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** An attempt controller that follows the caller's signal; `release()` detaches it. */
function linkedController(callerSignal: AbortSignal | undefined): {
  controller: AbortController;
  release: () => void;
} {
  const controller = new AbortController();
  if (!callerSignal) return { controller, release: noop };
  if (callerSignal.aborted) {
    controller.abort(callerSignal.reason);
    return { controller, release: noop };
  }
  const follow = (): void => controller.abort(callerSignal.reason);
  callerSignal.addEventListener("abort", follow, { once: true });
  return { controller, release: () => callerSignal.removeEventListener("abort", follow) };
}

/** Converts AI SDK usage to NeuroLink's `{input, output, total}`; undefined when the provider reported none. */
export function toTokenUsage(usage: LanguageModelUsage | undefined): TokenUsage | undefined {
  if (!usage) return undefined;
  const input = usage.inputTokens;
  const output = usage.outputTokens;
  if (input === undefined && output === undefined && usage.totalTokens === undefined) return undefined;
  const inputTokens = input ?? 0;
  const outputTokens = output ?? 0;
  return { input: inputTokens, output: outputTokens, total: usage.totalTokens ?? inputTokens + outputTokens };
}

function callSettings(request: PreparedRequest, target: ResolvedModel, signal: AbortSignal) {
  return {
    model: target.languageModel,
    ...(request.system === undefined ? {} : { system: request.system }),
    messages: request.messages,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.maxOutputTokens === undefined ? {} : { maxOutputTokens: request.maxOutputTokens }),
    ...(request.topP === undefined ? {} : { topP: request.topP }),
    ...(request.topK === undefined ? {} : { topK: request.topK }),
    ...(request.stopSequences === undefined ? {} : { stopSequences: request.stopSequences }),
    ...(request.seed === undefined ? {} : { seed: request.seed }),
    ...(request.providerOptions === undefined
      ? {}
      : {
          providerOptions: request.providerOptions as Parameters<typeof generateText>[0]["providerOptions"],
        }),
    ...(request.headers === undefined ? {} : { headers: request.headers }),
    maxRetries: request.maxRetries,
    abortSignal: signal,
  };
}

/**
 * Runs one generate attempt with its deadlines: `generateTimeoutMs` (the default deadline of a generate attempt,
 * {@link GenerateTimeoutError}) and the call's optional `timeout` ({@link AttemptTimeoutError}); the first to pass
 * aborts the request.
 */
export async function runGenerateAttempt(
  target: ResolvedModel,
  request: PreparedRequest,
  options: { callerSignal?: AbortSignal; timeoutMs?: number; generateTimeoutMs?: number },
): Promise<GenerateAttemptResult> {
  const { controller, release } = linkedController(options.callerSignal);
  const timer = startDeadline(options.timeoutMs, (ms) => controller.abort(new AttemptTimeoutError(ms)));
  const generateTimer = startDeadline(options.generateTimeoutMs, (ms) =>
    controller.abort(new GenerateTimeoutError(ms)),
  );
  try {
    const { generateText } = await loadAiSdk();
    const result = await raceAbort(
      generateText(callSettings(request, target, controller.signal) as Parameters<typeof generateText>[0]),
      controller.signal,
    );
    return {
      text: result.text,
      usage: toTokenUsage(result.totalUsage ?? result.usage),
      finishReason: result.finishReason,
    };
  } catch (error) {
    // The SDK may surface our own timeout as a generic abort; report the reason we aborted with.
    if (controller.signal.aborted && !options.callerSignal?.aborted) throw controller.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    clearTimeout(generateTimer);
    release();
  }
}

type StreamPart = TextStreamPart<Record<string, never>>;

/** A stream attempt that has produced its first content chunk. */
export type OpenedStream = {
  target: ResolvedModel;
  firstText: string;
  /**
   * Yields the remaining text deltas. Throws {@link StreamInterruptedError} when the provider fails after the
   * first chunk, or the caller's abort reason when the caller aborts. Stopping iteration early cancels the attempt.
   */
  rest: (alreadySent: () => string) => AsyncGenerator<string, void, undefined>;
  /** Finish reason and usage, known after `rest` completes. */
  readonly final: { finishReason: string | undefined; usage: TokenUsage | undefined };
  /** Cancels the attempt (idempotent). */
  cancel: () => void;
};

/**
 * Starts a `streamText` attempt and reads it until the first non-empty text delta. Rejects (and cancels the
 * attempt) on an error part or thrown error before content, on a stream that ends without content
 * ({@link EmptyOutputError}), on the first-content deadline ({@link FirstContentTimeoutError}), on the attempt
 * deadline ({@link AttemptTimeoutError}), or with the caller's abort reason.
 */
export async function openStreamAttempt(
  target: ResolvedModel,
  request: PreparedRequest,
  options: {
    callerSignal?: AbortSignal;
    firstContentTimeoutMs?: number;
    streamIdleTimeoutMs?: number;
    timeoutMs?: number;
  },
): Promise<OpenedStream> {
  const { controller, release } = linkedController(options.callerSignal);
  const signal = controller.signal;
  const firstContentTimer = startDeadline(options.firstContentTimeoutMs, (ms) =>
    controller.abort(new FirstContentTimeoutError(ms)),
  );
  const attemptTimer = startDeadline(options.timeoutMs, (ms) =>
    controller.abort(new AttemptTimeoutError(ms)),
  );
  const final: { finishReason: string | undefined; usage: TokenUsage | undefined } = {
    finishReason: undefined,
    usage: undefined,
  };
  let iterator: AsyncIterator<StreamPart> | undefined;
  let settled = false;
  const cleanup = (): void => {
    clearTimeout(firstContentTimer);
    clearTimeout(attemptTimer);
    release();
  };
  const cancel = (): void => {
    if (settled) return;
    settled = true;
    if (!signal.aborted) controller.abort(new Error("stream attempt cancelled"));
    cleanup();
    // Closing the source lets the SDK release the HTTP response; a stalled source may never answer, so no await.
    iterator?.return?.().catch(noop);
  };
  /** Our own abort (timeouts) is reported by its reason; the caller's abort by the caller's reason. */
  const abortReason = (): unknown => signal.reason;
  const record = (part: StreamPart): void => {
    if (part.type === "finish") {
      final.finishReason = part.finishReason;
      final.usage = toTokenUsage(part.totalUsage);
    }
  };

  try {
    const { streamText } = await loadAiSdk();
    const result = streamText({
      ...(callSettings(request, target, signal) as Parameters<typeof streamText>[0]),
      // Errors are handled from the stream parts; the default handler would also print them.
      onError: noop,
    });
    iterator = (result.fullStream as AsyncIterable<StreamPart>)[Symbol.asyncIterator]();
    let firstText: string | undefined;
    while (firstText === undefined) {
      const next = await raceAbort(iterator.next(), signal);
      if (next.done) throw new EmptyOutputError(final.finishReason);
      const part = next.value;
      if (part.type === "text-delta") {
        if (part.text.length > 0) firstText = part.text;
      } else if (part.type === "error") {
        throw part.error;
      } else if (part.type === "abort") {
        throw abortReason() ?? new Error("stream aborted");
      } else {
        record(part);
      }
    }
    clearTimeout(firstContentTimer);
    const openedIterator = iterator;
    const interruption = (error: unknown, alreadySent: () => string): unknown => {
      if (options.callerSignal?.aborted) return options.callerSignal.reason;
      return new StreamInterruptedError({
        provider: target.provider,
        model: target.model,
        partialContent: alreadySent(),
        cause: error,
      });
    };
    async function* rest(alreadySent: () => string): AsyncGenerator<string, void, undefined> {
      let completed = false;
      try {
        while (true) {
          let next: IteratorResult<StreamPart>;
          // The silence is timed only while we wait on the provider, not while the host holds the stream unread.
          const idleTimer = startDeadline(options.streamIdleTimeoutMs, (ms) =>
            controller.abort(new StreamIdleTimeoutError(ms)),
          );
          try {
            next = await raceAbort(openedIterator.next(), signal);
          } catch (error) {
            throw interruption(error, alreadySent);
          } finally {
            clearTimeout(idleTimer);
          }
          if (next.done) break;
          const part = next.value;
          if (part.type === "text-delta") {
            if (part.text.length > 0) yield part.text;
          } else if (part.type === "error") {
            throw interruption(part.error, alreadySent);
          } else if (part.type === "abort") {
            throw interruption(abortReason() ?? new Error("stream aborted"), alreadySent);
          } else {
            record(part);
          }
        }
        completed = true;
      } finally {
        if (completed) {
          settled = true;
          cleanup();
        } else {
          cancel();
        }
      }
    }
    return { target, firstText, rest, final, cancel };
  } catch (error) {
    // Decided before cancel(), which aborts the signal itself.
    const cancelledByUs = signal.aborted && !options.callerSignal?.aborted;
    const reason = abortReason();
    cancel();
    if (options.callerSignal?.aborted) throw options.callerSignal.reason;
    if (cancelledByUs) throw reason;
    throw error;
  }
}
