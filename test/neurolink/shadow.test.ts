/**
 * Shadow mode in the client: grounding runs and is reported (`result.knowledge.shadow`, the `knowledge:shadow`
 * event with the would-be block), but the provider receives exactly the prompt of an ungrounded call. Per instance
 * (`knowledgeGrounding.shadow`) and per call (`knowledgeShadow`), with shadow alternatives reported by name.
 */
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { afterEach, describe, expect, it, vi } from "vitest";
import type {
  KnowledgeGroundingConfig,
  KnowledgeGroundingOutcome,
  KnowledgeShadowEvent,
} from "../../src/index.js";
import { clearKnowledgeIndexCache } from "../../src/index.js";
import { type GenerateOptions, InvalidOptionsError, NeuroLink } from "../../src/neurolink/index.js";
import { GROUNDED_QUERY, recordingLogger, SCOPE, SOURCES } from "./support/fixtures.js";
import { answeringModel, drain, systemOf } from "./support/models.js";

afterEach(() => {
  vi.restoreAllMocks();
  clearKnowledgeIndexCache();
});

function client(knowledgeGrounding: Partial<KnowledgeGroundingConfig> = {}) {
  const neurolink = new NeuroLink({
    knowledgeGrounding: { enabled: true, sources: SOURCES, ...knowledgeGrounding },
    logger: recordingLogger(),
  });
  const reports: KnowledgeShadowEvent[] = [];
  neurolink.on("knowledge:shadow", (report) => reports.push(report));
  return { neurolink, reports };
}

const CALL = {
  input: { text: GROUNDED_QUERY },
  systemPrompt: "You are the support assistant.",
  useKnowledgeGrounding: true,
  knowledgeContext: SCOPE,
} satisfies Omit<GenerateOptions, "model">;

/** What the provider receives for the same call without grounding. */
async function ungroundedPrompt(): Promise<LanguageModelV3CallOptions["prompt"]> {
  const model = answeringModel("ok");
  await new NeuroLink({ logger: recordingLogger() }).generate({
    ...CALL,
    useKnowledgeGrounding: false,
    model,
  });
  return model.doGenerateCalls[0]!.prompt;
}

/** The block a live instance adds for the call. */
async function liveBlock(): Promise<string> {
  const model = answeringModel("ok");
  await client().neurolink.generate({ ...CALL, model });
  const system = systemOf(model.doGenerateCalls[0])!;
  expect(system).toContain("<knowledge_context>");
  return system.slice(`${CALL.systemPrompt}\n\n`.length);
}

describe("shadow mode in the client", () => {
  it("per instance: the provider gets the ungrounded prompt; the result and the event carry the would-be block", async () => {
    const { neurolink, reports } = client({ shadow: true });
    const model = answeringModel("Answer.");
    const result = await neurolink.generate({ ...CALL, model });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await ungroundedPrompt());
    expect(result.content).toBe("Answer.");
    expect(result.knowledge).toMatchObject({
      shadow: true,
      selectedIds: ["settings.multi-step-flow"],
      confidence: "high",
    });
    expect(result.knowledge?.contextTokens).toBeGreaterThan(0);
    const block = await liveBlock();
    expect(reports).toEqual([
      {
        query: GROUNDED_QUERY,
        primary: {
          metadata: result.knowledge,
          block,
          citations: expect.arrayContaining([{ id: "settings.multi-step-flow", version: "1" }]),
          contextTokens: result.knowledge!.contextTokens,
          injected: false,
        },
        alternatives: {},
      },
    ]);
  });

  it("per instance, on streams too", async () => {
    const { neurolink, reports } = client({ shadow: true });
    const model = answeringModel("Streamed.");
    const streamed = await neurolink.stream({ ...CALL, model });
    expect(await drain(streamed.stream)).toBe("Streamed.");
    expect(streamed.knowledge?.shadow).toBe(true);
    expect((await streamed.result).knowledge?.shadow).toBe(true);
    const ungrounded = answeringModel("Streamed.");
    const plain = await new NeuroLink({ logger: recordingLogger() }).stream({
      ...CALL,
      useKnowledgeGrounding: false,
      model: ungrounded,
    });
    await drain(plain.stream);
    expect(model.doStreamCalls[0]!.prompt).toEqual(ungrounded.doStreamCalls[0]!.prompt);
    expect(reports).toHaveLength(1);
  });

  it("per call: knowledgeShadow overrides the instance, both ways", async () => {
    const block = await liveBlock();
    const live = client();
    const shadowModel = answeringModel("ok");
    const shadowed = await live.neurolink.generate({ ...CALL, model: shadowModel, knowledgeShadow: true });
    expect(shadowModel.doGenerateCalls[0]!.prompt).toEqual(await ungroundedPrompt());
    expect(shadowed.knowledge?.shadow).toBe(true);
    expect(live.reports.map((report) => report.primary.block)).toEqual([block]);

    const shadowInstance = client({ shadow: true });
    const groundedModel = answeringModel("ok");
    const grounded = await shadowInstance.neurolink.generate({
      ...CALL,
      model: groundedModel,
      knowledgeShadow: false,
    });
    expect(systemOf(groundedModel.doGenerateCalls[0])).toBe(`${CALL.systemPrompt}\n\n${block}`);
    expect(grounded.knowledge?.shadow).toBeUndefined();
    expect(shadowInstance.reports).toEqual([]);
  });

  it("a call in shadow mode stays ungrounded whatever the engine returns", async () => {
    const { neurolink } = client();
    const engine = (neurolink as unknown as { knowledgeGroundingEngine: { ground: () => unknown } })
      .knowledgeGroundingEngine;
    const original = engine.ground.bind(engine) as (input: unknown) => Promise<KnowledgeGroundingOutcome>;
    // A wrapper that ignores the flag and hands back a live block.
    vi.spyOn(engine, "ground").mockImplementation(async (...args: unknown[]) => {
      const { shadow: _ignored, ...rest } = args[0] as Record<string, unknown>;
      return original(rest);
    });
    const model = answeringModel("ok");
    const result = await neurolink.generate({ ...CALL, model, knowledgeShadow: true });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await ungroundedPrompt());
    expect(result.knowledge?.shadow).toBe(true);
  });

  it("compares alternative configurations on the same turn while the instance stays live", async () => {
    const { neurolink, reports } = client({
      shadowAlternatives: { recommended: { preset: "recommended" }, tight: { context: { maxTokens: 150 } } },
    });
    const model = answeringModel("ok");
    const result = await neurolink.generate({ ...CALL, model });
    const block = await liveBlock();
    // The primary configuration grounds as usual, and its metadata is unchanged by the alternatives.
    expect(systemOf(model.doGenerateCalls[0])).toBe(`${CALL.systemPrompt}\n\n${block}`);
    expect(result.knowledge?.shadow).toBeUndefined();
    expect(reports).toHaveLength(1);
    const report = reports[0]!;
    expect(report.primary).toMatchObject({ injected: true, block });
    expect(Object.keys(report.alternatives)).toEqual(["recommended", "tight"]);
    expect(report.alternatives.recommended).toMatchObject({
      metadata: { shadow: true, selectedIds: ["settings.multi-step-flow"] },
    });
    expect(report.alternatives.recommended!.block).toContain("[KB:settings.multi-step-flow@1]");
    expect(report.alternatives.tight).toMatchObject({ block: null, metadata: { truncated: true } });
  });

  it("fails open as before: a failing engine leaves the prompt ungrounded", async () => {
    const { neurolink, reports } = client({
      shadow: true,
      sources: [
        { id: "broken", entries: [{ id: "x", title: "", summary: "s", domain: "d", integrations: [] }] },
      ],
      logger: null,
    });
    const errors: string[] = [];
    neurolink.on("grounding:error", ({ reason }) => errors.push(reason));
    const model = answeringModel("ok");
    const result = await neurolink.generate({ ...CALL, model });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await ungroundedPrompt());
    expect(result.knowledge).toMatchObject({ shadow: true, failureReason: "validation-failed" });
    expect(errors).toEqual(["validation-failed"]);
    expect(reports.map((report) => report.primary.block)).toEqual([null]);

    const throwing = client({ shadow: true });
    const engine = (throwing.neurolink as unknown as { knowledgeGroundingEngine: { ground: () => unknown } })
      .knowledgeGroundingEngine;
    vi.spyOn(engine, "ground").mockRejectedValue(new Error("engine down"));
    const other = answeringModel("ok");
    const outcome = await throwing.neurolink.generate({ ...CALL, model: other });
    expect(other.doGenerateCalls[0]!.prompt).toEqual(await ungroundedPrompt());
    expect(outcome.knowledge).toBeUndefined();
    expect(throwing.reports).toEqual([]);
  });

  it("rejects a knowledgeShadow that is not a boolean", async () => {
    const { neurolink } = client();
    await expect(
      neurolink.generate({ ...CALL, model: answeringModel("ok"), knowledgeShadow: "yes" as never }),
    ).rejects.toThrow(InvalidOptionsError);
  });
});
