/**
 * Presets through every adapter that takes a configuration instead of an engine: the AI SDK middleware, the
 * LangChain retriever and the NeuroLink client. Each must ground exactly as an engine built with the same
 * configuration, report the preset in its status, and reject an unknown preset like any bad config value.
 */
import { generateText, wrapLanguageModel } from "ai";
import { describe, expect, it } from "vitest";
import {
  KNOWLEDGE_PRESETS,
  type KnowledgeGroundingConfig,
  KnowledgeGroundingEngine,
} from "../../src/index.js";
import { GroundingIntegrationError, groundingMiddleware } from "../../src/integrations/aiSdk.js";
import { KnowledgeRetriever } from "../../src/integrations/langchain.js";
import { NeuroLink } from "../../src/neurolink/index.js";
import { answeringModel as neurolinkModel, systemOf } from "../neurolink/support/models.js";
import { config } from "./fixtures.js";
import { answeringModel } from "./models.js";

const QUESTION = "How do I turn on payouts.instantEnabled?";
/** A configuration whose preset visibly changes the selection: recommended, with every candidate but the top cut. */
const presetConfig: KnowledgeGroundingConfig = {
  ...config,
  preset: "recommended",
  retrieval: { minRelativeScore: 1, minResults: 1 },
};
const unknownPreset = { ...config, preset: "fast" } as unknown as KnowledgeGroundingConfig;

async function engineOutcome(configuration: KnowledgeGroundingConfig) {
  const engine = new KnowledgeGroundingEngine(configuration);
  return engine.ground({ query: QUESTION, recentTurns: [] });
}

describe("groundingMiddleware({ config }) with a preset", () => {
  it("grounds as an engine with the same configuration and reports the preset", async () => {
    const expected = await engineOutcome(presetConfig);
    const baseline = await engineOutcome(config);
    expect(expected.metadata.selectedIds).toHaveLength(1);
    expect(baseline.metadata.selectedIds.length).toBeGreaterThan(1);

    const middleware = groundingMiddleware({ config: presetConfig });
    const model = answeringModel();
    await generateText({
      model: wrapLanguageModel({ model, middleware }),
      system: "Base.",
      prompt: QUESTION,
    });
    const system = model.doGenerateCalls[0]!.prompt.find((message) => message.role === "system");
    expect(system?.content).toBe(`Base.\n\n${expected.ephemeralContext!.content}`);
    const status = (middleware.engine as KnowledgeGroundingEngine).getStatus();
    expect(status.configuration?.preset).toBe("recommended");
    expect(status.configuration?.retrieval.analyzer).toBe(KNOWLEDGE_PRESETS.recommended.retrieval.analyzer);
  });

  it("an unknown preset is rejected at construction with its path", () => {
    expect(() => groundingMiddleware({ config: unknownPreset })).toThrow(GroundingIntegrationError);
    expect(() => groundingMiddleware({ config: unknownPreset })).toThrow(
      /groundingMiddleware options\.config\.preset is invalid: preset must be one of "neurolink", "recommended", got "fast"/,
    );
  });
});

describe("KnowledgeRetriever({ config }) with a preset", () => {
  it("returns the documents of the preset's selection", async () => {
    const expected = await engineOutcome(presetConfig);
    const retriever = new KnowledgeRetriever({ config: presetConfig });
    const documents = await retriever.invoke(QUESTION);
    expect(documents.map((document) => document.id)).toEqual([
      ...expected.metadata.selectedIds,
      ...expected.metadata.expandedIds,
    ]);
    expect((retriever.engine as KnowledgeGroundingEngine).getStatus().configuration?.preset).toBe(
      "recommended",
    );
  });

  it("an unknown preset is rejected at construction with its path", () => {
    expect(() => new KnowledgeRetriever({ config: unknownPreset })).toThrow(
      /KnowledgeRetriever options\.config\.preset is invalid/,
    );
  });
});

describe("NeuroLink knowledgeGrounding with a preset", () => {
  it("grounds with the preset, reports it, and keeps it across rebuild()", async () => {
    const expected = await engineOutcome(presetConfig);
    const neurolink = new NeuroLink({ knowledgeGrounding: presetConfig });
    const model = neurolinkModel("answer");
    const result = await neurolink.generate({
      input: { text: QUESTION },
      model,
      systemPrompt: "Base",
      useKnowledgeGrounding: true,
    });
    expect(result.knowledge?.selectedIds).toEqual(expected.metadata.selectedIds);
    expect(systemOf(model.doGenerateCalls[0])).toBe(`Base\n\n${expected.ephemeralContext!.content}`);
    expect(neurolink.getKnowledgeStatus()?.configuration?.preset).toBe("recommended");
    const rebuilt = await neurolink.rebuildKnowledge();
    expect(rebuilt.configuration?.preset).toBe("recommended");
    expect(rebuilt.configuration?.retrieval.minRelativeScore).toBe(1);
  });

  it("an unknown preset leaves grounding not ready, with the reason in the status", async () => {
    const neurolink = new NeuroLink({ knowledgeGrounding: unknownPreset });
    const status = neurolink.getKnowledgeStatus();
    expect(status?.ready).toBe(false);
    expect(status?.lastError).toContain("preset must be one of");
    expect(status?.validationIssues).toContainEqual(
      expect.objectContaining({ code: "bad-config", path: "preset" }),
    );
    const result = await neurolink.generate({
      input: { text: QUESTION },
      model: neurolinkModel("answer"),
      useKnowledgeGrounding: true,
    });
    expect(result.content).toBe("answer");
    expect(result.knowledge?.failureReason).toBe("validation-failed");
  });
});
