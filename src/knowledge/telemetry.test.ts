import { context, type Tracer } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { payoutSources } from "../../test/fixtures/payouts.js";
import type { KnowledgeTelemetryTracer } from "../types/knowledge.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import { clearKnowledgeIndexCache } from "./indexCache.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
// An @opentelemetry/api Tracer is what hosts pass: this assignment is the type check.
const tracer: KnowledgeTelemetryTracer = provider.getTracer("lexground-test") satisfies Tracer;

const sources = payoutSources("1");

const spans = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name);

describe("OpenTelemetry spans", () => {
  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
  });
  afterAll(() => {
    context.disable();
  });
  beforeEach(() => {
    exporter.reset();
    clearKnowledgeIndexCache();
  });

  it("a grounding is a span with what a team needs: duration, candidates, ids, confidence, tokens, preset", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, telemetry: { tracer } });
    const outcome = await engine.ground({ query: "what does payouts.instantEnabled do?" });
    const [span] = spans("lexground.ground");
    expect(span).toBeDefined();
    expect(span!.attributes).toMatchObject({
      "lexground.preset": engine.getStatus().configuration!.preset,
      "lexground.grounded": true,
      "lexground.candidate_count": outcome.metadata.candidateCount,
      "lexground.selected_ids": outcome.metadata.selectedIds,
      "lexground.expanded_ids": outcome.metadata.expandedIds,
      "lexground.confidence": "high",
      "lexground.context_tokens": outcome.metadata.contextTokens,
      "lexground.truncated": false,
      "lexground.duration_ms": outcome.metadata.durationMs,
    });
    expect(outcome.metadata.selectedIds).toContain("payouts.instant");
    expect(span!.attributes["lexground.failure_reason"]).toBeUndefined();
    expect(span!.status.code).toBe(0);
  });

  it("the build and each rebuild are spans (entries, origin, validation counts); a blocked set is an error", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      telemetry: { tracer },
      logger: null,
    });
    await engine.ready();
    const [build] = spans("lexground.build");
    expect(build!.attributes).toMatchObject({
      "lexground.operation": "build",
      "lexground.live": true,
      "lexground.entry_count": 2,
      "lexground.snapshot_origin": "built",
      "lexground.validation.error_count": 0,
    });
    const invalid = await engine.rebuild([{ id: "broken", version: "1", entries: [{ id: "x" }] }] as never);
    expect(invalid.live).toBe(false);
    const [rebuild] = spans("lexground.rebuild");
    expect(rebuild!.attributes).toMatchObject({
      "lexground.operation": "rebuild",
      "lexground.live": false,
      "lexground.reason": "validation-failed",
    });
    expect(rebuild!.attributes["lexground.validation.error_count"]).toBeGreaterThan(0);
    expect(rebuild!.status).toMatchObject({ code: 2, message: expect.stringMatching(/validation failed/) });
  });

  it("a turn that fails open records the failure reason and an error status", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [], telemetry: { tracer } });
    const outcome = await engine.ground({ query: "anything" });
    expect(outcome.metadata.failureReason).toBe("index-not-ready");
    const [span] = spans("lexground.ground");
    expect(span!.attributes["lexground.failure_reason"]).toBe("index-not-ready");
    expect(span!.attributes["lexground.grounded"]).toBe(false);
    expect(span!.status).toMatchObject({ code: 2, message: "index-not-ready" });
  });

  it("nests under the active span (the AI SDK's, when grounding runs inside generateText)", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, telemetry: { tracer } });
    await engine.ready();
    exporter.reset();
    await provider.getTracer("ai").startActiveSpan("ai.generateText", async (parent) => {
      await engine.ground({ query: "payout schedule" });
      parent.end();
    });
    const [parent] = spans("ai.generateText");
    const [child] = spans("lexground.ground");
    expect(child!.spanContext().traceId).toBe(parent!.spanContext().traceId);
    expect(child!.parentSpanContext?.spanId).toBe(parent!.spanContext().spanId);
  });

  it("no tracer, or isEnabled: false, means no spans; a throwing tracer never changes the outcome", async () => {
    const plain = await new KnowledgeGroundingEngine({ enabled: true, sources }).ground({ query: "payouts" });
    const off = await new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      telemetry: { tracer, isEnabled: false },
    }).ground({ query: "payouts" });
    expect(exporter.getFinishedSpans()).toEqual([]);
    const throwing: KnowledgeTelemetryTracer = {
      startActiveSpan() {
        throw new Error("tracer down");
      },
    };
    const broken = await new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      telemetry: { tracer: throwing },
    }).ground({ query: "payouts" });
    const strip = (value: typeof plain) => ({
      ...value,
      metadata: { ...value.metadata, durationMs: 0 },
      retrieval: value.retrieval && { ...value.retrieval, durationMs: 0 },
    });
    expect(strip(off)).toEqual(strip(plain));
    expect(strip(broken)).toEqual(strip(plain));
  });

  it("a telemetry option that is not a tracer is a configuration error at its path", () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      telemetry: { tracer: {} as never },
      logger: null,
    });
    expect(engine.getStatus().validationIssues).toEqual([
      expect.objectContaining({ code: "bad-config", path: "telemetry.tracer" }),
    ]);
  });
});
