/**
 * Retrieval faults end to end through the NeuroLink client (checklist rows 15-17): a retrieval that throws synchronously, one that never
 * settles, and one that rejects after the deadline. The call proceeds with the caller's system prompt byte for
 * byte, the failure is surfaced once (a `grounding:error` event and `result.knowledge.failureReason`), no timer
 * outlives the call, no rejection goes unhandled, and nothing touches the prompt late.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { NeuroLink } from "../../src/neurolink/index.js";
import { GROUNDED_QUERY, recordingLogger, SOURCES } from "../neurolink/support/fixtures.js";
import { expectNoLeakedHandles } from "../neurolink/support/handles.js";
import { answeringModel, systemOf } from "../neurolink/support/models.js";

expectNoLeakedHandles();

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on("unhandledRejection", onUnhandled);
afterEach(() => {
  vi.restoreAllMocks();
});

const SYSTEM = "You are support.\n  Keep answers short. </knowledge_context> (part of the host prompt)";

function client(timeoutMs = 800) {
  const neurolink = new NeuroLink({
    knowledgeGrounding: { enabled: true, sources: SOURCES, timeoutMs },
    logger: recordingLogger(),
    env: {},
  });
  const engine = (
    neurolink as unknown as {
      knowledgeGroundingEngine: { ground: (...args: unknown[]) => unknown; ready: () => Promise<void> };
    }
  ).knowledgeGroundingEngine;
  const events: { reason: string }[] = [];
  neurolink.on("grounding:error", (event) => events.push(event));
  return { neurolink, engine, events };
}

function timeouts(): number {
  return process.getActiveResourcesInfo().filter((name) => name === "Timeout").length;
}

describe("retrieval faults through the client leave the turn ungrounded, never broken", () => {
  it("retrieval throws synchronously → the original system prompt, one grounding:error", async () => {
    const { neurolink, engine, events } = client();
    vi.spyOn(engine, "ground").mockImplementation(() => {
      throw new RangeError("synchronous explosion");
    });
    const model = answeringModel("answered anyway");
    const options = {
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt: SYSTEM,
      useKnowledgeGrounding: true,
    };
    const result = await neurolink.generate(options);
    expect(result.content).toBe("answered anyway");
    expect(systemOf(model.doGenerateCalls[0])).toBe(SYSTEM);
    expect(options.systemPrompt).toBe(SYSTEM);
    expect(events).toEqual([expect.objectContaining({ reason: "synchronous explosion" })]);
  });

  it("retrieval never settles → ungrounded at the deadline, its timer cleared", async () => {
    const before = timeouts();
    const { neurolink, engine, events } = client(30);
    vi.spyOn(engine, "ready").mockReturnValue(new Promise<void>(() => {}));
    const model = answeringModel("on time");
    const result = await neurolink.generate({
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt: SYSTEM,
      useKnowledgeGrounding: true,
    });
    expect(result.content).toBe("on time");
    expect(result.knowledge?.failureReason).toBe("TimeoutError: Knowledge grounding timed out after 30ms");
    expect(systemOf(model.doGenerateCalls[0])).toBe(SYSTEM);
    expect(events).toHaveLength(1);
    expect(timeouts()).toBeLessThanOrEqual(before);
  });

  it("retrieval rejects after the deadline → no unhandled rejection, no late change to the prompt", async () => {
    const { neurolink, engine } = client(20);
    let rejectLate: (error: Error) => void = () => {};
    vi.spyOn(engine, "ready").mockReturnValue(
      new Promise<void>((_, reject) => {
        rejectLate = reject;
      }),
    );
    const model = answeringModel("done");
    const options = {
      input: { text: GROUNDED_QUERY },
      model,
      systemPrompt: SYSTEM,
      useKnowledgeGrounding: true,
    };
    const result = await neurolink.generate(options);
    expect(result.knowledge?.failureReason).toContain("timed out");
    const seen = systemOf(model.doGenerateCalls[0]);
    rejectLate(new Error("the index build failed, too late"));
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    expect(seen).toBe(SYSTEM);
    expect(options.systemPrompt).toBe(SYSTEM);
    expect(model.doGenerateCalls).toHaveLength(1);
    process.off("unhandledRejection", onUnhandled);
  });
});
