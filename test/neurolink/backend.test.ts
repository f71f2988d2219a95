/**
 * The client over an external index backend (issue 15): a replica's client configured with a backend and no
 * sources serves what a writer published, with the block in the system prompt, as an engine with a backend does;
 * without a backend, sources or an artifact, the NeuroLink warning stands.
 */
import { afterEach, describe, expect, it } from "vitest";
import { clearKnowledgeIndexCache, KnowledgeGroundingEngine } from "../../src/index.js";
import { KNOWLEDGE_NO_SOURCES_WARNING, NeuroLink } from "../../src/neurolink/index.js";
import { PromisedBackend } from "../support/promisedBackend.js";
import { recordingLogger, SOURCES } from "./support/fixtures.js";
import { groundedTurn } from "./support/groundedTurn.js";
import { systemOf } from "./support/models.js";

afterEach(() => clearKnowledgeIndexCache());

/** One grounded turn, with the system prompt its model call received. */
async function turnWithSystem(neurolink: NeuroLink) {
  const { result, model } = await groundedTurn(neurolink);
  return { result, system: systemOf(model.doGenerateCalls[0]) };
}

describe("the client over a backend", () => {
  it("a reader without sources serves the writer's publication, like a client holding the sources", async () => {
    const backend = new PromisedBackend();
    await new KnowledgeGroundingEngine({ enabled: true, sources: SOURCES, backend }).ready();
    const logger = recordingLogger();
    const reader = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: [], backend }, logger });
    expect(await reader.knowledgeReady()).toMatchObject({ ready: true, backend: { generation: 1 } });
    const local = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: SOURCES }, logger });

    const [fromBackend, fromSources] = [await turnWithSystem(reader), await turnWithSystem(local)];
    expect(fromBackend.result.knowledge?.selectedIds.length).toBeGreaterThan(0);
    expect(fromBackend.result.knowledge?.selectedIds).toEqual(fromSources.result.knowledge?.selectedIds);
    expect(fromBackend.system).toContain("<knowledge_context>");
    expect(fromBackend.system).toEqual(fromSources.system);
    expect(logger.warnings).toEqual([]);
  });

  it("a reader started before anything is published fails open, then serves once a writer publishes", async () => {
    const backend = new PromisedBackend();
    const reader = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: [], backend },
      logger: recordingLogger(),
    });
    const before = await turnWithSystem(reader);
    expect(before.result.knowledge?.failureReason).toBe("index-not-ready");
    expect(before.system ?? "").not.toContain("<knowledge_context>");
    await new KnowledgeGroundingEngine({ enabled: true, sources: SOURCES, backend }).ready();
    const after = await turnWithSystem(reader);
    expect(after.result.knowledge?.failureReason).toBeUndefined();
    expect(after.system).toContain("<knowledge_context>");
  });

  it("enabled with neither sources, an artifact nor a backend keeps NeuroLink's warning", () => {
    const logger = recordingLogger();
    const neurolink = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: [] }, logger });
    expect(neurolink.getKnowledgeStatus()).toBeNull();
    expect(logger.warnings).toEqual([[KNOWLEDGE_NO_SOURCES_WARNING]]);
  });
});
