/**
 * OpenTelemetry the AI SDK way: when the host has `@opentelemetry/api` and registered a tracer provider, the Node
 * entry points trace groundings (and the builds of the engines they construct) with the `lexground` tracer, as
 * children of the active span: the AI SDK's own spans when `experimental_telemetry` is on. No tracer is configured
 * on the engines here; the spans are recorded by the SDK's in-memory exporter.
 */
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { generateText, stepCountIs, streamText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { clearKnowledgeIndexCache, KnowledgeGroundingEngine } from "../../src/index.js";
import { groundingMiddleware } from "../../src/integrations/aiSdk.js";
import { searchKnowledgeTool } from "../../src/integrations/aiSdkTool.js";
import { NeuroLink } from "../../src/neurolink/index.js";
import { hostOpenTelemetryTracer, openTelemetryTracerFrom } from "../../src/openTelemetry.js";
import { helpCenter } from "./fixtures.js";
import { answeringModel, textResult, toolCallResult } from "./models.js";

const QUESTION = "How do I turn on payouts.instantEnabled?";
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

const named = (name: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((span) => span.name === name);

/** The names of a span's ancestors, nearest first. */
function ancestors(span: ReadableSpan): string[] {
  const byId = new Map(exporter.getFinishedSpans().map((each) => [each.spanContext().spanId, each]));
  const names: string[] = [];
  let parentId = span.parentSpanContext?.spanId;
  while (parentId !== undefined) {
    const parent = byId.get(parentId);
    if (!parent) break;
    names.push(parent.name);
    parentId = parent.parentSpanContext?.spanId;
  }
  return names;
}

const engineOf = () => new KnowledgeGroundingEngine({ enabled: true, sources: [helpCenter], logger: null });

describe("OpenTelemetry through the host's @opentelemetry/api", () => {
  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => {
    trace.disable();
    context.disable();
  });
  beforeEach(() => {
    exporter.reset();
    clearKnowledgeIndexCache();
  });

  it("the middleware's grounding is a span under the AI SDK's generateText span, with no tracer configured", async () => {
    const engine = engineOf();
    await engine.ready();
    const model = wrapLanguageModel({ model: answeringModel(), middleware: groundingMiddleware({ engine }) });
    await generateText({ model, prompt: QUESTION, experimental_telemetry: { isEnabled: true } });
    const [grounding] = named("lexground.ground");
    expect(
      grounding,
      exporter
        .getFinishedSpans()
        .map((span) => span.name)
        .join(", "),
    ).toBeDefined();
    expect(grounding!.instrumentationScope.name).toBe("lexground");
    expect(ancestors(grounding!)).toEqual(["ai.generateText.doGenerate", "ai.generateText"]);
    expect(grounding!.spanContext().traceId).toBe(named("ai.generateText")[0]!.spanContext().traceId);
    expect(grounding!.attributes).toMatchObject({
      "lexground.grounded": true,
      "lexground.selected_ids": expect.arrayContaining(["payouts.instant-payouts"]),
      "lexground.confidence": "high",
    });
  });

  it("and under streamText's span when the turn streams", async () => {
    const engine = engineOf();
    await engine.ready();
    const model = wrapLanguageModel({ model: answeringModel(), middleware: groundingMiddleware({ engine }) });
    const result = streamText({ model, prompt: QUESTION, experimental_telemetry: { isEnabled: true } });
    await result.consumeStream();
    await result.text;
    const [grounding] = named("lexground.ground");
    expect(ancestors(grounding!)).toEqual(["ai.streamText.doStream", "ai.streamText"]);
  });

  it("an engine the middleware builds from a config traces its build; the search tool's search is under ai.toolCall", async () => {
    const middleware = groundingMiddleware({ config: { enabled: true, sources: [helpCenter] } });
    await generateText({
      model: wrapLanguageModel({ model: answeringModel(), middleware }),
      prompt: QUESTION,
    });
    expect(named("lexground.build")[0]?.attributes).toMatchObject({ "lexground.live": true });
    exporter.reset();

    const model = new MockLanguageModelV3({
      doGenerate: [toolCallResult("searchKnowledge", { query: QUESTION }), textResult("Done.")],
    });
    await generateText({
      model,
      tools: { searchKnowledge: searchKnowledgeTool(engineOf()) },
      stopWhen: stepCountIs(3),
      prompt: QUESTION,
      experimental_telemetry: { isEnabled: true },
    });
    const [search] = named("lexground.ground");
    expect(ancestors(search!)).toEqual(["ai.toolCall", "ai.generateText"]);
  });

  it("the client traces its build and each turn, under the host's active span", async () => {
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: [helpCenter] },
      logger: { warn() {}, error() {} },
    });
    await neurolink.knowledgeReady();
    expect(named("lexground.build")).toHaveLength(1);
    await provider.getTracer("host").startActiveSpan("http.request", async (request) => {
      await neurolink.generate({
        input: { text: QUESTION },
        model: answeringModel(),
        useKnowledgeGrounding: true,
      });
      request.end();
    });
    const [grounding] = named("lexground.ground");
    expect(ancestors(grounding!)).toEqual(["http.request"]);
  });

  it("telemetry.isEnabled false refuses the host's tracer; an explicit tracer is used instead of it", async () => {
    const off = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [helpCenter],
      telemetry: { isEnabled: false },
    });
    const model = wrapLanguageModel({
      model: answeringModel(),
      middleware: groundingMiddleware({ engine: off }),
    });
    await generateText({ model, prompt: QUESTION, experimental_telemetry: { isEnabled: true } });
    expect(named("ai.generateText")).toHaveLength(1);
    expect(named("lexground.ground")).toEqual([]);

    const ownExporter = new InMemorySpanExporter();
    const own = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(ownExporter)] });
    const explicit = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [helpCenter],
      telemetry: { tracer: own.getTracer("mine") },
    });
    await generateText({
      model: wrapLanguageModel({
        model: answeringModel(),
        middleware: groundingMiddleware({ engine: explicit }),
      }),
      prompt: QUESTION,
    });
    expect(named("lexground.ground")).toEqual([]);
    expect(ownExporter.getFinishedSpans().map((span) => span.name)).toEqual([
      "lexground.build",
      "lexground.ground",
    ]);
  });

  it("a host's own engine wrapper gets the turn's input unchanged (no tracer added)", async () => {
    const engine = engineOf();
    const inputs: object[] = [];
    const wrapper = {
      ground: (input: Parameters<KnowledgeGroundingEngine["ground"]>[0]) => {
        inputs.push(input);
        return engine.ground(input);
      },
    };
    await generateText({
      model: wrapLanguageModel({
        model: answeringModel(),
        middleware: groundingMiddleware({ engine: wrapper }),
      }),
      prompt: QUESTION,
    });
    expect(inputs).toEqual([{ query: QUESTION, recentTurns: [] }]);
  });

  it("without @opentelemetry/api (or in a runtime without Node's require) there is no tracer and nothing fails", () => {
    expect(hostOpenTelemetryTracer()).not.toBeNull();
    const notFound = Object.assign(new Error("Cannot find module '@opentelemetry/api'"), {
      code: "MODULE_NOT_FOUND",
    });
    expect(
      openTelemetryTracerFrom(() => {
        throw notFound;
      }),
    ).toBeNull();
    expect(openTelemetryTracerFrom(() => undefined)).toBeNull();
    expect(openTelemetryTracerFrom(() => ({ trace: {} }))).toBeNull();
  });
});
