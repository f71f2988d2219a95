/**
 * The middleware over real HTTP: `@ai-sdk/openai-compatible` against the local OpenAI-compatible server of the
 * client tests (127.0.0.1, port 0).
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, streamText, wrapLanguageModel } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GroundingProviderMetadata, groundingMiddleware } from "../../src/integrations/aiSdk.js";
import {
  type OpenAICompatibleTestServer,
  startOpenAICompatibleServer,
} from "../neurolink/support/openaiCompatibleServer.js";
import { readyEngine, recordingEngine } from "./fixtures.js";
import { fallbackModel } from "./models.js";

const QUESTION = "my shopify refund is not syncing";

let server: OpenAICompatibleTestServer;

beforeAll(async () => {
  server = await startOpenAICompatibleServer();
  server.script("support-model", {
    kind: "text",
    text: "Grant write_refunds [KB:integrations.shopify-refunds-not-syncing@7].",
  });
  server.script("down-model", { kind: "error", status: 503, message: "overloaded" });
});

afterAll(async () => {
  await server.close();
});

function provider() {
  return createOpenAICompatible({ name: "local", baseURL: server.baseURL, apiKey: "test-key" });
}

function requestsFor(model: string) {
  return server.requests.filter((request) => request.model === model);
}

describe("groundingMiddleware over HTTP (@ai-sdk/openai-compatible)", () => {
  it("sends the grounded system message on the wire and keeps its namespace out of the request body", async () => {
    const engine = await readyEngine();
    const expected = await engine.ground({ query: QUESTION, scope: { enabledIntegrations: ["shopify"] } });
    const before = requestsFor("support-model").length;
    const result = await generateText({
      model: wrapLanguageModel({
        model: provider()("support-model"),
        middleware: groundingMiddleware({ engine }),
      }),
      system: "You are Kestrel's support assistant.",
      prompt: QUESTION,
      providerOptions: { lexground: { enabledIntegrations: ["shopify"] } },
    });

    expect(result.text).toBe("Grant write_refunds [KB:integrations.shopify-refunds-not-syncing@7].");
    const request = requestsFor("support-model")[before]!;
    expect(request.stream).toBe(false);
    expect(request.messages).toEqual([
      {
        role: "system",
        content: `You are Kestrel's support assistant.\n\n${expected.ephemeralContext!.content}`,
      },
      { role: "user", content: QUESTION },
    ]);
    expect(JSON.stringify(request.body)).not.toContain("enabledIntegrations");
    const metadata = result.providerMetadata?.lexground as GroundingProviderMetadata;
    expect(metadata.selectedIds[0]).toBe("integrations.shopify-refunds-not-syncing");
  });

  it("grounds a streamed call the same way", async () => {
    const before = requestsFor("support-model").length;
    const result = streamText({
      model: wrapLanguageModel({
        model: provider()("support-model"),
        middleware: groundingMiddleware({ engine: await readyEngine() }),
      }),
      prompt: QUESTION,
      providerOptions: { lexground: { enabledIntegrations: ["shopify"] } },
    });
    expect(await result.text).toBe("Grant write_refunds [KB:integrations.shopify-refunds-not-syncing@7].");
    const request = requestsFor("support-model")[before]!;
    expect(request.stream).toBe(true);
    expect(request.messages[0]!.role).toBe("system");
    expect(String(request.messages[0]!.content)).toContain("[KB:integrations.shopify-refunds-not-syncing@7]");
    const metadata = (await result.providerMetadata)?.lexground as GroundingProviderMetadata;
    expect(metadata.citations).toContain("[KB:integrations.shopify-refunds-not-syncing@7]");
  });

  it("outside a fallback over two HTTP models, retrieves once and sends the same block to both", async () => {
    const recording = recordingEngine(await readyEngine());
    const downBefore = requestsFor("down-model").length;
    const upBefore = requestsFor("support-model").length;
    const local = provider();
    const result = await generateText({
      model: wrapLanguageModel({
        model: fallbackModel([local("down-model"), local("support-model")]),
        middleware: groundingMiddleware({ engine: recording }),
      }),
      prompt: QUESTION,
      maxRetries: 0,
    });
    expect(result.text).toContain("write_refunds");
    expect(recording.inputs).toHaveLength(1);
    const down = requestsFor("down-model").slice(downBefore);
    const up = requestsFor("support-model").slice(upBefore);
    expect(down).toHaveLength(1);
    expect(up).toHaveLength(1);
    for (const request of [...down, ...up]) expect(request.messages[0]).toEqual(up[0]!.messages[0]);
    expect(String(up[0]!.messages[0]!.content)).toContain("<knowledge_context>");
  });
});
