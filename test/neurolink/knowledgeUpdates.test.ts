/**
 * Incremental updates through the client: updateKnowledge adds or replaces entries and removeKnowledge drops them
 * without a rebuild; the next grounded turn sees the change; an invalid change is refused and the previous
 * snapshot keeps serving; an instance without knowledge grounding says so.
 */
import { afterEach, describe, expect, it } from "vitest";
import { clearKnowledgeIndexCache } from "../../src/index.js";
import { KnowledgeNotConfiguredError, NeuroLink } from "../../src/neurolink/index.js";
import { SCOPE, SOURCES } from "./support/fixtures.js";
import { answeringModel } from "./support/models.js";

afterEach(() => clearKnowledgeIndexCache());

describe("NeuroLink.updateKnowledge / removeKnowledge", () => {
  it("changes what the next grounded turn selects, without a rebuild", async () => {
    const neurolink = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: SOURCES } });
    await neurolink.knowledgeReady();
    const entry = {
      id: "zebra.crossing",
      title: "Zebra crossing rules",
      summary: "How zebra crossings work for pedestrians.",
      domain: "traffic",
      integrations: [],
    };
    const added = await neurolink.updateKnowledge([entry]);
    expect(added).toMatchObject({ live: true, snapshotOrigin: "update", issues: [] });
    const model = answeringModel("ok");
    const result = await neurolink.generate({
      input: { text: "zebra crossing rules" },
      model,
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
    });
    expect(result.knowledge?.selectedIds).toContain("zebra.crossing");
    const refused = await neurolink.updateKnowledge([{ ...entry, title: 7 } as never]);
    expect(refused).toMatchObject({ live: false, reason: "validation-failed" });
    const removed = await neurolink.removeKnowledge(["zebra.crossing"]);
    expect(removed.live).toBe(true);
    const after = await neurolink.generate({
      input: { text: "zebra crossing rules" },
      model,
      useKnowledgeGrounding: true,
      knowledgeContext: SCOPE,
    });
    expect(after.knowledge?.selectedIds ?? []).not.toContain("zebra.crossing");
  });

  it("throws KnowledgeNotConfiguredError without knowledge grounding", async () => {
    const neurolink = new NeuroLink({});
    await expect(neurolink.removeKnowledge(["a"])).rejects.toBeInstanceOf(KnowledgeNotConfiguredError);
  });
});
