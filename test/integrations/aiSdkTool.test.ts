import { asSchema, generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { retrieve } from "../../src/index.js";
import {
  GroundingIntegrationError,
  type SearchKnowledgeToolOutput,
  searchKnowledgeTool,
} from "../../src/integrations/aiSdkTool.js";
import { readyEngine, recordingEngine } from "./fixtures.js";
import { textResult, toolCallResult } from "./models.js";

const QUESTION = "How do I turn on payouts.instantEnabled?";

async function execute(
  tool: ReturnType<typeof searchKnowledgeTool>,
  query: string,
  context?: unknown,
): Promise<SearchKnowledgeToolOutput> {
  return (await tool.execute!(
    { query },
    {
      toolCallId: "call-1",
      messages: [],
      ...(context === undefined ? {} : { experimental_context: context }),
    },
  )) as SearchKnowledgeToolOutput;
}

describe("searchKnowledgeTool", () => {
  it("returns entries with citations, scores and expansion origins, the confidence and the block", async () => {
    const engine = await readyEngine();
    const output = await execute(searchKnowledgeTool(engine), QUESTION);
    const expected = await engine.ground({ query: QUESTION });
    const selection = retrieve(
      engine.getSnapshot()!,
      { query: QUESTION, recentTurns: [], enabledIntegrations: [] },
      engine.getResolvedRetrieval(),
    );
    const scoreOf = (id: string) => selection.candidates.find((candidate) => candidate.id === id)!.score;

    expect(output.query).toBe(QUESTION);
    expect(output.confidence).toBe("high");
    expect(output.context).toBe(expected.ephemeralContext!.content);
    expect(output.candidateCount).toBe(2);
    expect(output.citations).toEqual([
      "[KB:payouts.instant-payouts@7]",
      "[KB:payouts.payout-schedule@7]",
      "[KB:payouts.eligible-cards@7]",
    ]);
    expect(output.entries).toEqual([
      {
        id: "payouts.instant-payouts",
        title: "Instant Payouts",
        summary: "Instant payouts send available funds to a debit card within minutes for a 1% fee.",
        kind: "configuration",
        domain: "payouts",
        version: "7",
        citation: "[KB:payouts.instant-payouts@7]",
        score: scoreOf("payouts.instant-payouts"),
        expandedFrom: null,
      },
      expect.objectContaining({
        id: "payouts.payout-schedule",
        score: scoreOf("payouts.payout-schedule"),
        expandedFrom: null,
      }),
      expect.objectContaining({
        id: "payouts.eligible-cards",
        score: null,
        expandedFrom: "payouts.instant-payouts",
      }),
    ]);
    // The alias matched: the exact/alias boost is part of the score.
    expect(output.entries[0]!.score).toBeGreaterThan(60);
    expect(output.failureReason).toBeUndefined();
  });

  it("searches within the host's scope, fixed or computed from the execution context", async () => {
    const engine = await readyEngine();
    const query = "my shopify refund is not syncing";
    const unscoped = await execute(searchKnowledgeTool(engine), query);
    const fixed = await execute(
      searchKnowledgeTool(engine, { scope: { enabledIntegrations: ["shopify"] } }),
      query,
    );
    const computed = await execute(
      searchKnowledgeTool(engine, {
        scope: ({ experimental_context }) =>
          (experimental_context as { scope: { enabledIntegrations: string[] } }).scope,
      }),
      query,
      { scope: { enabledIntegrations: ["shopify"] } },
    );
    const ids = (output: SearchKnowledgeToolOutput) => output.entries.map((entry) => entry.id);
    expect(ids(unscoped)).not.toContain("integrations.shopify-refunds-not-syncing");
    expect(ids(fixed)[0]).toBe("integrations.shopify-refunds-not-syncing");
    expect(ids(computed)).toEqual(ids(fixed));
  });

  it("reports exact scores whatever domains the engine blocks, even with tight candidate cuts", async () => {
    const query = "refund a payment";
    for (const retrieval of [{}, { candidateLimit: 1, resultLimit: 1 }]) {
      const engine = await readyEngine({ blockedDomains: ["payments"], retrieval });
      const output = await execute(searchKnowledgeTool(engine), query);
      const selection = retrieve(
        engine.getSnapshot()!,
        { query, recentTurns: [], enabledIntegrations: [] },
        engine.getResolvedRetrieval(),
        ["payments"],
      );
      const primary = output.entries.filter((entry) => entry.expandedFrom === null);
      expect(primary.map((entry) => entry.id)).toEqual(selection.primary.map((entry) => entry.id));
      expect(primary.map((entry) => entry.score)).toEqual(
        selection.candidates.slice(0, primary.length).map((candidate) => candidate.score),
      );
      expect(primary[0]!.id).toBe("runbooks.refund-override");
      expect(primary.every((entry) => typeof entry.score === "number" && entry.score > 0)).toBe(true);
    }
  });

  it("fails open: no entries and a failureReason", async () => {
    const output = await execute(
      searchKnowledgeTool({
        ground: async () => {
          throw new Error("boom");
        },
      }),
      QUESTION,
    );
    expect(output).toEqual({
      query: QUESTION,
      confidence: "none",
      entries: [],
      citations: [],
      context: "",
      candidateCount: 0,
      failureReason: "Error: boom",
    });
  });

  it("works as a tool in a generateText loop", async () => {
    const recording = recordingEngine(await readyEngine());
    const model = new MockLanguageModelV3({
      doGenerate: [
        toolCallResult("searchKnowledge", { query: QUESTION }),
        textResult("Use payouts.instantEnabled."),
      ],
    });
    const result = await generateText({
      model,
      tools: { searchKnowledge: searchKnowledgeTool(recording) },
      stopWhen: stepCountIs(3),
      prompt: "How do instant payouts work?",
    });
    expect(result.text).toBe("Use payouts.instantEnabled.");
    expect(recording.inputs.map((input) => input.query)).toEqual([QUESTION]);
    const toolResult = result.steps[0]!.toolResults[0]!;
    expect((toolResult.output as SearchKnowledgeToolOutput).entries[0]!.citation).toBe(
      "[KB:payouts.instant-payouts@7]",
    );
    // The model saw the output in its second step.
    const secondPrompt = JSON.stringify(model.doGenerateCalls[1]!.prompt);
    expect(secondPrompt).toContain("[KB:payouts.instant-payouts@7]");
    // The model is offered the tool with a JSON schema for { query }.
    const offered = model.doGenerateCalls[0]!.tools![0]!;
    expect(offered.name).toBe("searchKnowledge");
    expect(offered.type === "function" && offered.inputSchema).toMatchObject({
      type: "object",
      properties: { query: { type: "string" } },
      required: ["query"],
    });
  });

  it("offers the model the JSON schema a zod object schema gave, with neither ai nor zod loaded by the module", async () => {
    const recording = recordingEngine(await readyEngine());
    const model = new MockLanguageModelV3({ doGenerate: [textResult("No search needed.")] });
    await generateText({ model, tools: { searchKnowledge: searchKnowledgeTool(recording) }, prompt: "Hi" });
    const offered = model.doGenerateCalls[0]!.tools![0]!;
    const zodJsonSchema = await asSchema(
      z.object({ query: z.string().min(1).describe("the question or keywords to search for") }),
    ).jsonSchema;
    expect(offered.type === "function" && offered.inputSchema).toEqual(zodJsonSchema);
  });

  it("a malformed input from the model (empty query, wrong type, not an object) never reaches the engine", async () => {
    const recording = recordingEngine(await readyEngine());
    for (const input of [{ query: "" }, { query: 42 }, ["query"]]) {
      const model = new MockLanguageModelV3({
        doGenerate: [toolCallResult("searchKnowledge", input), textResult("Done.")],
      });
      const result = await generateText({
        model,
        tools: { searchKnowledge: searchKnowledgeTool(recording) },
        stopWhen: stepCountIs(3),
        prompt: "How do instant payouts work?",
      });
      const errors = result.steps[0]!.content.filter((part) => part.type === "tool-error");
      expect(errors, JSON.stringify(input)).toHaveLength(1);
    }
    expect(recording.inputs).toEqual([]);
    // Extra keys are dropped, as a zod object schema drops them.
    const model = new MockLanguageModelV3({
      doGenerate: [toolCallResult("searchKnowledge", { query: QUESTION, page: 2 }), textResult("Done.")],
    });
    const result = await generateText({
      model,
      tools: { searchKnowledge: searchKnowledgeTool(recording) },
      stopWhen: stepCountIs(3),
      prompt: "How do instant payouts work?",
    });
    expect(result.steps[0]!.toolCalls[0]!.input).toEqual({ query: QUESTION });
    expect(recording.inputs.map((input) => input.query)).toEqual([QUESTION]);
  });

  it("rejects a non-engine and a malformed scope", () => {
    expect(() => searchKnowledgeTool({} as never)).toThrow(GroundingIntegrationError);
    expect(() =>
      searchKnowledgeTool(
        { ground: async () => ({}) as never },
        { scope: { enabledIntegrations: "x" } as never },
      ),
    ).toThrow(/searchKnowledgeTool options\.scope\.enabledIntegrations must be an array of strings/);
  });
});
