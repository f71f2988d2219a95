/**
 * Documented limits (checklist rows 9-11; src/knowledge/defaults.ts): each one exceeded gives either a validation
 * issue naming the place (`limit-exceeded`), or a bounded outcome: the query is cut to MAX_QUERY_CHARS code units
 * and MAX_QUERY_TOKENS tokens, tokens to MAX_TOKEN_LENGTH code units, and the turn still succeeds.
 */
import { afterAll, describe, expect, it } from "vitest";
import {
  clearKnowledgeIndexCache,
  type KnowledgeEntryInput,
  KnowledgeGroundingEngine,
  MAX_ALIASES_PER_ENTRY,
  MAX_BODY_CHARS,
  MAX_ENTRIES,
  MAX_FIELD_CHARS,
  MAX_KEYWORDS_PER_ENTRY,
  MAX_QUERY_CHARS,
  MAX_QUERY_TOKENS,
  MAX_RELATIONS_PER_ENTRY,
  MAX_TOKEN_LENGTH,
  normalizeAndValidate,
} from "../../src/index.js";
import { MAX_PASSAGE_SCAN_CHARS } from "../../src/knowledge/defaults.js";

afterAll(() => clearKnowledgeIndexCache());

const base: KnowledgeEntryInput = {
  id: "e",
  title: "Title",
  summary: "Summary",
  domain: "d",
  integrations: [],
};
const many = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, index) => `${prefix} ${index}`);

function issuesOf(entries: KnowledgeEntryInput[]) {
  return normalizeAndValidate([{ id: "kb", entries }], { manifestVersion: "1" }).validation;
}

describe("limits at validation", () => {
  it.each([
    ["aliases", { aliases: many(MAX_ALIASES_PER_ENTRY + 1, "alias") }],
    ["keywords", { keywords: many(MAX_KEYWORDS_PER_ENTRY + 1, "keyword") }],
    [
      "relatedEntryIds",
      { relatedEntryIds: many(MAX_RELATIONS_PER_ENTRY + 1, "r").map((id) => id.replace(" ", "")) },
    ],
    ["body", { body: "x".repeat(MAX_BODY_CHARS + 1) }],
    ["title", { title: "t".repeat(MAX_FIELD_CHARS + 1) }],
    ["summary", { summary: "s".repeat(MAX_FIELD_CHARS + 1) }],
  ])("one over the %s cap is a limit-exceeded error at entries[0].%s", (field, override) => {
    const validation = issuesOf([{ ...base, ...override }]);
    expect(validation.ok).toBe(false);
    expect(validation.issues).toContainEqual(
      expect.objectContaining({
        level: "error",
        code: "limit-exceeded",
        path: `sources[0].entries[0].${field}`,
      }),
    );
    // Exactly at the cap is accepted.
    const atCap = Object.fromEntries(
      Object.entries(override).map(([key, value]) => [
        key,
        Array.isArray(value) ? value.slice(1) : (value as string).slice(1),
      ]),
    );
    const accepted = issuesOf([{ ...base, ...atCap }]);
    expect(accepted.issues.filter((issue) => issue.code === "limit-exceeded")).toEqual([]);
  });

  it("MAX_ENTRIES is at least 2,000,000; the cap itself is tested with a small stand-in value", () => {
    // Validating two million entries takes minutes on a loaded CI machine: entryLimit.test.ts checks the cap's
    // logic with MAX_ENTRIES mocked to 1,000, and `npm run bench -- --sizes 1000000` builds a million entries.
    expect(MAX_ENTRIES).toBeGreaterThanOrEqual(2_000_000);
  });
});

describe("limits at query time: bounded, never an error", () => {
  const target: KnowledgeEntryInput = {
    ...base,
    id: "target",
    title: "Zebra Crossing",
    summary: "Where to cross.",
  };
  const engine = () =>
    new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "kb", entries: [target, { ...base, id: "other", title: "Other" }] }],
      timeoutMs: 60_000,
    });

  it(`only the first MAX_QUERY_CHARS (${MAX_QUERY_CHARS}) code units of the query count`, async () => {
    const padding = "a ".repeat(MAX_QUERY_CHARS / 2);
    const outcome = await engine().ground({ query: `${padding}zebra crossing` });
    expect(outcome.metadata.failureReason).toBeUndefined();
    expect(outcome.metadata.selectedIds).toEqual([]);
    const within = await engine().ground({ query: `${"a ".repeat(100)}zebra crossing` });
    expect(within.metadata.selectedIds).toEqual(["target"]);
  });

  it(`only the first MAX_QUERY_TOKENS (${MAX_QUERY_TOKENS}) tokens are looked up as phrases`, async () => {
    const before = "a ".repeat(MAX_QUERY_TOKENS);
    const outcome = await engine().ground({ query: `${before}zebra crossing` });
    expect(outcome.metadata.failureReason).toBeUndefined();
    expect(outcome.metadata.selectedIds).toEqual([]);
    const justInside = await engine().ground({ query: `${"a ".repeat(MAX_QUERY_TOKENS - 2)}zebra crossing` });
    expect(justInside.metadata.selectedIds).toEqual(["target"]);
    expect(justInside.metadata.confidence).toBe("high");
  });

  it(`tokens longer than MAX_TOKEN_LENGTH (${MAX_TOKEN_LENGTH}) match on their first ${MAX_TOKEN_LENGTH} code units`, async () => {
    const long = "k".repeat(MAX_TOKEN_LENGTH);
    const searcher = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [
        {
          id: "kb",
          entries: [
            { ...base, id: "long", title: `${long}indexed`, summary: "s" },
            { ...base, id: "o", title: "Other" },
          ],
        },
      ],
      timeoutMs: 60_000,
    });
    const outcome = await searcher.ground({ query: `${long}anything else entirely` });
    expect(outcome.metadata.selectedIds).toEqual(["long"]);
  });
});

describe("passages of a 1 MB body: bounded scan, cached across turns", () => {
  it(`only the first MAX_PASSAGE_SCAN_CHARS (${MAX_PASSAGE_SCAN_CHARS}) characters are considered, once`, async () => {
    const paragraph =
      "Payout batches go to bank partners in windows. <b>Late</b> files are retried & reported.\n\n";
    const early = "The requeue command needs a second approver.\n\n";
    const late = "The zeppelin procedure is only described here, past the scanned part.\n\n";
    let body = paragraph.repeat(5) + early;
    while (body.length < MAX_BODY_CHARS - late.length - paragraph.length) body += paragraph;
    body += late;
    expect(body.length).toBeGreaterThan(MAX_BODY_CHARS - 200);
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [{ id: "kb", entries: [{ ...base, id: "big", title: "Payout batches", body }] }],
      context: { passages: "auto" },
      timeoutMs: 60_000,
    });
    const first = await engine.ground({ query: "payout batches requeue approver" });
    expect(first.metadata.failureReason).toBeUndefined();
    expect(first.retrieval?.excerptedIds).toEqual(["big"]);
    expect(first.ephemeralContext?.content).toContain("The requeue command needs a second approver.");
    // Within the default 4,000-token budget, with a marker after the excerpt (the body goes on).
    expect(first.metadata.contextTokens).toBeLessThanOrEqual(4000);
    expect(first.ephemeralContext?.content).toMatch(/\n\[…\]\n<\/knowledge_context>$/);
    // Text past the scanned part is never searched.
    const beyond = await engine.ground({ query: "payout batches zeppelin" });
    expect(beyond.ephemeralContext?.content).not.toContain("zeppelin");
    // Later turns reuse the cached passage index: generous bound for the DoS case (the first turn scans).
    const started = performance.now();
    for (let turn = 0; turn < 20; turn++) await engine.ground({ query: `payout batches requeue ${turn}` });
    expect((performance.now() - started) / 20).toBeLessThan(100);
  });
});
