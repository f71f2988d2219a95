/**
 * Drop-in compatibility (issue 11, "NeuroLink registries we refuse"): registries NeuroLink accepts must ground
 * turns here too. Ids with spaces, non-ASCII letters or brackets and versions such as "", "v1 beta" or "1.0@rc"
 * were refused with validation errors, which turned grounding off for the whole registry.
 */
import { describe, expect, it } from "vitest";
import {
  buildKnowledgeIndexCacheKey,
  clearKnowledgeIndexCache,
  KnowledgeGroundingEngine,
  type KnowledgeSource,
  parseKnowledgeCitation,
} from "../../src/index.js";
import { normalizeSources } from "../../src/knowledge/resolve.js";
import { NeuroLink } from "../../src/neurolink/index.js";
import { recordingLogger } from "./support/fixtures.js";
import { answeringModel, systemOf } from "./support/models.js";

const entry = (id: string, title: string) => ({
  id,
  title,
  summary: `${title}: what it controls.`,
  domain: "docs",
  integrations: [] as string[],
});

const REGISTRY: KnowledgeSource[] = [
  { id: "spaces", version: "", entries: [entry("payments settings", "Payments Settings")] },
  { id: "unicode", version: "v1 beta", entries: [entry("Ünïcode id", "Unicode Identifiers")] },
  { id: "brackets", version: "1.0@rc", entries: [entry("a[1]", "Bracketed Identifier")] },
];

describe("registries NeuroLink accepts ground turns here too", () => {
  it("the engine builds them and cites the original ids and versions; markers parse back", async () => {
    clearKnowledgeIndexCache();
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: REGISTRY });
    await engine.ready();
    const status = engine.getStatus();
    expect(status.ready).toBe(true);
    expect(status.validationIssues.filter((issue) => issue.level === "error")).toEqual([]);
    expect(
      status.validationIssues
        .filter((issue) => issue.code === "encoded-in-citation")
        .map((issue) => issue.path),
    ).toEqual([
      "sources[0].entries[0].id",
      "sources[1].version",
      "sources[1].entries[0].id",
      "sources[2].version",
      "sources[2].entries[0].id",
    ]);
    for (const [query, citation, marker] of [
      ["payments settings", { id: "payments settings", version: "" }, "[KB:payments%20settings@]"],
      ["Ünïcode id", { id: "Ünïcode id", version: "v1 beta" }, "[KB:Ünïcode%20id@v1%20beta]"],
      ["bracketed identifier", { id: "a[1]", version: "1.0@rc" }, "[KB:a%5B1%5D@1.0%40rc]"],
    ] as const) {
      const outcome = await engine.ground({ query });
      expect(outcome.metadata.failureReason).toBeUndefined();
      expect(outcome.ephemeralContext?.citations?.[0]).toEqual(citation);
      expect(outcome.ephemeralContext?.content).toContain(`\n${marker}\n`);
      expect(parseKnowledgeCitation(marker)).toEqual(citation);
    }
  });

  it("the NeuroLink client grounds a turn with them (switching the import keeps the registry)", async () => {
    const logger = recordingLogger();
    const neurolink = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: REGISTRY }, logger });
    const model = answeringModel("grounded");
    const result = await neurolink.generate({
      input: { text: "where are payments settings" },
      model,
      useKnowledgeGrounding: true,
    });
    expect(neurolink.getKnowledgeStatus()?.ready).toBe(true);
    expect(result.knowledge?.failureReason).toBeUndefined();
    expect(result.knowledge?.selectedIds).toContain("payments settings");
    expect(systemOf(model.doGenerateCalls[0])).toContain("[KB:payments%20settings@]");
  });

  it("buildKnowledgeIndexCacheKey accepts NeuroLink's positional form (sources, fallbackVersion, fieldWeights)", () => {
    const sources: KnowledgeSource[] = [{ id: "kb", entries: [entry("a", "A")] }];
    const weights = { title: 7 };
    const positional = buildKnowledgeIndexCacheKey(sources, "0", weights);
    const grouped = buildKnowledgeIndexCacheKey(normalizeSources(sources, { manifestVersion: "0" }).groups, {
      fieldWeights: weights,
    });
    expect(positional).toBe(grouped);
    expect(buildKnowledgeIndexCacheKey(sources, "2")).not.toBe(buildKnowledgeIndexCacheKey(sources, "0"));
    expect(buildKnowledgeIndexCacheKey(sources, "0")).toBe(
      buildKnowledgeIndexCacheKey(normalizeSources(sources, { manifestVersion: "0" }).groups),
    );
    expect(positional).toContain("weights=title=7,");
  });
});
