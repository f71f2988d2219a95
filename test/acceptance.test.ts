/**
 * NeuroLink's own acceptance cases, run against lexground's API.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  assembleKnowledgeContext,
  buildIndexSnapshot,
  buildKnowledgeIndexCacheKey,
  clearKnowledgeIndexCache,
  getOrBuildKnowledgeIndexSnapshot,
  type KnowledgeEntryInput,
  KnowledgeGroundingEngine,
  manifestToSources,
  normalizeAndValidate,
  normalizePhrases,
  normalizeText,
  resolveEntry,
  retrieve,
  tokenize,
} from "../src/index.js";
import { normalizeSources } from "../src/knowledge/resolve.js";
import { E1, E3, makeRequest, policiesSource, RESOLVED, settingsSource } from "./fixtures/registry.js";

function snapshotOf(...sources: Parameters<typeof normalizeAndValidate>[0][]) {
  const { entries, validation } = normalizeAndValidate(sources.flat() as never, { manifestVersion: "0" });
  expect(validation.ok).toBe(true);
  return buildIndexSnapshot(entries);
}

const codes = (result: ReturnType<typeof normalizeAndValidate>) =>
  result.validation.issues.map((issue) => issue.code);

afterEach(() => clearKnowledgeIndexCache());

describe("NeuroLink acceptance: normalize", () => {
  it("splits camelCase", () => expect(normalizeText("enableMultiStepFlow")).toBe("enable multi step flow"));
  it("splits punctuation", () => expect(normalizeText("Multi-Step Flow")).toBe("multi step flow"));
  it("splits constants and acronyms", () => {
    expect(normalizeText("ACCOUNT_STATUS")).toBe("account status");
    expect(normalizeText("enableURLReading")).toBe("enable url reading");
  });
  it("collapses and trims whitespace", () =>
    expect(normalizeText("  Access   Policy  ")).toBe("access policy"));
  it("is idempotent", () => {
    const once = normalizeText("customAccessOptionsV2Enabled");
    expect(normalizeText(once)).toBe(once);
  });
  it("tokenizes", () => {
    expect(tokenize("gemini-3-flash")).toEqual(["gemini", "3", "flash"]);
    expect(tokenize("")).toEqual([]);
  });
  it("normalizes phrase lists", () => {
    expect(normalizePhrases(["Multi-Step Flow", "multi step flow", ""])).toEqual(["multi step flow"]);
  });
});

describe("NeuroLink acceptance: resolve and validate", () => {
  it("applies defaults", () => {
    const entry = resolveEntry({ id: "x", title: "X", summary: "s", domain: "d", integrations: [] }, "7");
    expect(entry).toMatchObject({
      domain: "d",
      status: "active",
      kind: "text",
      version: "7",
      aliases: [],
      body: "",
    });
  });
  it("copies arrays", () => {
    const aliases = ["a"];
    const input: KnowledgeEntryInput = {
      id: "x",
      title: "X",
      summary: "s",
      domain: "d",
      integrations: ["i"],
      aliases,
    };
    const entry = resolveEntry(input, "1");
    aliases.push("b");
    input.integrations.push("j");
    expect(entry.aliases).toEqual(["a"]);
    expect(entry.integrations).toEqual(["i"]);
  });
  it("integrations missing or not strings are errors", () => {
    const result = normalizeAndValidate(
      [
        {
          id: "s",
          entries: [
            { id: "a", title: "A", summary: "s", domain: "d" } as never,
            { id: "b", title: "B", summary: "s", domain: "d", integrations: ["ok", 123] as never },
          ],
        },
      ],
      { manifestVersion: "0" },
    );
    expect(result.validation.ok).toBe(false);
    expect(codes(result)).toEqual(expect.arrayContaining(["missing-integrations", "bad-integrations"]));
  });
  it("duplicate ids are errors", () => {
    const entry = { id: "a", title: "A", summary: "s", domain: "d", integrations: [] };
    const result = normalizeAndValidate([{ id: "s", entries: [entry, entry] }], { manifestVersion: "0" });
    expect(result.validation.ok).toBe(false);
    expect(codes(result)).toContain("duplicate-entry-id");
  });
  it("a missing title and domain are errors", () => {
    const result = normalizeAndValidate(
      [{ id: "s", entries: [{ id: "a", title: "", summary: "s", integrations: [] } as never] }],
      { manifestVersion: "0" },
    );
    expect(result.validation.ok).toBe(false);
    expect(codes(result)).toEqual(expect.arrayContaining(["missing-title", "missing-domain"]));
  });
  it("a broken relation is only a warning", () => {
    const result = normalizeAndValidate(
      [
        {
          id: "s",
          entries: [
            {
              id: "a",
              title: "A",
              summary: "s",
              domain: "d",
              integrations: [],
              relatedEntryIds: ["missing"],
            },
          ],
        },
      ],
      { manifestVersion: "0" },
    );
    expect(result.validation.ok).toBe(true);
    expect(result.validation.issues).toEqual([
      expect.objectContaining({ level: "warning", code: "broken-relation" }),
    ]);
  });
  it("converts a manifest to sources", () => {
    const sources = manifestToSources({
      schemaVersion: "1",
      contentVersion: "2026-07-14.1",
      generatedAt: "2026-07-14T00:00:00Z",
      catalogs: [{ id: "c", entries: [] }],
    });
    expect(sources).toHaveLength(1);
    expect(sources[0]).toMatchObject({ id: "c", version: "2026-07-14.1" });
  });
});

describe("NeuroLink acceptance: index and retrieve", () => {
  it("builds the exact, alias and relation maps", () => {
    const snapshot = snapshotOf([settingsSource]);
    expect(snapshot.exactIndex.has("multi step flow")).toBe(true);
    expect(snapshot.exactIndex.has("settings multi step flow")).toBe(true);
    expect([...(snapshot.aliasIndex.get("enable multi step flow") ?? [])]).toEqual([E1.id]);
    expect(snapshot.relationIndex.get(E1.id)).toContain("settings.progress-indicator");
  });
  it("an alias query is high confidence", () => {
    const selection = retrieve(
      snapshotOf([settingsSource, policiesSource]),
      makeRequest("enable multi step flow"),
      RESOLVED,
    );
    expect(selection.primary[0]?.id).toBe(E1.id);
    expect(selection.confidence).toBe("high");
  });
  it("finds a paraphrase lexically", () => {
    const selection = retrieve(
      snapshotOf([settingsSource, policiesSource]),
      makeRequest("which setting controls guided workflow steps"),
      RESOLVED,
    );
    expect(selection.primary.map((entry) => entry.id)).toContain(E1.id);
    expect(["medium", "low"]).toContain(selection.confidence);
    expect(selection.candidates[0]?.exact).toBe(false);
  });
  it("filtering happens before top-K", () => {
    const entry = (id: string, domain: string): KnowledgeEntryInput => ({
      id,
      title: id,
      summary: "shared summary words",
      domain,
      integrations: [],
    });
    const snapshot = snapshotOf([
      {
        id: "s",
        entries: [
          entry("a.blocked-one", "blocked"),
          entry("b.blocked-two", "blocked"),
          entry("z.allowed", "ok"),
        ],
      },
    ]);
    const selection = retrieve(
      snapshot,
      makeRequest("shared summary words"),
      { ...RESOLVED, candidateLimit: 1, resultLimit: 1 },
      ["blocked"],
    );
    expect(selection.primary[0]?.id).toBe("z.allowed");
    expect(selection.candidateCount).toBe(1);
  });
  it("a title phrase is high confidence", () => {
    const selection = retrieve(
      snapshotOf([settingsSource, policiesSource]),
      makeRequest("what policy types exist"),
      RESOLVED,
    );
    expect(selection.primary[0]?.id).toBe(E3.id);
    expect(selection.confidence).toBe("high");
  });
  it("a nine-token alias matches", () => {
    const alias = "cash on delivery payment method is missing from checkout";
    const snapshot = snapshotOf([
      {
        id: "s",
        entries: [
          {
            id: "checkout.cod-visibility",
            title: "COD Visibility",
            summary: "s",
            domain: "checkout",
            integrations: [],
            aliases: [alias],
          },
        ],
      },
    ]);
    const selection = retrieve(snapshot, makeRequest(alias), RESOLVED);
    expect(selection.primary[0]?.id).toBe("checkout.cod-visibility");
    expect(selection.candidates[0]?.alias).toBe(true);
    expect(selection.confidence).toBe("high");
  });
  it("an entry bound to an integration is excluded when the turn enables another", () => {
    const selection = retrieve(
      snapshotOf([settingsSource]),
      makeRequest("multi step flow", ["integration-b"]),
      RESOLVED,
    );
    expect(selection.primary.map((entry) => entry.id)).not.toContain(E1.id);
  });
  it("an entry bound to an integration is excluded when the turn enables none", () => {
    const selection = retrieve(snapshotOf([settingsSource]), makeRequest("multi step flow", []), RESOLVED);
    expect(selection.primary.map((entry) => entry.id)).not.toContain(E1.id);
  });
  it("unbound entries need no integration", () => {
    const selection = retrieve(snapshotOf([policiesSource]), makeRequest("policy types", []), RESOLVED);
    expect(selection.primary.map((entry) => entry.id)).toContain(E3.id);
  });
  it("expands one hop of relations", () => {
    const selection = retrieve(
      snapshotOf([settingsSource, policiesSource]),
      makeRequest("multi step flow"),
      RESOLVED,
    );
    expect(selection.primary[0]?.id).toBe(E1.id);
    expect(selection.expanded.map((entry) => entry.id)).toContain("settings.progress-indicator");
  });
  it("a blocked domain is never retrieved", () => {
    const selection = retrieve(snapshotOf([policiesSource]), makeRequest("policy types"), RESOLVED, [
      "access-policies",
    ]);
    expect(selection.primary.map((entry) => entry.id)).not.toContain(E3.id);
  });
  it("no match gives no selection and confidence none", () => {
    const selection = retrieve(
      snapshotOf([settingsSource, policiesSource]),
      makeRequest("xyzzy quux nonsense"),
      RESOLVED,
    );
    expect(selection.candidateCount).toBe(0);
    expect(selection.confidence).toBe("none");
  });
  it("a single weak candidate is low confidence", () => {
    const snapshot = snapshotOf([
      {
        id: "s",
        entries: [{ id: "weak", title: "Weak", summary: "singleweakterm", domain: "d", integrations: [] }],
      },
    ]);
    const selection = retrieve(snapshot, makeRequest("singleweakterm"), RESOLVED);
    expect(selection.candidates).toHaveLength(1);
    expect(selection.candidates[0]).toMatchObject({ exact: false, alias: false });
    expect(selection.confidence).toBe("low");
  });
});

describe("NeuroLink acceptance: assemble", () => {
  const selection = () =>
    retrieve(snapshotOf([settingsSource, policiesSource]), makeRequest("multi step flow"), RESOLVED);
  it("renders entries with citations", () => {
    const context = assembleKnowledgeContext(selection(), { maxTokens: 4000, includeCitations: true });
    expect(context.assembledContext).toContain("<knowledge_context>");
    expect(context.assembledContext).toContain("[KB:settings.multi-step-flow@1]");
    expect(context.assembledContext).toContain("Multi-Step Flow");
    expect(context.contextTokens).toBeGreaterThan(0);
    expect(context.citations).toContainEqual({ id: E1.id, version: "1" });
  });
  it("a tiny budget truncates", () => {
    const context = assembleKnowledgeContext(selection(), { maxTokens: 40 });
    expect(context.truncated).toBe(true);
    expect(context.assembledContext).toBe("");
    expect(context.citations).toEqual([]);
  });
  it("citations can be turned off", () => {
    const context = assembleKnowledgeContext(selection(), { includeCitations: false });
    expect(context.assembledContext).not.toContain("[KB:");
    expect(context.citations.length).toBeGreaterThan(0);
  });
});

describe("NeuroLink acceptance: engine", () => {
  it("a disabled engine grounds nothing", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: false, sources: [settingsSource] });
    const outcome = await engine.ground({ query: "multi step flow" });
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.selectedIds).toEqual([]);
  });
  it("grounds a turn", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [settingsSource, policiesSource] });
    const outcome = await engine.ground({
      query: "enable multi step flow",
      scope: { enabledIntegrations: ["integration-a"] },
    });
    expect(outcome.ephemeralContext?.content).toContain("Multi-Step Flow");
    expect(outcome.ephemeralContext?.kind).toBe("knowledge");
    expect(outcome.metadata.selectedIds).toContain(E1.id);
    expect(outcome.metadata.confidence).toBe("high");
  });
  it("times out while the index is not ready", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [settingsSource], timeoutMs: 5 });
    engine.ready = () => new Promise<void>(() => {});
    const outcome = await engine.ground({ query: "multi step flow" });
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toContain("timed out");
  });
});

describe("NeuroLink acceptance: cache", () => {
  const keyOf = (sources: unknown) =>
    buildKnowledgeIndexCacheKey(normalizeSources(sources, { manifestVersion: "0" }).groups);
  const entry = (id: string, body = ""): KnowledgeEntryInput => ({
    id,
    title: id,
    summary: "s",
    domain: "d",
    integrations: [],
    body,
  });
  it("percent-encoding in the cache key prevents delimiter collisions", () => {
    expect(keyOf([{ id: "a:b", version: "c", entries: [entry("x")] }])).not.toBe(
      keyOf([{ id: "a", version: "b:c", entries: [entry("x")] }]),
    );
  });
  it("a body change changes the key", () => {
    expect(keyOf([{ id: "s", entries: [entry("x", "one")] }])).not.toBe(
      keyOf([{ id: "s", entries: [entry("x", "two")] }]),
    );
  });
  it("entry order does not change the key", () => {
    expect(keyOf([{ id: "s", entries: [entry("x"), entry("y")] }])).toBe(
      keyOf([{ id: "s", entries: [entry("y"), entry("x")] }]),
    );
  });
  it("the LRU keeps touched snapshots and evicts the oldest", async () => {
    const sourceNumber = (index: number) => [{ id: `source-${index}`, entries: [entry(`entry-${index}`)] }];
    const first: unknown[] = [];
    for (let index = 0; index < 32; index++)
      first.push((await getOrBuildKnowledgeIndexSnapshot(sourceNumber(index))).snapshot);
    // Touch #0, then add #32: #1 (now the least recently used) is evicted, #0 survives.
    expect((await getOrBuildKnowledgeIndexSnapshot(sourceNumber(0))).snapshot).toBe(first[0]);
    await getOrBuildKnowledgeIndexSnapshot(sourceNumber(32));
    expect((await getOrBuildKnowledgeIndexSnapshot(sourceNumber(0))).snapshot).toBe(first[0]);
    const rebuilt = (await getOrBuildKnowledgeIndexSnapshot(sourceNumber(1))).snapshot;
    expect(rebuilt).not.toBe(first[1]);
    expect(rebuilt?.entryCount).toBe(1);
  });
});
