import type { LanguageModelV3CallOptions, LanguageModelV3Prompt } from "@ai-sdk/provider";
import { generateText, type ModelMessage, stepCountIs, streamText, tool, wrapLanguageModel } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { KNOWLEDGE_CONTEXT_OPEN, KnowledgeGroundingEngine } from "../../src/index.js";
import {
  GroundingIntegrationError,
  type GroundingProviderMetadata,
  groundingMiddleware,
  insertGroundingBlock,
} from "../../src/integrations/aiSdk.js";
import type { KnowledgeEngineLike } from "../../src/integrations/engine.js";
import { config, readyEngine, recordingEngine } from "./fixtures.js";
import {
  answeringModel,
  failingModel,
  fallbackModel,
  textResult,
  textStreamParts,
  toolCallResult,
} from "./models.js";

const QUESTION = "How do I turn on payouts.instantEnabled?";
const SHOPIFY_QUESTION = "my shopify refund is not syncing";

function systemMessages(prompt: LanguageModelV3Prompt): string[] {
  return prompt.filter((message) => message.role === "system").map((message) => message.content as string);
}

async function blockFor(query: string, enabledIntegrations?: string[]): Promise<string> {
  const engine = await readyEngine();
  const outcome = await engine.ground({
    query,
    recentTurns: [],
    ...(enabledIntegrations ? { scope: { enabledIntegrations } } : {}),
  });
  expect(outcome.ephemeralContext).not.toBeNull();
  return outcome.ephemeralContext!.content;
}

function lexgroundMetadata(providerMetadata: unknown): GroundingProviderMetadata {
  const value = (providerMetadata as Record<string, unknown> | undefined)?.lexground;
  expect(value).toBeDefined();
  return value as GroundingProviderMetadata;
}

describe("groundingMiddleware: placement of the block", () => {
  it("appends the engine's block to the system prompt after a blank line", async () => {
    const model = answeringModel();
    const engine = await readyEngine();
    const wrapped = wrapLanguageModel({ model, middleware: groundingMiddleware({ engine }) });
    const result = await generateText({
      model: wrapped,
      system: "You are the support assistant.",
      prompt: QUESTION,
    });

    expect(result.text).toBe("Answer.");
    const prompt = model.doGenerateCalls[0]!.prompt;
    expect(prompt).toHaveLength(2);
    expect(prompt[0]).toEqual({
      role: "system",
      content: `You are the support assistant.\n\n${await blockFor(QUESTION)}`,
    });
    expect(prompt[1]).toEqual({ role: "user", content: [{ type: "text", text: QUESTION }] });
    const metadata = lexgroundMetadata(result.providerMetadata);
    expect(metadata.selectedIds).toEqual(["payouts.instant-payouts", "payouts.payout-schedule"]);
    expect(metadata.expandedIds).toEqual(["payouts.eligible-cards"]);
    expect(metadata.confidence).toBe("high");
    expect(metadata.citations).toEqual([
      "[KB:payouts.instant-payouts@7]",
      "[KB:payouts.payout-schedule@7]",
      "[KB:payouts.eligible-cards@7]",
    ]);
    expect(metadata.grounded).toBe(true);
    expect(metadata.reused).toBe(false);
    expect(metadata.failureReason).toBeUndefined();
  });

  it("adds a leading system message when the call has none", async () => {
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine() }),
    });
    await generateText({ model: wrapped, prompt: QUESTION });

    const prompt = model.doGenerateCalls[0]!.prompt;
    expect(prompt.map((message) => message.role)).toEqual(["system", "user"]);
    expect(prompt[0]).toEqual({ role: "system", content: await blockFor(QUESTION) });
  });

  it("keeps the block in the leading system run and never adds a system message after a user message", async () => {
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine() }),
    });
    const messages: ModelMessage[] = [
      { role: "system", content: "Static instructions." },
      { role: "system", content: "Tenant instructions." },
      { role: "user", content: "hello" },
      { role: "assistant", content: "Hi, how can I help?" },
      { role: "user", content: QUESTION },
    ];
    await generateText({ model: wrapped, messages, allowSystemInMessages: true });

    const prompt = model.doGenerateCalls[0]!.prompt;
    expect(prompt.map((message) => message.role)).toEqual(["system", "system", "user", "assistant", "user"]);
    expect(prompt[0]).toEqual({ role: "system", content: "Static instructions." });
    expect((prompt[1]!.content as string).startsWith("Tenant instructions.\n\n<knowledge_context>")).toBe(
      true,
    );
    expect(systemMessages(prompt).join("").split(KNOWLEDGE_CONTEXT_OPEN)).toHaveLength(2);
  });

  it("insertGroundingBlock leaves the input prompt untouched and keeps system message options", () => {
    const prompt: LanguageModelV3Prompt = [
      {
        role: "system",
        content: "S",
        providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } },
      },
      { role: "user", content: [{ type: "text", text: "q" }] },
      { role: "system", content: "late system message" },
    ];
    const frozen = structuredClone(prompt);
    const next = insertGroundingBlock(prompt, "BLOCK");
    expect(prompt).toEqual(frozen);
    expect(next[0]).toEqual({
      role: "system",
      content: "S\n\nBLOCK",
      providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } },
    });
    expect(next[2]).toBe(prompt[2]);
    expect(insertGroundingBlock([{ role: "system", content: "" }], "BLOCK")).toEqual([
      { role: "system", content: "BLOCK" },
    ]);
    expect(insertGroundingBlock([], "BLOCK")).toEqual([{ role: "system", content: "BLOCK" }]);
  });

  it("passes a call through untouched when nothing matches or the prompt has no user text", async () => {
    const model = answeringModel();
    const recording = recordingEngine(await readyEngine());
    const wrapped = wrapLanguageModel({ model, middleware: groundingMiddleware({ engine: recording }) });
    await generateText({ model: wrapped, system: "S", prompt: "zzzz qqqq" });
    expect(model.doGenerateCalls[0]!.prompt[0]).toEqual({ role: "system", content: "S" });
    expect(recording.inputs).toHaveLength(1);

    await generateText({
      model: wrapped,
      system: "S",
      messages: [
        {
          role: "user",
          content: [{ type: "image", image: new Uint8Array([1, 2, 3]), mediaType: "image/png" }],
        },
      ],
    });
    expect(model.doGenerateCalls[1]!.prompt[0]).toEqual({ role: "system", content: "S" });
    // No text to search for: the engine is not consulted.
    expect(recording.inputs).toHaveLength(1);
  });
});

describe("groundingMiddleware: per-call scope through providerOptions", () => {
  it("makes integration-bound entries eligible only when the call enables their integration", async () => {
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine() }),
    });

    const scoped = await generateText({
      model: wrapped,
      prompt: SHOPIFY_QUESTION,
      providerOptions: { lexground: { enabledIntegrations: ["Shopify"] } },
    });
    const unscoped = await generateText({ model: wrapped, prompt: SHOPIFY_QUESTION });

    expect(lexgroundMetadata(scoped.providerMetadata).selectedIds).toContain(
      "integrations.shopify-refunds-not-syncing",
    );
    expect(lexgroundMetadata(unscoped.providerMetadata).selectedIds).not.toContain(
      "integrations.shopify-refunds-not-syncing",
    );
    expect(model.doGenerateCalls[0]!.prompt[0]!.content).toBe(await blockFor(SHOPIFY_QUESTION, ["Shopify"]));
    expect(model.doGenerateCalls[1]!.prompt[0]!.content).toBe(await blockFor(SHOPIFY_QUESTION));
    // The namespace reaches the provider unchanged: providers read only their own.
    expect(model.doGenerateCalls[0]!.providerOptions).toEqual({
      lexground: { enabledIntegrations: ["Shopify"] },
    });
  });

  it("reads a custom namespace and falls back to the middleware's default scope", async () => {
    const model = answeringModel();
    const recording = recordingEngine(await readyEngine());
    const middleware = groundingMiddleware({
      engine: recording,
      providerOptionsKey: "kb",
      scope: { enabledIntegrations: ["shopify"] },
    });
    const wrapped = wrapLanguageModel({ model, middleware });
    const byDefault = await generateText({ model: wrapped, prompt: SHOPIFY_QUESTION });
    const narrowed = await generateText({
      model: wrapped,
      prompt: SHOPIFY_QUESTION,
      providerOptions: { kb: { enabledIntegrations: [] } },
    });
    expect(recording.inputs.map((input) => input.scope)).toEqual([
      { enabledIntegrations: ["shopify"] },
      { enabledIntegrations: [] },
    ]);
    expect((byDefault.providerMetadata!.kb as GroundingProviderMetadata).selectedIds[0]).toBe(
      "integrations.shopify-refunds-not-syncing",
    );
    expect((narrowed.providerMetadata!.kb as GroundingProviderMetadata).selectedIds).not.toContain(
      "integrations.shopify-refunds-not-syncing",
    );
  });

  it("rejects a malformed scope with an error naming the place", async () => {
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine() }),
    });
    const cases: Array<[unknown, string]> = [
      [{ enabledIntegrations: "shopify" }, "providerOptions.lexground.enabledIntegrations"],
      [{ enabledIntegrations: ["shopify", 3] }, "providerOptions.lexground.enabledIntegrations[1]"],
      [{ enabledIntegration: ["shopify"] }, "providerOptions.lexground.enabledIntegration"],
    ];
    for (const [scope, path] of cases) {
      const error = await generateText({
        model: wrapped,
        prompt: SHOPIFY_QUESTION,
        providerOptions: { lexground: scope as Record<string, never> },
      }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GroundingIntegrationError);
      expect((error as GroundingIntegrationError).path).toBe(path);
    }
    expect(model.doGenerateCalls).toHaveLength(0);
  });
});

describe("groundingMiddleware: once per user turn", () => {
  function toolLoopModel(): MockLanguageModelV3 {
    return new MockLanguageModelV3({
      provider: "mock",
      modelId: "tool-loop",
      doGenerate: [
        toolCallResult("lookupPayout", { payoutId: "po_1" }),
        textResult("Done [KB:payouts.instant-payouts@7]."),
      ],
    });
  }
  const lookupPayout = tool({
    description: "Looks up a payout",
    inputSchema: z.object({ payoutId: z.string() }),
    execute: async ({ payoutId }) => ({ payoutId, status: "paid" }),
  });

  it("retrieves once in a tool loop and gives every step the same block", async () => {
    const model = toolLoopModel();
    const recording = recordingEngine(await readyEngine());
    const notified: string[][] = [];
    const middleware = groundingMiddleware({
      engine: recording,
      onGrounding: (metadata) => notified.push(metadata.selectedIds),
    });
    const result = await generateText({
      model: wrapLanguageModel({ model, middleware }),
      system: "S",
      prompt: QUESTION,
      tools: { lookupPayout },
      stopWhen: stepCountIs(3),
    });

    expect(result.steps).toHaveLength(2);
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(recording.inputs).toHaveLength(1);
    expect(notified).toEqual([["payouts.instant-payouts", "payouts.payout-schedule"]]);
    const [first, second] = model.doGenerateCalls.map((call) => call.prompt);
    expect(second!.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(second![0]).toEqual(first![0]);
    expect(second![0]!.content).toBe(`S\n\n${await blockFor(QUESTION)}`);
    expect(lexgroundMetadata(result.steps[0]!.providerMetadata).reused).toBe(false);
    expect(lexgroundMetadata(result.steps[1]!.providerMetadata).reused).toBe(true);
  });

  it("retrieves again for a new user turn, with the earlier turns as context", async () => {
    const model = answeringModel();
    const recording = recordingEngine(await readyEngine());
    const wrapped = wrapLanguageModel({ model, middleware: groundingMiddleware({ engine: recording }) });
    const history: ModelMessage[] = [{ role: "user", content: QUESTION }];
    const first = await generateText({ model: wrapped, messages: history });
    history.push(...first.response.messages, { role: "user", content: "and what does it cost?" });
    await generateText({ model: wrapped, messages: history });

    expect(recording.inputs).toHaveLength(2);
    expect(recording.inputs[1]).toEqual({
      query: "and what does it cost?",
      recentTurns: [
        { role: "user", text: QUESTION },
        { role: "assistant", text: "Answer." },
      ],
    });
  });

  it("passes at most recentTurns earlier user/assistant messages with text, oldest first", async () => {
    const recording = recordingEngine(await readyEngine());
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: recording, recentTurns: 2 }),
    });
    await generateText({
      model: wrapped,
      messages: [
        { role: "system", content: "S" },
        { role: "user", content: "one" },
        { role: "assistant", content: "two" },
        {
          role: "user",
          content: [
            { type: "text", text: "three" },
            { type: "text", text: "three b" },
          ],
        },
        { role: "assistant", content: [{ type: "tool-call", toolCallId: "c", toolName: "t", input: {} }] },
        {
          role: "tool",
          content: [
            { type: "tool-result", toolCallId: "c", toolName: "t", output: { type: "text", value: "x" } },
          ],
        },
        { role: "assistant", content: "four" },
        { role: "user", content: QUESTION },
      ],
      allowSystemInMessages: true,
    });
    expect(recording.inputs[0]!.recentTurns).toEqual([
      { role: "user", text: "three\nthree b" },
      { role: "assistant", text: "four" },
    ]);
  });

  it("bounds the memo: the oldest turn is forgotten first", async () => {
    const recording = recordingEngine(await readyEngine());
    const wrapped = wrapLanguageModel({
      model: answeringModel(),
      middleware: groundingMiddleware({ engine: recording, memoLimit: 2 }),
    });
    for (const prompt of [
      "payout schedule",
      "instant payouts",
      "payout schedule",
      "two factor",
      "instant payouts",
    ]) {
      await generateText({ model: wrapped, prompt });
    }
    // "payout schedule" is reused (memo: schedule, instant); "two factor" evicts "instant payouts".
    expect(recording.inputs.map((input) => input.query)).toEqual([
      "payout schedule",
      "instant payouts",
      "two factor",
      "instant payouts",
    ]);
  });

  it("forgets a retrieval after memoTtlMs and when the engine serves a rebuilt snapshot", async () => {
    let clock = 1_000;
    const engine = await readyEngine();
    const recording = recordingEngine(engine);
    const wrapped = wrapLanguageModel({
      model: answeringModel(),
      middleware: groundingMiddleware({ engine: recording, memoTtlMs: 100, now: () => clock }),
    });
    await generateText({ model: wrapped, prompt: QUESTION });
    clock += 100;
    await generateText({ model: wrapped, prompt: QUESTION });
    expect(recording.inputs).toHaveLength(1);
    clock += 1;
    await generateText({ model: wrapped, prompt: QUESTION });
    expect(recording.inputs).toHaveLength(2);

    await engine.rebuild([{ ...config.sources![0]!, version: "8" }]);
    const result = await generateText({ model: wrapped, prompt: QUESTION });
    expect(recording.inputs).toHaveLength(3);
    expect(lexgroundMetadata(result.providerMetadata).citations[0]).toBe("[KB:payouts.instant-payouts@8]");
  });

  it("reuses the turn's retrieval with an engine that does not expose its snapshot", async () => {
    const recording = recordingEngine(await readyEngine());
    const bare: KnowledgeEngineLike = { ground: (input) => recording.ground(input) };
    await generateText({
      model: wrapLanguageModel({ model: toolLoopModel(), middleware: groundingMiddleware({ engine: bare }) }),
      prompt: QUESTION,
      tools: { lookupPayout },
      stopWhen: stepCountIs(3),
    });
    expect(recording.inputs).toHaveLength(1);
  });

  it("memoLimit 0 retrieves on every step", async () => {
    const recording = recordingEngine(await readyEngine());
    await generateText({
      model: wrapLanguageModel({
        model: toolLoopModel(),
        middleware: groundingMiddleware({ engine: recording, memoLimit: 0 }),
      }),
      prompt: QUESTION,
      tools: { lookupPayout },
      stopWhen: stepCountIs(3),
    });
    expect(recording.inputs).toHaveLength(2);
  });
});

describe("groundingMiddleware: streaming", () => {
  it("grounds streamText and reports the metadata on the finish part", async () => {
    const model = answeringModel("Streamed.");
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine() }),
    });
    const result = streamText({ model: wrapped, system: "S", prompt: QUESTION });
    expect(await result.text).toBe("Streamed.");
    expect(model.doStreamCalls[0]!.prompt[0]!.content).toBe(`S\n\n${await blockFor(QUESTION)}`);
    const metadata = lexgroundMetadata(await result.providerMetadata);
    expect(metadata.selectedIds).toEqual(["payouts.instant-payouts", "payouts.payout-schedule"]);
    expect(metadata.grounded).toBe(true);
  });

  it("keeps the provider's own metadata on the finish part", async () => {
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: convertArrayToReadableStream(
          textStreamParts("x").map((part) =>
            part.type === "finish" ? { ...part, providerMetadata: { mock: { requestId: "r1" } } } : part,
          ),
        ),
      }),
    });
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine() }),
    });
    const result = streamText({ model: wrapped, prompt: QUESTION });
    await result.consumeStream();
    const providerMetadata = await result.providerMetadata;
    expect(providerMetadata?.mock).toEqual({ requestId: "r1" });
    expect(lexgroundMetadata(providerMetadata).grounded).toBe(true);
  });
});

describe("groundingMiddleware: fail-open", () => {
  async function ungroundedPrompt(system: string | undefined): Promise<LanguageModelV3Prompt> {
    const model = answeringModel();
    await generateText({ model, prompt: QUESTION, ...(system ? { system } : {}) });
    return model.doGenerateCalls[0]!.prompt;
  }

  it("passes the call through unchanged when the engine throws, and reports why", async () => {
    const throwing: KnowledgeEngineLike = {
      ground: async () => {
        throw new Error("engine exploded");
      },
    };
    const reasons: Array<string | undefined> = [];
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({
        engine: throwing,
        onGrounding: (metadata) => reasons.push(metadata.failureReason),
      }),
    });
    const result = await generateText({ model: wrapped, system: "S", prompt: QUESTION });
    expect(result.text).toBe("Answer.");
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await ungroundedPrompt("S"));
    expect(reasons).toEqual(["Error: engine exploded"]);
    const metadata = lexgroundMetadata(result.providerMetadata);
    expect(metadata.grounded).toBe(false);
    expect(metadata.failureReason).toBe("Error: engine exploded");
  });

  it("passes the call through unchanged when the index cannot be built", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "broken", entries: [{ id: "x" } as never] }],
    });
    const model = answeringModel();
    const wrapped = wrapLanguageModel({ model, middleware: groundingMiddleware({ engine }) });
    const result = await generateText({ model: wrapped, prompt: QUESTION });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await ungroundedPrompt(undefined));
    expect(lexgroundMetadata(result.providerMetadata).failureReason).toBe("validation-failed");
  });

  it("a throwing onGrounding callback does not fail the call", async () => {
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({
        engine: await readyEngine(),
        onGrounding: () => {
          throw new Error("telemetry down");
        },
      }),
    });
    const result = await generateText({ model: wrapped, prompt: QUESTION });
    expect(result.text).toBe("Answer.");
    expect(lexgroundMetadata(result.providerMetadata).grounded).toBe(true);
  });
});

describe("groundingMiddleware: fallback models", () => {
  it("wrapped outside a fallback model, retrieves once and grounds every attempt", async () => {
    const bad = failingModel("primary");
    const good = answeringModel("From backup.", "backup");
    const fallback = fallbackModel([bad, good]);
    const recording = recordingEngine(await readyEngine());
    const result = await generateText({
      model: wrapLanguageModel({ model: fallback, middleware: groundingMiddleware({ engine: recording }) }),
      system: "S",
      prompt: QUESTION,
      maxRetries: 0,
    });
    expect(result.text).toBe("From backup.");
    expect(fallback.attempts).toEqual(["primary", "backup"]);
    expect(recording.inputs).toHaveLength(1);
    const grounded = `S\n\n${await blockFor(QUESTION)}`;
    expect(bad.doGenerateCalls[0]!.prompt[0]!.content).toBe(grounded);
    expect(good.doGenerateCalls[0]!.prompt[0]!.content).toBe(grounded);
    expect(lexgroundMetadata(result.providerMetadata).selectedIds[0]).toBe("payouts.instant-payouts");
  });

  it("inside the fallback, one shared middleware still retrieves once thanks to the turn memo", async () => {
    const recording = recordingEngine(await readyEngine());
    const middleware = groundingMiddleware({ engine: recording });
    const fallback = fallbackModel([
      wrapLanguageModel({ model: failingModel("primary"), middleware }),
      wrapLanguageModel({ model: answeringModel("From backup.", "backup"), middleware }),
    ]);
    const result = await generateText({ model: fallback, prompt: QUESTION, maxRetries: 0 });
    expect(result.text).toBe("From backup.");
    expect(recording.inputs).toHaveLength(1);
  });
});

describe("groundingMiddleware: options", () => {
  it("builds its own engine from a configuration", async () => {
    const middleware = groundingMiddleware({ config });
    expect(middleware.engine).toBeInstanceOf(KnowledgeGroundingEngine);
    expect(middleware.specificationVersion).toBe("v3");
    const model = answeringModel();
    await generateText({ model: wrapLanguageModel({ model, middleware }), prompt: QUESTION });
    expect(model.doGenerateCalls[0]!.prompt[0]!.content).toBe(await blockFor(QUESTION));
  });

  it("rejects bad options with an error naming the option", async () => {
    const engine = await readyEngine();
    const cases: Array<[unknown, string]> = [
      [{}, "groundingMiddleware options"],
      [{ engine, config }, "groundingMiddleware options"],
      [{ engine: {} }, "groundingMiddleware options.engine"],
      [{ config: { ...config, timeoutMs: -1 } }, "groundingMiddleware options.config.timeoutMs"],
      [{ engine, recentTurns: 1.5 }, "groundingMiddleware options.recentTurns"],
      [{ engine, providerOptionsKey: "" }, "groundingMiddleware options.providerOptionsKey"],
      [{ engine, memoLimit: -1 }, "groundingMiddleware options.memoLimit"],
      [{ engine, onGrounding: "log" }, "groundingMiddleware options.onGrounding"],
      [
        { engine, scope: { enabledIntegrations: "shopify" } },
        "groundingMiddleware options.scope.enabledIntegrations",
      ],
    ];
    for (const [options, path] of cases) {
      let caught: unknown;
      try {
        groundingMiddleware(options as never);
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(path)).toBeInstanceOf(GroundingIntegrationError);
      expect((caught as GroundingIntegrationError).path).toBe(path);
    }
  });

  it("does not change the caller's parameters object", async () => {
    const middleware = groundingMiddleware({ engine: await readyEngine() });
    const params: LanguageModelV3CallOptions = {
      prompt: [
        { role: "system", content: "S" },
        { role: "user", content: [{ type: "text", text: QUESTION }] },
      ],
      providerOptions: { lexground: { enabledIntegrations: ["shopify"] } },
    };
    const copy = structuredClone(params);
    const next = await middleware.transformParams!({ type: "generate", params, model: answeringModel() });
    expect(params).toEqual(copy);
    expect(next).not.toBe(params);
    expect(next.prompt[0]!.content).not.toBe("S");
  });
});
