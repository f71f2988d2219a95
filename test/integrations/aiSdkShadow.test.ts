/**
 * Shadow mode in the AI SDK middleware: every turn is grounded and reported (`onGrounding` with the would-be
 * block, `providerMetadata.lexground.shadow`), but the model receives exactly the prompt it would get without the
 * middleware. Per instance (`shadow` option, or the engine's `shadow`) and per call (`providerOptions.lexground`).
 */
import type { LanguageModelV3Prompt } from "@ai-sdk/provider";
import { generateText, streamText, wrapLanguageModel } from "ai";
import { describe, expect, it } from "vitest";
import type { KnowledgeGroundingOutcome } from "../../src/index.js";
import {
  type GroundingCallInfo,
  GroundingIntegrationError,
  type GroundingProviderMetadata,
  groundingMiddleware,
} from "../../src/integrations/aiSdk.js";
import type { KnowledgeEngineLike } from "../../src/integrations/engine.js";
import { searchKnowledgeEntries } from "../../src/integrations/search.js";
import { readyEngine, recordingEngine } from "./fixtures.js";
import { answeringModel } from "./models.js";

const QUESTION = "How do I turn on payouts.instantEnabled?";
const SHOPIFY_QUESTION = "my shopify refund is not syncing";

function lexground(providerMetadata: unknown): GroundingProviderMetadata {
  return (providerMetadata as { lexground: GroundingProviderMetadata }).lexground;
}

/** The prompt the model receives without the middleware. */
async function plainPrompt(prompt = QUESTION): Promise<LanguageModelV3Prompt> {
  const model = answeringModel();
  await generateText({ model, system: "S", prompt, providerOptions: { lexground: { shadow: true } } });
  return model.doGenerateCalls[0]!.prompt;
}

async function liveOutcome(
  query = QUESTION,
  enabledIntegrations?: string[],
): Promise<KnowledgeGroundingOutcome> {
  const engine = await readyEngine();
  return engine.ground({
    query,
    recentTurns: [],
    ...(enabledIntegrations ? { scope: { enabledIntegrations } } : {}),
  });
}

describe("groundingMiddleware: shadow mode", () => {
  it("per instance: the model gets the plain prompt; onGrounding and providerMetadata report the would-be block", async () => {
    const calls: { outcome: KnowledgeGroundingOutcome; info: GroundingCallInfo }[] = [];
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({
        engine: await readyEngine(),
        shadow: true,
        onGrounding: (_metadata, outcome, info) => calls.push({ outcome, info }),
      }),
    });
    const result = await generateText({ model: wrapped, system: "S", prompt: QUESTION });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await plainPrompt());

    const live = await liveOutcome();
    const block = live.ephemeralContext!.content;
    expect(calls).toHaveLength(1);
    expect(calls[0]!.info).toMatchObject({ query: QUESTION, type: "generate", shadow: true });
    expect(calls[0]!.outcome.ephemeralContext).toBeNull();
    expect(calls[0]!.outcome.shadowContext?.content).toBe(block);
    expect(calls[0]!.info.report).toMatchObject({ query: QUESTION, primary: { block, injected: false } });

    const metadata = lexground(result.providerMetadata);
    expect(metadata).toMatchObject({
      grounded: false,
      shadow: true,
      citations: [],
      shadowCitations: [
        "[KB:payouts.instant-payouts@7]",
        "[KB:payouts.payout-schedule@7]",
        "[KB:payouts.eligible-cards@7]",
      ],
      selectedIds: ["payouts.instant-payouts", "payouts.payout-schedule"],
      confidence: "high",
    });
  });

  it("per call: providerOptions.lexground.shadow overrides the instance, both ways, and keeps the default scope", async () => {
    const model = answeringModel();
    const recording = recordingEngine(await readyEngine());
    const live = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: recording, scope: { enabledIntegrations: ["shopify"] } }),
    });
    const shadowed = await generateText({
      model: live,
      system: "S",
      prompt: SHOPIFY_QUESTION,
      providerOptions: { lexground: { shadow: true } },
    });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await plainPrompt(SHOPIFY_QUESTION));
    // The middleware's default scope still applied: the Shopify entry was retrieved.
    expect(lexground(shadowed.providerMetadata).selectedIds).toContain(
      "integrations.shopify-refunds-not-syncing",
    );
    expect(recording.inputs[0]).toMatchObject({ scope: { enabledIntegrations: ["shopify"] }, shadow: true });

    const shadowModel = answeringModel();
    const inShadow = wrapLanguageModel({
      model: shadowModel,
      middleware: groundingMiddleware({ engine: await readyEngine(), shadow: true }),
    });
    const grounded = await generateText({
      model: inShadow,
      system: "S",
      prompt: QUESTION,
      providerOptions: { lexground: { shadow: false } },
    });
    expect(shadowModel.doGenerateCalls[0]!.prompt[0]).toEqual({
      role: "system",
      content: `S\n\n${(await liveOutcome()).ephemeralContext!.content}`,
    });
    expect(lexground(grounded.providerMetadata)).toMatchObject({ grounded: true });
    expect(lexground(grounded.providerMetadata).shadow).toBeUndefined();
  });

  it("follows the engine's own shadow setting, and a call can still go live", async () => {
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine({ shadow: true }) }),
    });
    await generateText({ model: wrapped, system: "S", prompt: QUESTION });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await plainPrompt());
    await generateText({
      model: wrapped,
      system: "S",
      prompt: QUESTION,
      providerOptions: { lexground: { shadow: false } },
    });
    // Not reused from the shadow turn: the live call has its own retrieval and gets the block.
    expect(model.doGenerateCalls[1]!.prompt[0]!.content).toContain("<knowledge_context>");
  });

  it("streams in shadow mode with the plain prompt and the flag on the finish part", async () => {
    const model = answeringModel("Streamed.");
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: await readyEngine(), shadow: true }),
    });
    const result = streamText({ model: wrapped, system: "S", prompt: QUESTION });
    expect(await result.text).toBe("Streamed.");
    expect(model.doStreamCalls[0]!.prompt).toEqual(await plainPrompt());
    expect(lexground(await result.providerMetadata)).toMatchObject({ shadow: true, grounded: false });
  });

  it("a turn in shadow mode stays ungrounded whatever the engine returns", async () => {
    const inner = await readyEngine();
    // A host wrapper that ignores the flag and hands back a live block.
    const ignoring: KnowledgeEngineLike = {
      ground: ({ shadow: _ignored, ...input }) => inner.ground(input),
    };
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: ignoring, shadow: true }),
    });
    const result = await generateText({ model: wrapped, system: "S", prompt: QUESTION });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await plainPrompt());
    expect(lexground(result.providerMetadata).shadow).toBe(true);
  });

  it("fails open as before", async () => {
    const failing: KnowledgeEngineLike = {
      ground: async () => {
        throw new Error("engine down");
      },
    };
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({ engine: failing, shadow: true }),
    });
    const result = await generateText({ model: wrapped, system: "S", prompt: QUESTION });
    expect(model.doGenerateCalls[0]!.prompt).toEqual(await plainPrompt());
    expect(lexground(result.providerMetadata)).toMatchObject({
      grounded: false,
      shadow: true,
      failureReason: "Error: engine down",
      shadowCitations: [],
    });
  });

  it("reports the alternatives of an engine configured with them", async () => {
    const calls: GroundingCallInfo[] = [];
    const model = answeringModel();
    const wrapped = wrapLanguageModel({
      model,
      middleware: groundingMiddleware({
        engine: await readyEngine({ shadowAlternatives: { recommended: { preset: "recommended" } } }),
        onGrounding: (_metadata, _outcome, info) => calls.push(info),
      }),
    });
    await generateText({ model: wrapped, system: "S", prompt: QUESTION });
    // Live primary: the block is in the prompt; the alternative is reported beside it.
    expect(model.doGenerateCalls[0]!.prompt[0]!.content).toContain("<knowledge_context>");
    expect(calls[0]!.shadow).toBe(false);
    expect(calls[0]!.report?.primary.injected).toBe(true);
    expect(calls[0]!.report?.alternatives.recommended?.block).toContain("[KB:payouts.instant-payouts@7]");
  });

  it("rejects a shadow option that is not a boolean, naming the place", async () => {
    expect(() =>
      groundingMiddleware({ engine: { ground: async () => liveOutcome() }, shadow: 1 as never }),
    ).toThrow(new GroundingIntegrationError("groundingMiddleware options.shadow", "must be a boolean"));
    const wrapped = wrapLanguageModel({
      model: answeringModel(),
      middleware: groundingMiddleware({ engine: await readyEngine() }),
    });
    const error = await generateText({
      model: wrapped,
      prompt: QUESTION,
      providerOptions: { lexground: { shadow: "yes" } },
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GroundingIntegrationError);
    expect((error as GroundingIntegrationError).path).toBe("providerOptions.lexground.shadow");
  });

  it("search tools ignore shadow mode and the alternatives: a search is asked for, not injected", async () => {
    const recording = recordingEngine(
      await readyEngine({ shadow: true, shadowAlternatives: { recommended: { preset: "recommended" } } }),
    );
    const { hits, outcome } = await searchKnowledgeEntries(recording, { query: QUESTION });
    expect(hits.map((hit) => hit.entry.id)).toContain("payouts.instant-payouts");
    expect(outcome.ephemeralContext?.content).toBe((await liveOutcome()).ephemeralContext!.content);
    expect(outcome.alternatives).toBeUndefined();
    expect(recording.inputs[0]).toMatchObject({ shadow: false, shadowAlternatives: false });
  });
});
