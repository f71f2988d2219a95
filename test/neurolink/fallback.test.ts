/**
 * Fallback with grounding: each fallback path reuses the one knowledge block, grounding failures fail open and
 * never trigger a fallback, and the orchestration rules (checklist rows 20-25): one retrieval per turn, the same prompt for every attempt, no fallback after content or on
 * abort, stalls cut by a first-content deadline, one aggregated error when everything fails.
 */
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { MockLanguageModelV3, MockProviderV3 } from "ai/test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { KnowledgeGroundingOutcome } from "../../src/index.js";
import {
  AllAttemptsFailedError,
  AttemptTimeoutError,
  DynamicArgumentError,
  EmptyOutputError,
  FirstContentTimeoutError,
  type GenerateOptions,
  GenerateTimeoutError,
  NeuroLink,
  NeuroLinkError,
  type NeurolinkConstructorConfig,
  ProviderCallError,
  ProviderNotConfiguredError,
  StreamAbandonedError,
  StreamIdleTimeoutError,
  StreamInterruptedError,
} from "../../src/neurolink/index.js";
import { GROUNDED_QUERY, recordingLogger, SCOPE, SOURCES } from "./support/fixtures.js";
import { expectNoLeakedHandles } from "./support/handles.js";
import {
  answeringModel,
  drain,
  drainUntilError,
  emptyStreamModel,
  errorPartModel,
  failsAfterContentModel,
  gatedStreamModel,
  generateResult,
  httpError,
  stallingModel,
  systemOf,
  throwingModel,
} from "./support/models.js";

expectNoLeakedHandles();

type EngineHandle = { ground: (...args: unknown[]) => Promise<KnowledgeGroundingOutcome> };

function groundedClient(extra: Partial<NeurolinkConstructorConfig> = {}) {
  const neurolink = new NeuroLink({
    knowledgeGrounding: { enabled: true, sources: SOURCES },
    logger: recordingLogger(),
    env: {},
    ...extra,
  });
  const engine = (neurolink as unknown as { knowledgeGroundingEngine: EngineHandle })
    .knowledgeGroundingEngine;
  const outcomes: KnowledgeGroundingOutcome[] = [];
  const original = engine.ground.bind(engine);
  const ground = vi.spyOn(engine, "ground").mockImplementation(async (...args: unknown[]) => {
    const outcome = await original(...args);
    outcomes.push(outcome);
    return outcome;
  });
  return { neurolink, ground, outcomes };
}

const GROUNDED: Pick<
  GenerateOptions,
  "input" | "systemPrompt" | "useKnowledgeGrounding" | "knowledgeContext"
> = {
  input: { text: GROUNDED_QUERY },
  systemPrompt: "You are support.",
  useKnowledgeGrounding: true,
  knowledgeContext: SCOPE,
};

/** Every recorded call got the same system prompt: the caller's prompt plus the block, once. */
function expectSameGroundedPrompt(calls: LanguageModelV3CallOptions[], block: string | undefined): void {
  expect(block).toBeDefined();
  expect(calls.length).toBeGreaterThan(0);
  for (const call of calls) {
    const system = systemOf(call) ?? "";
    expect(system).toBe(`You are support.\n\n${block}`);
    expect(system.split("<knowledge_context>").length - 1).toBe(1);
  }
}

function timeouts(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === "Timeout").length;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("every fallback path reuses the one knowledge block", () => {
  it("stream creation fallback (the provider throws when the stream is created)", async () => {
    const { neurolink, ground, outcomes } = groundedClient();
    const failing = throwingModel(httpError(500, "upstream exploded"));
    const backup = answeringModel("backup answer", { modelId: "backup" });
    const fallbacks: unknown[] = [];
    neurolink.on("model:fallback", (event) => fallbacks.push(event));
    const result = await neurolink.stream({ ...GROUNDED, model: failing, modelChain: [backup] });
    expect(await drain(result.stream)).toBe("backup answer");
    expect(result.model).toBe("backup");
    expect(result.metadata.fallback).toBe(true);
    expect(ground).toHaveBeenCalledTimes(1);
    expectSameGroundedPrompt(
      [...failing.doStreamCalls, ...backup.doStreamCalls],
      outcomes[0]?.ephemeralContext?.content,
    );
    expect(result.attempts.map((attempt) => [attempt.outcome, attempt.phase])).toEqual([
      ["failure", "before-first-content"],
      ["success", undefined],
    ]);
    expect(fallbacks).toEqual([
      {
        from: { provider: "mock", model: "throwing" },
        to: { provider: "mock", model: "backup" },
        error: expect.objectContaining({ message: "upstream exploded" }),
        attempt: 2,
      },
    ]);
    expect(result.knowledge).toEqual(outcomes[0]?.metadata);
  });

  it("pre-first-chunk fallback (an error part arrives before any content)", async () => {
    const { neurolink, ground, outcomes } = groundedClient();
    const failing = errorPartModel(httpError(429, "rate limited"));
    const backup = answeringModel("second", { modelId: "backup" });
    const result = await neurolink.stream({ ...GROUNDED, model: failing, modelChain: [backup] });
    expect(await drain(result.stream)).toBe("second");
    expect(ground).toHaveBeenCalledTimes(1);
    expectSameGroundedPrompt(
      [...failing.doStreamCalls, ...backup.doStreamCalls],
      outcomes[0]?.ephemeralContext?.content,
    );
    expect(result.attempts[0]?.errorMessage).toBe("rate limited");
  });

  it("model pool member fallback (the first member fails; the next member answers)", async () => {
    const memberA = throwingModel(httpError(503), "member-a");
    const memberB = answeringModel("pool answer", { modelId: "member-b" });
    const provider = new MockProviderV3({ languageModels: { "member-a": memberA, "member-b": memberB } });
    const { neurolink, ground, outcomes } = groundedClient({
      customProviders: { pool: provider },
      modelPool: {
        members: [
          { provider: "pool", model: "member-a" },
          { provider: "pool", model: "member-b" },
        ],
      },
    });
    const result = await neurolink.generate({ ...GROUNDED });
    expect(result.content).toBe("pool answer");
    expect(result.provider).toBe("pool");
    expect(result.model).toBe("member-b");
    expect(result.attempts.map((attempt) => attempt.source)).toEqual(["model-pool", "model-pool"]);
    expect(ground).toHaveBeenCalledTimes(1);
    expectSameGroundedPrompt(
      [...memberA.doGenerateCalls, ...memberB.doGenerateCalls],
      outcomes[0]?.ephemeralContext?.content,
    );

    // The failed member cools down: the next call starts with member B and does not touch A.
    const second = await neurolink.stream({ ...GROUNDED });
    expect(await drain(second.stream)).toBe("pool answer");
    expect(second.attempts).toHaveLength(1);
    expect(memberA.doStreamCalls).toHaveLength(0);
    expect(ground).toHaveBeenCalledTimes(2);
    expectSameGroundedPrompt(memberB.doStreamCalls, outcomes[1]?.ephemeralContext?.content);
  });

  it("empty-output fallback (a stream finishes without text)", async () => {
    const { neurolink, ground, outcomes } = groundedClient();
    const empty = emptyStreamModel();
    const backup = answeringModel("not empty", { modelId: "backup" });
    const result = await neurolink.stream({ ...GROUNDED, model: empty, modelChain: [backup] });
    expect(await drain(result.stream)).toBe("not empty");
    expect(result.attempts[0]).toMatchObject({ outcome: "failure", phase: "empty-output" });
    expect(EmptyOutputError.isInstance(result.attempts[0]?.error)).toBe(true);
    expect(ground).toHaveBeenCalledTimes(1);
    expectSameGroundedPrompt(
      [...empty.doStreamCalls, ...backup.doStreamCalls],
      outcomes[0]?.ephemeralContext?.content,
    );
  });

  it("generate fallback along a model chain of three, with one retrieval", async () => {
    const { neurolink, ground, outcomes } = groundedClient();
    const first = throwingModel(httpError(500), "first");
    const second = throwingModel(new Error("socket hang up"), "second");
    const third = answeringModel("third time lucky", { modelId: "third" });
    const result = await neurolink.generate({ ...GROUNDED, model: first, modelChain: [second, third] });
    expect(result.content).toBe("third time lucky");
    expect(result.attempts.map((attempt) => attempt.model)).toEqual(["first", "second", "third"]);
    expect(ground).toHaveBeenCalledTimes(1);
    expectSameGroundedPrompt(
      [...first.doGenerateCalls, ...second.doGenerateCalls, ...third.doGenerateCalls],
      outcomes[0]?.ephemeralContext?.content,
    );
    expect(result.knowledge).toEqual(outcomes[0]?.metadata);
  });
});

describe("grounding failures fail open and never cause a provider fallback", () => {
  const primaryAndBackup = () => ({
    primary: answeringModel("primary answer", { modelId: "primary" }),
    backup: answeringModel("backup answer", { modelId: "backup" }),
  });

  it("grounding not configured: skipped, primary answers", async () => {
    const { primary, backup } = primaryAndBackup();
    const neurolink = new NeuroLink({ logger: recordingLogger() });
    const result = await neurolink.generate({ ...GROUNDED, model: primary, modelChain: [backup] });
    expect(result.content).toBe("primary answer");
    expect(result.knowledge).toBeUndefined();
    expect(systemOf(primary.doGenerateCalls[0])).toBe("You are support.");
    expect(backup.doGenerateCalls).toHaveLength(0);
  });

  it("grounding disabled: skipped", async () => {
    const { primary } = primaryAndBackup();
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: false, sources: SOURCES },
      logger: recordingLogger(),
    });
    const result = await neurolink.generate({ ...GROUNDED, model: primary });
    expect(result.knowledge).toBeUndefined();
    expect(systemOf(primary.doGenerateCalls[0])).toBe("You are support.");
  });

  it("SDK-internal utility calls (no opt-in) skip grounding", async () => {
    const { neurolink, ground } = groundedClient();
    const { primary } = primaryAndBackup();
    const result = await neurolink.generate({ input: { text: GROUNDED_QUERY }, model: primary });
    expect(result.knowledge).toBeUndefined();
    expect(ground).not.toHaveBeenCalled();
  });

  it("query missing (empty input text): skipped", async () => {
    const { neurolink, ground } = groundedClient();
    const { primary } = primaryAndBackup();
    const result = await neurolink.generate({ ...GROUNDED, input: { text: "" }, model: primary });
    expect(result.knowledge).toBeUndefined();
    expect(ground).not.toHaveBeenCalled();
  });

  it("sources missing: no engine, status null, call ungrounded", async () => {
    const { primary } = primaryAndBackup();
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: [] },
      logger: recordingLogger(),
    });
    expect(neurolink.getKnowledgeStatus()).toBeNull();
    expect((await neurolink.generate({ ...GROUNDED, model: primary })).knowledge).toBeUndefined();
  });

  it("validation errors: validation-failed metadata, no block, no fallback", async () => {
    const { primary, backup } = primaryAndBackup();
    const neurolink = new NeuroLink({
      knowledgeGrounding: {
        enabled: true,
        sources: [
          { id: "bad", entries: [{ id: "", title: "t", summary: "s", domain: "d", integrations: [] }] },
        ],
      },
      logger: recordingLogger(),
    });
    const result = await neurolink.generate({ ...GROUNDED, model: primary, modelChain: [backup] });
    expect(result.knowledge?.failureReason).toBe("validation-failed");
    expect(result.attempts).toHaveLength(1);
    expect(backup.doGenerateCalls).toHaveLength(0);
  });

  it("no retrieval match: continues without a block", async () => {
    const { neurolink } = groundedClient();
    const { primary, backup } = primaryAndBackup();
    const result = await neurolink.generate({
      ...GROUNDED,
      input: { text: "xyzzy quux" },
      model: primary,
      modelChain: [backup],
    });
    expect(result.knowledge?.confidence).toBe("none");
    expect(systemOf(primary.doGenerateCalls[0])).toBe("You are support.");
    expect(backup.doGenerateCalls).toHaveLength(0);
  });

  it("context budget fits no entry: continues without a block", async () => {
    const { primary } = primaryAndBackup();
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: SOURCES, context: { maxTokens: 1 } },
      logger: recordingLogger(),
    });
    const result = await neurolink.generate({ ...GROUNDED, model: primary });
    expect(result.knowledge?.selectedIds.length).toBeGreaterThan(0);
    expect(result.knowledge?.contextTokens).toBe(0);
    expect(systemOf(primary.doGenerateCalls[0])).toBe("You are support.");
  });

  it("unexpected retrieval error: ungrounded, no fallback", async () => {
    const { neurolink } = groundedClient();
    const engine = (neurolink as unknown as { knowledgeGroundingEngine: EngineHandle })
      .knowledgeGroundingEngine;
    vi.spyOn(engine, "ground").mockImplementation(() => {
      throw new RangeError("synchronous explosion");
    });
    const { primary, backup } = primaryAndBackup();
    const result = await neurolink.stream({ ...GROUNDED, model: primary, modelChain: [backup] });
    expect(await drain(result.stream)).toBe("primary answer");
    expect(result.knowledge).toBeUndefined();
    expect(result.attempts).toHaveLength(1);
    expect(systemOf(primary.doStreamCalls[0])).toBe("You are support.");
  });
});

describe("orchestration rules", () => {
  it("no fallback after content: the stream ends with StreamInterruptedError, answers are never spliced", async () => {
    const { neurolink, ground } = groundedClient();
    const partial = failsAfterContentModel(["Half an ", "answer"], httpError(502, "connection reset"));
    const backup = answeringModel("other answer", { modelId: "backup" });
    const result = await neurolink.stream({
      ...GROUNDED,
      model: partial,
      modelChain: [backup],
      context: { sessionId: "s-partial" },
    });
    const { text: received, thrown } = await drainUntilError(result.stream);
    expect(received).toBe("Half an answer");
    expect(StreamInterruptedError.isInstance(thrown)).toBe(true);
    expect((thrown as StreamInterruptedError).partialContent).toBe("Half an answer");
    expect(((thrown as StreamInterruptedError).cause as Error).message).toBe("connection reset");
    await expect(result.result).rejects.toBe(thrown);
    expect(backup.doStreamCalls).toHaveLength(0);
    expect(ground).toHaveBeenCalledTimes(1);
    // No partial answer is written to memory (checklist row 25).
    expect(await neurolink.getConversationHistory({ sessionId: "s-partial" })).toEqual([]);
  });

  it("all attempts failing gives one error listing every attempt, and nothing is stored", async () => {
    const { neurolink, ground } = groundedClient();
    const a = throwingModel(httpError(500, "a failed"), "a");
    const b = errorPartModel(new Error("b failed"), "b");
    const c = emptyStreamModel("c");
    const error = await neurolink
      .stream({ ...GROUNDED, model: a, modelChain: [b, c], context: { sessionId: "s-all" } })
      .catch((caught: unknown) => caught);
    expect(AllAttemptsFailedError.isInstance(error)).toBe(true);
    const aggregated = error as AllAttemptsFailedError;
    expect(aggregated.code).toBe("ALL_ATTEMPTS_FAILED");
    expect(
      aggregated.attempts.map((attempt) => [attempt.model, attempt.phase, attempt.errorMessage]),
    ).toEqual([
      ["a", "before-first-content", "a failed"],
      ["b", "before-first-content", "b failed"],
      ["c", "empty-output", "The stream finished without content (finish reason: stop)"],
    ]);
    expect(aggregated.message).toContain("1. mock/a");
    expect(aggregated.message).toContain("3. mock/c");
    expect(ground).toHaveBeenCalledTimes(1);
    expect(await neurolink.getConversationHistory({ sessionId: "s-all" })).toEqual([]);
  });

  it("a single failed attempt rejects with ProviderCallError, the provider error as cause", async () => {
    const { neurolink } = groundedClient();
    const original = httpError(401, "bad key");
    const error = await neurolink
      .generate({ ...GROUNDED, model: throwingModel(original) })
      .catch((caught: unknown) => caught);
    expect(ProviderCallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: "PROVIDER_ERROR",
      provider: "mock",
      model: "throwing",
      phase: "generate",
      statusCode: 401,
      cause: original,
    });
    // A plain object (not an Error) in a stream's error part is wrapped the same way.
    const plain = { error: { message: "overloaded", type: "server_error" } };
    const streamed = await neurolink
      .stream({ ...GROUNDED, model: errorPartModel(plain) })
      .catch((caught: unknown) => caught);
    expect(streamed).toBeInstanceOf(Error);
    expect(streamed).toMatchObject({ code: "PROVIDER_ERROR", phase: "before-first-content", cause: plain });
    // Failures that are already ours keep their own class and code.
    const timedOut = await neurolink
      .generate({ ...GROUNDED, model: stallingModel().model, timeout: 30 })
      .catch((caught: unknown) => caught);
    expect(AttemptTimeoutError.isInstance(timedOut)).toBe(true);
  });

  it("every other rejection is typed too: failing dynamic arguments, unreadable options, malformed chains", async () => {
    const { neurolink } = groundedClient();
    const hostFailure = new Error("prompt service down");
    const dynamic = await neurolink
      .generate({
        ...GROUNDED,
        model: answeringModel("unused"),
        systemPrompt: async () => {
          throw hostFailure;
        },
      })
      .catch((caught: unknown) => caught);
    expect(DynamicArgumentError.isInstance(dynamic)).toBe(true);
    expect(dynamic).toMatchObject({
      code: "DYNAMIC_ARGUMENT_FAILED",
      path: "systemPrompt",
      cause: hostFailure,
    });

    const unreadable = Object.defineProperty(
      { ...GROUNDED, model: answeringModel("unused") },
      "temperature",
      {
        enumerable: true,
        get() {
          throw new TypeError("getter exploded");
        },
      },
    );
    await expect(neurolink.stream(unreadable)).rejects.toMatchObject({
      code: "INVALID_OPTIONS",
      path: "options",
    });
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    await expect(neurolink.generate(revoked.proxy as GenerateOptions)).rejects.toSatisfy(
      NeuroLinkError.isInstance,
    );

    await expect(
      neurolink.generate({
        ...GROUNDED,
        model: answeringModel("unused"),
        modelChain: [null as unknown as string],
      }),
    ).rejects.toMatchObject({ code: "INVALID_OPTIONS", path: "modelChain[0]" });
  });

  it("a caller abort never falls back (generate)", async () => {
    const { neurolink } = groundedClient();
    const { model } = stallingModel();
    const backup = answeringModel("should not run", { modelId: "backup" });
    const controller = new AbortController();
    const pending = neurolink.generate({
      ...GROUNDED,
      model,
      modelChain: [backup],
      abortSignal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error("user pressed stop")), 20);
    await expect(pending).rejects.toThrow("user pressed stop");
    expect(backup.doGenerateCalls).toHaveLength(0);
  });

  it("a caller abort never falls back (stream, before and after first content)", async () => {
    const { neurolink } = groundedClient();
    const stalled = stallingModel();
    const backup = answeringModel("should not run", { modelId: "backup" });
    const before = new AbortController();
    const pending = neurolink.stream({
      ...GROUNDED,
      model: stalled.model,
      modelChain: [backup],
      abortSignal: before.signal,
    });
    setTimeout(() => before.abort(), 20);
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    expect(backup.doStreamCalls).toHaveLength(0);

    const gated = gatedStreamModel("first ", ["never"]);
    const during = new AbortController();
    const result = await neurolink.stream({
      ...GROUNDED,
      model: gated.model,
      modelChain: [backup],
      abortSignal: during.signal,
    });
    const iterator = result.stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ content: "first " });
    during.abort(new Error("stop now"));
    await expect(iterator.next()).rejects.toThrow("stop now");
    await expect(result.result).rejects.toThrow("stop now");
    gated.release();
    expect(backup.doStreamCalls).toHaveLength(0);
  });

  it("a stalled stream is cut by the first-content deadline, cancelled, and the next target answers", async () => {
    const { neurolink } = groundedClient();
    const before = timeouts();
    const stalled = stallingModel();
    const backup = answeringModel("fresh answer", { modelId: "backup" });
    const result = await neurolink.stream({
      ...GROUNDED,
      model: stalled.model,
      modelChain: [backup],
      firstContentTimeoutMs: 30,
    });
    expect(await drain(result.stream)).toBe("fresh answer");
    expect(FirstContentTimeoutError.isInstance(result.attempts[0]?.error)).toBe(true);
    expect(result.attempts[0]?.phase).toBe("before-first-content");
    await vi.waitFor(() => expect(stalled.state.cancelled).toBe(true));
    expect(timeouts(), JSON.stringify(process.getActiveResourcesInfo())).toBeLessThanOrEqual(before);
  });

  it("a stream that goes silent after content is cut by the idle deadline, without fallback", async () => {
    const { neurolink } = groundedClient();
    const before = timeouts();
    const gated = gatedStreamModel("first ", ["never"]);
    const backup = answeringModel("other answer", { modelId: "backup" });
    const result = await neurolink.stream({
      ...GROUNDED,
      model: gated.model,
      modelChain: [backup],
      streamIdleTimeoutMs: 40,
    });
    const iterator = result.stream[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual({ content: "first " });
    // The host holding the stream unread for longer than the deadline does not count as silence.
    await new Promise((resolve) => setTimeout(resolve, 120));
    const started = performance.now();
    const thrown = await iterator.next().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    expect(StreamInterruptedError.isInstance(thrown)).toBe(true);
    expect((thrown as StreamInterruptedError).partialContent).toBe("first ");
    const cause = (thrown as StreamInterruptedError).cause;
    expect(StreamIdleTimeoutError.isInstance(cause)).toBe(true);
    expect((cause as StreamIdleTimeoutError).timeoutMs).toBe(40);
    await expect(result.result).rejects.toBe(thrown);
    expect(backup.doStreamCalls).toHaveLength(0);
    gated.release();
    expect(timeouts(), JSON.stringify(process.getActiveResourcesInfo())).toBeLessThanOrEqual(before);
  });

  it("a steady stream is not cut by the idle deadline, and 0 disables it", async () => {
    const { neurolink } = groundedClient();
    const before = timeouts();
    for (const streamIdleTimeoutMs of [5_000, 0]) {
      const gated = gatedStreamModel("first ", ["second ", "third"]);
      const result = await neurolink.stream({ ...GROUNDED, model: gated.model, streamIdleTimeoutMs });
      setTimeout(() => gated.release(), 20);
      expect(await drain(result.stream)).toBe("first second third");
    }
    expect(timeouts(), JSON.stringify(process.getActiveResourcesInfo())).toBeLessThanOrEqual(before);
  });

  it("a wedged generate is cut by the per-attempt timeout and falls back", async () => {
    const { neurolink } = groundedClient();
    const before = timeouts();
    const stalled = stallingModel();
    const backup = answeringModel("on time", { modelId: "backup" });
    const result = await neurolink.generate({
      ...GROUNDED,
      model: stalled.model,
      modelChain: [backup],
      timeout: 30,
    });
    expect(result.content).toBe("on time");
    expect(stalled.state.cancelled).toBe(true);
    expect(AttemptTimeoutError.isInstance(result.attempts[0]?.error)).toBe(true);
    expect(timeouts(), JSON.stringify(process.getActiveResourcesInfo())).toBeLessThanOrEqual(before);
  });

  it("generate has a default deadline of 120 s per attempt: a wedged provider is cancelled and the call rejects typed", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const neurolink = new NeuroLink({ logger: recordingLogger(), env: {} });
      const stalled = stallingModel();
      const pending = neurolink
        .generate({ input: { text: "hello" }, model: stalled.model })
        .catch((caught: unknown) => caught);
      await vi.advanceTimersByTimeAsync(119_999);
      expect(stalled.state.cancelled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const error = await pending;
      expect(GenerateTimeoutError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: "GENERATE_TIMEOUT", timeoutMs: 120_000 });
      expect(stalled.state.cancelled).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("generateTimeoutMs: per instance, overridden per call, 0 disables, duration strings accepted", async () => {
    const late = new MockLanguageModelV3({
      provider: "mock",
      modelId: "late",
      doGenerate: async () => {
        await new Promise((resolve) => setTimeout(resolve, 150));
        return generateResult("late but fine");
      },
    });
    const neurolink = new NeuroLink({ logger: recordingLogger(), env: {}, generateTimeoutMs: 40 });
    await expect(neurolink.generate({ input: { text: "q" }, model: late })).rejects.toMatchObject({
      code: "GENERATE_TIMEOUT",
      timeoutMs: 40,
    });
    const unbounded = await neurolink.generate({ input: { text: "q" }, model: late, generateTimeoutMs: 0 });
    expect(unbounded.content).toBe("late but fine");
    const generous = await neurolink.generate({
      input: { text: "q" },
      model: late,
      generateTimeoutMs: "10s" as never,
    });
    expect(generous.content).toBe("late but fine");
    await expect(
      neurolink.generate({ input: { text: "q" }, model: late, generateTimeoutMs: -1 }),
    ).rejects.toMatchObject({ code: "INVALID_OPTIONS", path: "generateTimeoutMs" });
    // Streams are not affected: they have their own deadlines.
    const streamed = await neurolink.stream({ input: { text: "q" }, model: answeringModel("streamed") });
    expect(await drain(streamed.stream)).toBe("streamed");
  });

  it("providerFallback is asked when configured targets run out; null stops; never on abort", async () => {
    const backup = answeringModel("from callback", { modelId: "cb-model" });
    const provider = new MockProviderV3({ languageModels: { "cb-model": backup } });
    const { neurolink } = groundedClient({ customProviders: { spare: provider } });
    const primaryError = httpError(500, "primary down");
    const providerFallback = vi.fn(async (_error: unknown) => ({ provider: "spare", model: "cb-model" }));
    const result = await neurolink.generate({
      ...GROUNDED,
      model: throwingModel(primaryError),
      providerFallback,
    });
    expect(result.content).toBe("from callback");
    expect(providerFallback).toHaveBeenCalledWith(primaryError);
    expect(result.attempts.map((attempt) => attempt.source)).toEqual(["primary", "provider-fallback"]);

    const giveUp = vi.fn(async () => null);
    await expect(
      neurolink.generate({ ...GROUNDED, model: throwingModel(primaryError), providerFallback: giveUp }),
    ).rejects.toMatchObject({ code: "PROVIDER_ERROR", cause: primaryError });
    expect(giveUp).toHaveBeenCalledTimes(1);

    const never = vi.fn(async () => ({ provider: "spare", model: "cb-model" }));
    const controller = new AbortController();
    const pending = neurolink.generate({
      ...GROUNDED,
      model: stallingModel().model,
      providerFallback: never,
      abortSignal: controller.signal,
    });
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    expect(never).not.toHaveBeenCalled();
  });

  it("maxAttempts bounds a callback that always proposes another target", async () => {
    const failing = throwingModel(httpError(500), "always-failing");
    const provider = new MockProviderV3({ languageModels: { "always-failing": failing } });
    const { neurolink } = groundedClient({ customProviders: { loop: provider }, maxAttempts: 3 });
    const error = await neurolink
      .generate({
        ...GROUNDED,
        model: failing,
        providerFallback: async () => ({ provider: "loop", model: "always-failing" }),
      })
      .catch((caught: unknown) => caught);
    expect(AllAttemptsFailedError.isInstance(error)).toBe(true);
    expect((error as AllAttemptsFailedError).attempts).toHaveLength(3);
  });

  it("model-chain strings name '<provider>/<model>' or a model on the primary provider; fallbackModel adds one", async () => {
    const models = {
      main: throwingModel(httpError(500), "main"),
      sibling: throwingModel(httpError(500), "sibling"),
      other: throwingModel(httpError(500), "other"),
      last: answeringModel("last", { modelId: "last" }),
    };
    const { neurolink } = groundedClient({
      customProviders: {
        alpha: new MockProviderV3({
          languageModels: { main: models.main, sibling: models.sibling, last: models.last },
        }),
        beta: new MockProviderV3({ languageModels: { other: models.other } }),
      },
    });
    const result = await neurolink.generate({
      ...GROUNDED,
      provider: "alpha",
      model: "main",
      modelChain: ["sibling", "beta/other"],
      fallbackModel: "last",
    });
    expect(result.content).toBe("last");
    expect(
      result.attempts.map((attempt) => `${attempt.source}:${attempt.provider}/${attempt.model}`),
    ).toEqual([
      "primary:alpha/main",
      "model-chain:alpha/sibling",
      "model-chain:beta/other",
      "fallback-option:alpha/last",
    ]);
  });

  it("disableInternalFallback tries the primary target only", async () => {
    const { neurolink } = groundedClient();
    const original = httpError(500, "only one");
    const backup = answeringModel("unused");
    await expect(
      neurolink.generate({
        ...GROUNDED,
        model: throwingModel(original),
        modelChain: [backup],
        disableInternalFallback: true,
      }),
    ).rejects.toMatchObject({ code: "PROVIDER_ERROR", cause: original });
    expect(backup.doGenerateCalls).toHaveLength(0);
  });

  it("an unconfigured fallback target is recorded as a setup failure and skipped", async () => {
    const { neurolink } = groundedClient();
    const backup = answeringModel("configured one", { modelId: "backup" });
    const result = await neurolink.generate({
      ...GROUNDED,
      model: throwingModel(httpError(500)),
      modelChain: [{ provider: "anthropic" }, backup],
    });
    expect(result.content).toBe("configured one");
    expect(result.attempts[1]).toMatchObject({ phase: "setup", provider: "anthropic" });
    expect(ProviderNotConfiguredError.isInstance(result.attempts[1]?.error)).toBe(true);
  });

  it("round-robin pools rotate their starting member per call", async () => {
    const a = answeringModel("from a", { modelId: "a" });
    const b = answeringModel("from b", { modelId: "b" });
    const { neurolink } = groundedClient({
      customProviders: { pool: new MockProviderV3({ languageModels: { a, b } }) },
      modelPool: {
        strategy: "round-robin",
        members: [
          { provider: "pool", model: "a" },
          { provider: "pool", model: "b" },
        ],
      },
    });
    const answers = [];
    for (let index = 0; index < 4; index++) answers.push((await neurolink.generate("hello")).content);
    expect(answers).toEqual(["from a", "from b", "from a", "from b"]);
  });

  it("stopping iteration early cancels the attempt and stores nothing", async () => {
    const { neurolink } = groundedClient();
    const gated = gatedStreamModel("one ", ["two"]);
    const result = await neurolink.stream({
      ...GROUNDED,
      model: gated.model,
      context: { sessionId: "s-early" },
    });
    for await (const chunk of result.stream) {
      expect(chunk.content).toBe("one ");
      break;
    }
    await expect(result.result).rejects.toSatisfy(
      (error: unknown) => StreamAbandonedError.isInstance(error) && error.partialContent === "one ",
    );
    gated.release();
    expect(await neurolink.getConversationHistory({ sessionId: "s-early" })).toEqual([]);
  });

  it("textStream is a string view of the same stream", async () => {
    const { neurolink } = groundedClient();
    const result = await neurolink.stream({
      ...GROUNDED,
      model: answeringModel("a b c", { chunks: ["a ", "b ", "c"] }),
    });
    const parts: string[] = [];
    for await (const text of result.textStream) parts.push(text);
    expect(parts).toEqual(["a ", "b ", "c"]);
    expect((await result.result).usage).toEqual({ input: 10, output: 5, total: 15 });
  });
});
