/**
 * The grounding wiring of the client: the constructor, the per-call path, applying the block, the metadata, the
 * orchestration rules, and the original's own wiring cases.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { KnowledgeGroundingOutcome } from "../../src/index.js";
import {
  appendKnowledgeGroundingBlockToSystemPrompt,
  type ChatMessage,
  type GenerateOptions,
  KNOWLEDGE_HOOK_FAILED_WARNING,
  KNOWLEDGE_NO_SOURCES_WARNING,
  KnowledgeNotConfiguredError,
  NeuroLink,
  resolveDynamicOptions,
} from "../../src/neurolink/index.js";
import {
  GROUNDED_QUERY,
  policiesSource,
  recordingLogger,
  SCOPE,
  SOURCES,
  settingsSource,
} from "./support/fixtures.js";
import { answeringModel, drain, systemOf, turnsOf } from "./support/models.js";

type Internals = {
  knowledgeGroundingEngine:
    | { ground: (...args: unknown[]) => Promise<KnowledgeGroundingOutcome> }
    | undefined;
  retrieveKnowledgeGrounding: (options: GenerateOptions) => Promise<KnowledgeGroundingOutcome | undefined>;
  fetchRecentRoutingHistory: (options: GenerateOptions) => Promise<ChatMessage[]>;
};

function internals(neurolink: NeuroLink): Internals {
  return neurolink as unknown as Internals;
}

function grounded(extra: Partial<ConstructorParameters<typeof NeuroLink>[0]> = {}) {
  const logger = recordingLogger();
  const neurolink = new NeuroLink({
    knowledgeGrounding: { enabled: true, sources: SOURCES },
    logger,
    ...extra,
  });
  return { neurolink, logger };
}

/** Spies on the engine's ground() and keeps every outcome it returned. */
function spyGround(neurolink: NeuroLink) {
  const engine = internals(neurolink).knowledgeGroundingEngine;
  if (!engine) throw new Error("no engine");
  const outcomes: KnowledgeGroundingOutcome[] = [];
  const original = engine.ground.bind(engine);
  const spy = vi.spyOn(engine, "ground").mockImplementation(async (...args: unknown[]) => {
    const outcome = await original(...args);
    outcomes.push(outcome);
    return outcome;
  });
  return { spy, outcomes };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("constructor: the knowledge engine and its status", () => {
  it("enabled without sources creates no engine, warns with the exact text, status is null", () => {
    const logger = recordingLogger();
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true } as never,
      logger,
    });
    expect(neurolink.getKnowledgeStatus()).toBeNull();
    expect(logger.warnings).toEqual([[KNOWLEDGE_NO_SOURCES_WARNING]]);
    expect(KNOWLEDGE_NO_SOURCES_WARNING).toBe(
      "[KnowledgeGrounding] enabled but no sources were provided; grounding disabled for this instance",
    );
  });

  it.each([
    ["an empty array", []],
    ["a non-array", { id: "x" }],
    ["null", null],
  ])("enabled with sources as %s warns and creates no engine", (_label, sources) => {
    const logger = recordingLogger();
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: sources as never },
      logger,
    });
    expect(neurolink.getKnowledgeStatus()).toBeNull();
    expect(logger.warnings).toEqual([[KNOWLEDGE_NO_SOURCES_WARNING]]);
  });

  it("the default logger is console.warn", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    new NeuroLink({ knowledgeGrounding: { enabled: true, sources: [] } });
    expect(warn).toHaveBeenCalledWith(KNOWLEDGE_NO_SOURCES_WARNING);
  });

  it("absent or disabled grounding: no engine, no warning", () => {
    const logger = recordingLogger();
    expect(new NeuroLink({ logger }).getKnowledgeStatus()).toBeNull();
    expect(
      new NeuroLink({
        knowledgeGrounding: { enabled: false, sources: SOURCES },
        logger,
      }).getKnowledgeStatus(),
    ).toBeNull();
    expect(logger.warnings).toEqual([]);
  });

  it("enabled with sources exposes the engine status", async () => {
    const { neurolink } = grounded();
    expect(neurolink.getKnowledgeStatus()?.enabled).toBe(true);
    await neurolink.rebuildKnowledge();
    const status = neurolink.getKnowledgeStatus();
    expect(status).toMatchObject({ enabled: true, ready: true, entryCount: 3, lastError: null });
  });

  it("invalid entries in a non-empty array: engine exists, not ready, turns fail open with validation-failed", async () => {
    const logger = recordingLogger();
    const broken = {
      id: "broken",
      version: "1",
      entries: [{ id: "x", title: "", summary: "s", domain: "d", integrations: [] }],
    };
    const neurolink = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: [broken] }, logger });
    const model = answeringModel("fine");
    const result = await neurolink.generate({
      input: { text: "anything" },
      model,
      useKnowledgeGrounding: true,
    });
    const status = neurolink.getKnowledgeStatus();
    expect(status?.ready).toBe(false);
    expect(status?.validationIssues.some((issue) => issue.code === "missing-title")).toBe(true);
    expect(result.content).toBe("fine");
    expect(result.knowledge?.failureReason).toBe("validation-failed");
    expect(systemOf(model.doGenerateCalls[0])).toBeUndefined();
  });
});

describe("retrieveKnowledgeGrounding: when a turn grounds and where its history comes from", () => {
  it("without useKnowledgeGrounding it returns undefined and fetches no history", async () => {
    const { neurolink } = grounded();
    const fetch = vi.spyOn(internals(neurolink), "fetchRecentRoutingHistory");
    const { spy } = spyGround(neurolink);
    const outcome = await internals(neurolink).retrieveKnowledgeGrounding({
      input: { text: GROUNDED_QUERY },
      context: { sessionId: "s1" },
    });
    expect(outcome).toBeUndefined();
    expect(fetch).not.toHaveBeenCalled();
    expect(spy).not.toHaveBeenCalled();
  });

  it.each([
    ["the string 'true'", "true"],
    ["1", 1],
    ["false", false],
  ])("useKnowledgeGrounding %s is not exactly true: skipped", async (_label, flag) => {
    const { neurolink } = grounded();
    const { spy } = spyGround(neurolink);
    const outcome = await internals(neurolink).retrieveKnowledgeGrounding({
      input: { text: GROUNDED_QUERY },
      useKnowledgeGrounding: flag as boolean,
    });
    expect(outcome).toBeUndefined();
    expect(spy).not.toHaveBeenCalled();
  });

  it("an empty query is skipped", async () => {
    const { neurolink } = grounded();
    const { spy } = spyGround(neurolink);
    expect(
      await internals(neurolink).retrieveKnowledgeGrounding({
        input: { text: "" },
        useKnowledgeGrounding: true,
      }),
    ).toBeUndefined();
    expect(spy).not.toHaveBeenCalled();
  });

  it("conversationMessages [] is honoured and history is not fetched", async () => {
    const { neurolink } = grounded();
    const fetch = vi.spyOn(internals(neurolink), "fetchRecentRoutingHistory");
    const outcome = await internals(neurolink).retrieveKnowledgeGrounding({
      input: { text: GROUNDED_QUERY },
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
      conversationMessages: [],
      context: { sessionId: "s1" },
    });
    expect(outcome).toBeDefined();
    expect(fetch).not.toHaveBeenCalled();
  });

  it("conversationMessages undefined fetches history", async () => {
    const { neurolink } = grounded();
    const fetch = vi.spyOn(internals(neurolink), "fetchRecentRoutingHistory");
    const outcome = await internals(neurolink).retrieveKnowledgeGrounding({
      input: { text: GROUNDED_QUERY },
      useKnowledgeGrounding: true,
      context: { sessionId: "s1" },
    });
    expect(outcome).toBeDefined();
    expect(fetch).toHaveBeenCalledTimes(1);
  });

  it("keeps user and assistant messages only, the last 4, non-string content as empty text; passes the scope", async () => {
    const { neurolink } = grounded();
    const { spy } = spyGround(neurolink);
    const conversationMessages: ChatMessage[] = [
      { role: "user", content: "first question" },
      { role: "assistant", content: "first answer" },
      { role: "system", content: "system note" },
      { role: "tool_call", content: "tool" },
      { role: "user", content: [{ type: "text", text: "multimodal" }] },
      { role: "assistant", content: "second answer" },
      { role: "tool_result", content: "result" },
      { role: "user", content: "third question" },
    ];
    await internals(neurolink).retrieveKnowledgeGrounding({
      input: { text: GROUNDED_QUERY },
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
      conversationMessages,
    });
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0]?.[0]).toEqual({
      query: GROUNDED_QUERY,
      recentTurns: [
        { role: "assistant", text: "first answer" },
        { role: "user", text: "" },
        { role: "assistant", text: "second answer" },
        { role: "user", text: "third question" },
      ],
      scope: SCOPE,
    });
  });

  it("a throwing hook fails open: undefined, the exact warning, a grounding:error event", async () => {
    const { neurolink, logger } = grounded();
    const engine = internals(neurolink).knowledgeGroundingEngine;
    if (!engine) throw new Error("no engine");
    vi.spyOn(engine, "ground").mockRejectedValue(new TypeError("boom"));
    const events: unknown[] = [];
    neurolink.on("grounding:error", (event) => events.push(event));
    const model = answeringModel("still answered");
    const result = await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt: "Base",
      useKnowledgeGrounding: true,
    });
    expect(result.content).toBe("still answered");
    expect(result.knowledge).toBeUndefined();
    expect(systemOf(model.doGenerateCalls[0])).toBe("Base");
    expect(logger.warnings[0]?.[0]).toBe(KNOWLEDGE_HOOK_FAILED_WARNING);
    expect(events).toEqual([{ reason: "boom", error: expect.any(TypeError) }]);
  });
});

describe("applying the block to the system prompt", () => {
  it("a string prompt gets the block after a blank line", () => {
    expect(appendKnowledgeGroundingBlockToSystemPrompt("Base prompt", "Knowledge block")).toBe(
      "Base prompt\n\nKnowledge block",
    );
    expect(appendKnowledgeGroundingBlockToSystemPrompt("", "Knowledge block")).toBe("Knowledge block");
    expect(appendKnowledgeGroundingBlockToSystemPrompt(undefined, "Knowledge block")).toBe("Knowledge block");
  });

  it("a dynamic system prompt is wrapped and resolves to prompt + blank line + block", async () => {
    const { neurolink } = grounded();
    const { outcomes } = spyGround(neurolink);
    const model = answeringModel("ok");
    const systemPrompt = vi.fn(async (context: { requestContext: Record<string, unknown> }) => {
      return `You are helping ${String(context.requestContext.userId)}.`;
    });
    await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt,
      dynamicContext: { userId: "user-123" },
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
    });
    const block = outcomes[0]?.ephemeralContext?.content;
    expect(block).toContain("<knowledge_context>");
    expect(systemOf(model.doGenerateCalls[0])).toBe(`You are helping user-123.\n\n${block}`);
    expect(systemPrompt).toHaveBeenCalledTimes(1);

    // The same through resolveDynamicOptions, as the original's test does.
    const wrapped = appendKnowledgeGroundingBlockToSystemPrompt(
      (context) => `You are helping ${String(context.requestContext.userId)}.`,
      "BLOCK",
    );
    const resolved = await resolveDynamicOptions({
      input: { text: "q" },
      systemPrompt: wrapped,
      dynamicContext: { userId: "user-123" },
    });
    expect(resolved.systemPrompt).toBe("You are helping user-123.\n\nBLOCK");
  });

  it("a dynamic prompt resolving to an empty string becomes the block alone", async () => {
    const wrapped = appendKnowledgeGroundingBlockToSystemPrompt(async () => "", "BLOCK");
    expect(typeof wrapped).toBe("function");
    expect((await resolveDynamicOptions({ input: { text: "q" }, systemPrompt: wrapped })).systemPrompt).toBe(
      "BLOCK",
    );
  });

  it("generate: the model sees prompt + block; result.knowledge is the outcome's metadata", async () => {
    const { neurolink } = grounded();
    const { outcomes, spy } = spyGround(neurolink);
    const model = answeringModel("answer");
    const result = await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt: "You are support.",
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
    });
    const outcome = outcomes[0];
    expect(spy).toHaveBeenCalledTimes(1);
    expect(outcome?.ephemeralContext?.content).toContain("Multi-Step Flow");
    expect(systemOf(model.doGenerateCalls[0])).toBe(
      `You are support.\n\n${outcome?.ephemeralContext?.content}`,
    );
    expect(result.knowledge).toEqual(outcome?.metadata);
    expect(result.knowledge?.selectedIds).toContain("settings.multi-step-flow");
    expect(result.knowledge?.confidence).toBe("high");
    expect(result).not.toHaveProperty("retrieval");
  });

  it("generate without a system prompt: the block alone is the system message", async () => {
    const { neurolink } = grounded();
    const { outcomes } = spyGround(neurolink);
    const model = answeringModel("answer");
    await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model,
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
    });
    expect(systemOf(model.doGenerateCalls[0])).toBe(outcomes[0]?.ephemeralContext?.content);
  });

  it("no match: no block, prompt untouched, metadata with confidence none", async () => {
    const { neurolink } = grounded();
    const model = answeringModel("answer");
    const result = await neurolink.generate({
      input: { text: "xyzzy quux nonsense" },
      model,
      systemPrompt: "Base",
      useKnowledgeGrounding: true,
    });
    expect(systemOf(model.doGenerateCalls[0])).toBe("Base");
    expect(result.knowledge).toMatchObject({ confidence: "none", selectedIds: [], candidateCount: 0 });
  });

  it("fail-open timeout: metadata carries the failure reason and the call continues ungrounded", async () => {
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: SOURCES, timeoutMs: 5 },
      logger: recordingLogger(),
    });
    const engine = internals(neurolink).knowledgeGroundingEngine as unknown as { ready: () => Promise<void> };
    vi.spyOn(engine, "ready").mockReturnValue(new Promise<void>(() => {}));
    const events: Array<{ reason: string }> = [];
    neurolink.on("grounding:error", (event) => events.push(event));
    const model = answeringModel("answer");
    const result = await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt: "Base",
      useKnowledgeGrounding: true,
    });
    expect(result.content).toBe("answer");
    expect(result.knowledge?.failureReason).toContain("timed out");
    expect(systemOf(model.doGenerateCalls[0])).toBe("Base");
    expect(events[0]?.reason).toContain("timed out");
  });

  it("calls that do not opt in, and the string shorthand, never ground", async () => {
    const { neurolink } = grounded({ model: answeringModel("plain") });
    const { spy } = spyGround(neurolink);
    const shorthand = await neurolink.generate(GROUNDED_QUERY);
    const omitted = await neurolink.generate({ input: { text: GROUNDED_QUERY } });
    expect(shorthand.content).toBe("plain");
    expect(shorthand.knowledge).toBeUndefined();
    expect(omitted.knowledge).toBeUndefined();
    expect(spy).not.toHaveBeenCalled();
  });

  it("stream: knowledge is set before consumption and the model sees the block", async () => {
    const { neurolink } = grounded();
    const { outcomes } = spyGround(neurolink);
    const model = answeringModel("streamed answer", { chunks: ["streamed ", "answer"] });
    const result = await neurolink.stream({
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt: "Base",
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
    });
    expect(result.knowledge).toEqual(outcomes[0]?.metadata);
    expect(await drain(result.stream)).toBe("streamed answer");
    expect(systemOf(model.doStreamCalls[0])).toBe(`Base\n\n${outcomes[0]?.ephemeralContext?.content}`);
    const final = await result.result;
    expect(final.content).toBe("streamed answer");
    expect(final.knowledge).toEqual(outcomes[0]?.metadata);
  });

  it("the caller's options object is never mutated (generate and stream)", async () => {
    const { neurolink } = grounded();
    const systemPrompt = () => "Dynamic";
    const model = answeringModel("answer");
    const options: GenerateOptions = {
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt,
      useKnowledgeGrounding: true,
      knowledgeContext: { enabledIntegrations: ["integration-a"] },
      conversationMessages: [{ role: "user", content: "earlier" }],
      context: { sessionId: "s-immutable" },
      dynamicContext: { tier: "gold" },
    };
    const deepFreeze = <T>(value: T): T => {
      if (value && typeof value === "object" && !Object.isFrozen(value) && !("doGenerate" in value)) {
        Object.freeze(value);
        for (const inner of Object.values(value)) deepFreeze(inner);
      }
      return value;
    };
    const snapshot = JSON.stringify({ ...options, model: undefined });
    deepFreeze(options);
    await neurolink.generate(options);
    await drain((await neurolink.stream(options)).stream);
    expect(JSON.stringify({ ...options, model: undefined })).toBe(snapshot);
    expect(options.systemPrompt).toBe(systemPrompt);
    expect(options.model).toBe(model);
  });

  it("the block is never written to memory; history from memory grounds the next turn", async () => {
    const { neurolink } = grounded();
    const { spy } = spyGround(neurolink);
    const model = answeringModel("Turn it on in settings.");
    const context = { sessionId: "session-block" };
    await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model,
      context,
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
    });
    const history = await neurolink.getConversationHistory(context);
    expect(history.map(({ role, content }) => ({ role, content }))).toEqual([
      { role: "user", content: GROUNDED_QUERY },
      { role: "assistant", content: "Turn it on in settings." },
    ]);
    expect(JSON.stringify(history)).not.toContain("knowledge_context");

    await neurolink.generate({
      input: { text: "and the policy types?" },
      model,
      context,
      useKnowledgeGrounding: true,
    });
    expect(spy.mock.calls[1]?.[0]).toHaveProperty("recentTurns");
    expect((spy.mock.calls[1]?.[0] as { recentTurns: unknown } | undefined)?.recentTurns).toEqual([
      { role: "user", text: GROUNDED_QUERY },
      { role: "assistant", text: "Turn it on in settings." },
    ]);
    // The prompt of the second turn carries the stored history, then the new input.
    expect(turnsOf(model.doGenerateCalls[1])).toEqual([
      { role: "user", text: GROUNDED_QUERY },
      { role: "assistant", text: "Turn it on in settings." },
      { role: "user", text: "and the policy types?" },
    ]);
  });

  it("retrieval runs before dynamic arguments are resolved", async () => {
    const { neurolink } = grounded();
    const order: string[] = [];
    const engine = internals(neurolink).knowledgeGroundingEngine;
    if (!engine) throw new Error("no engine");
    const original = engine.ground.bind(engine);
    vi.spyOn(engine, "ground").mockImplementation(async (...args: unknown[]) => {
      order.push("ground");
      return original(...args);
    });
    await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model: answeringModel("answer"),
      useKnowledgeGrounding: true,
      systemPrompt: () => {
        order.push("systemPrompt");
        return "Base";
      },
      temperature: () => {
        order.push("temperature");
        return 0.2;
      },
    });
    expect(order[0]).toBe("ground");
    expect([...order].sort()).toEqual(["ground", "systemPrompt", "temperature"]);
  });
});

describe("rebuildKnowledge", () => {
  it("delegates to the engine's rebuild and swaps in new sources", async () => {
    const { neurolink } = grounded();
    const engine = internals(neurolink).knowledgeGroundingEngine as unknown as {
      rebuild: (...args: unknown[]) => unknown;
    };
    const rebuild = vi.spyOn(engine, "rebuild");
    const status = await neurolink.rebuildKnowledge([policiesSource]);
    expect(rebuild).toHaveBeenCalledWith([policiesSource]);
    expect(status).toMatchObject({ ready: true, entryCount: 1 });
  });

  it("an instance enabled without sources gets its engine from the first non-empty rebuild", async () => {
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: [] },
      logger: recordingLogger(),
    });
    expect(neurolink.getKnowledgeStatus()).toBeNull();
    const status = await neurolink.rebuildKnowledge([settingsSource]);
    expect(status).toMatchObject({ enabled: true, ready: true, entryCount: 2 });
    expect(neurolink.getKnowledgeStatus()?.ready).toBe(true);
  });

  it("without grounding configured it throws a typed error", async () => {
    const neurolink = new NeuroLink({ logger: recordingLogger() });
    await expect(neurolink.rebuildKnowledge(SOURCES)).rejects.toSatisfy(
      KnowledgeNotConfiguredError.isInstance,
    );
  });
});
